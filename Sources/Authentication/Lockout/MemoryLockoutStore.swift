import GatekeeperSupport

/// Failed logins counted in memory, for this process's life, under pam_faillock's rules
/// (``LockoutPolicy``). At most 10,000 names are tracked, so trying many names cannot grow it without
/// bound (names not locked out are forgotten first); names that match no account are counted like any
/// other, so the answers do not tell which names exist. It knows no system accounts, so no name gets
/// uid 0's exemption.
public final class MemoryLockoutStore: LockoutStore {
    private let table = Locked(FailureTable())
    private let clock: SessionClock

    /// - Parameter now: A clock to use instead of `ContinuousClock`, for tests that move time.
    public init(now: (@Sendable () -> ContinuousClock.Instant)? = nil) {
        clock = SessionClock(now)
    }

    public func status(of account: String, policy: LockoutPolicy) -> LockoutStatus {
        let now = clock.now()
        return table.withLock { $0.status(of: account, at: now, policy) }
    }

    public func recordFailure(of account: String, known: Bool, source: LoginSource, policy: LockoutPolicy)
        -> LockoutStatus
    {
        let now = clock.now()
        return table.withLock { $0.registerFailure(of: account, at: now, policy) }
    }

    public func recordSuccess(of account: String) {
        table.withLock { $0.clear(account) }
    }

    public func unlock(_ account: String) {
        table.withLock { $0.clear(account) }
    }
}

/// The times of recent failed logins per user name, in nanoseconds of a ``SessionClock``.
struct FailureTable {
    /// Bounds the memory an attacker can make the table use by trying many names.
    private static let capacity = 10_000
    private static let unit = Duration.nanoseconds(1)
    private var failures: [String: [Int64]] = [:]

    func status(of username: String, at now: Int64, _ policy: LockoutPolicy) -> LockoutStatus {
        policy.status(failures: failures[username] ?? [], now: now, unit: Self.unit)
    }

    /// Counts a failure, as pam_faillock's `write_tally`: failures outside the interval, or from before an
    /// unlock by time, stop counting; at most `deny` are kept, which is all the rules look at.
    mutating func registerFailure(of username: String, at now: Int64, _ policy: LockoutPolicy) -> LockoutStatus {
        if failures.count >= Self.capacity, failures[username] == nil { prune(at: now, policy) }
        var times = failures[username] ?? []
        let window = LockoutPolicy.count(policy.interval, Self.unit)
        if policy.status(failures: times, now: now, unit: Self.unit) == .unlockedByTime {
            times.removeAll()
        }
        times.removeAll { now &- $0 >= window }
        times.append(now)
        if times.count > max(policy.deny, 1) { times.removeFirst(times.count - max(policy.deny, 1)) }
        failures[username] = times
        return policy.status(failures: times, now: now, unit: Self.unit)
    }

    mutating func clear(_ username: String) {
        failures[username] = nil
    }

    private mutating func prune(at now: Int64, _ policy: LockoutPolicy) {
        failures = failures.filter { _, times in
            policy.status(failures: times, now: now, unit: Self.unit).isLocked
        }
        if failures.count >= Self.capacity { failures.removeAll(keepingCapacity: true) }
    }
}
