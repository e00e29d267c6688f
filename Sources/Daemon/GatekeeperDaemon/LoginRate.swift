import GatekeeperSupport

/// How fast one caller may start logins: a bucket of `perMinute` for each user other than root (a setuid
/// program's counted against the user who ran it, a subordinate uid's against its owner) and for each
/// origin of root's own programs (sshd's remote host), refilled at `perMinute` a minute — as sshd's
/// `PerSourcePenalties` bounds a source rather than its log. Every login the daemon takes is audited; this is
/// what keeps one user's loop of right passwords from filling the disk with the records.
struct LoginRate {
    enum Caller: Hashable {
        case user(UInt32)
        case origin(String)
    }

    let perMinute: Int
    private var buckets: [Caller: (tokens: Double, at: ContinuousClock.Instant)] = [:]
    /// Bounds the table: callers whose bucket is full again are forgotten when it grows past this.
    private static let tracked = 4096

    init(perMinute: Int) { self.perMinute = perMinute }

    /// Takes one login from `caller`'s bucket; `nil` when it may start, else how long until it may.
    mutating func take(_ caller: Caller, at now: ContinuousClock.Instant = .now) -> Duration? {
        let capacity = Double(perMinute)
        let perSecond = capacity / 60
        if buckets.count >= Self.tracked, buckets[caller] == nil {
            buckets = buckets.filter { _, bucket in
                bucket.tokens + perSecond * Self.seconds(bucket.at.duration(to: now)) < capacity
            }
        }
        var (tokens, at) = buckets[caller] ?? (capacity, now)
        tokens = min(capacity, tokens + perSecond * Self.seconds(at.duration(to: now)))
        guard tokens >= 1 else {
            buckets[caller] = (tokens, now)
            return .milliseconds(Int(((1 - tokens) / perSecond * 1000).rounded(.up)))
        }
        buckets[caller] = (tokens - 1, now)
        return nil
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return max(0, Double(seconds) + Double(attoseconds) / 1e18)
    }
}
