import Synchronization

/// Failed logins counted in memory, for this process's life; at most 10,000 accounts are tracked, so
/// trying many names cannot grow it without bound (accounts not locked out are forgotten first).
public final class MemoryLockoutStore: LockoutStore {
    private let table = Mutex(FailureTable())
    private let clock: SessionClock

    /// - Parameter now: A clock to use instead of `ContinuousClock`, for tests that move time.
    public init(now: (@Sendable () -> ContinuousClock.Instant)? = nil) {
        clock = SessionClock(now)
    }

    public func remainingLockout(of username: String) -> Duration? {
        let now = clock.now()
        return table.withLock { $0.lockout(of: username, at: now) }
    }

    public func recordFailure(of username: String, threshold: Int, duration: Duration) -> Bool {
        let now = clock.now()
        return table.withLock { $0.registerFailure(of: username, at: now, threshold: threshold, duration: duration) }
    }

    public func recordSuccess(of username: String) {
        table.withLock { $0.clear(username) }
    }
}

/// Consecutive failed logins per user name, and until when each is locked out.
struct FailureTable {
    private struct Record {
        var count = 0
        var lockedUntil: Int64?
    }

    /// Bounds the memory an attacker can make the table use by trying many names.
    private static let capacity = 10_000
    private var records: [String: Record] = [:]

    /// How long `username` is still locked out, if it is.
    func lockout(of username: String, at now: Int64) -> Duration? {
        guard let until = records[username]?.lockedUntil, until > now else { return nil }
        return .nanoseconds(until - now)
    }

    /// Counts a failure; returns `true` if it locked the user name out.
    mutating func registerFailure(of username: String, at now: Int64, threshold: Int, duration: Duration) -> Bool {
        if records.count >= Self.capacity, records[username] == nil { prune(at: now) }
        var record = records[username] ?? Record()
        if let until = record.lockedUntil, until <= now { record = Record() }
        record.count += 1
        let locked = record.count >= threshold
        if locked {
            record.count = 0
            record.lockedUntil = SessionClock.adding(now, SessionClock.nanoseconds(duration))
        }
        records[username] = record
        return locked
    }

    mutating func clear(_ username: String) {
        records[username] = nil
    }

    private mutating func prune(at now: Int64) {
        records = records.filter { _, record in record.lockedUntil.map { $0 > now } ?? false }
        if records.count >= Self.capacity { records.removeAll(keepingCapacity: true) }
    }
}
