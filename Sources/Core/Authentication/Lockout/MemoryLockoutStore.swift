import GatekeeperSupport

/// Failed logins counted in memory, for this process's life, under pam_faillock's rules
/// (``LockoutPolicy``). At most 10,000 names are tracked, so trying many names cannot grow it without
/// bound (names not locked out are forgotten first); names that match no account are counted like any
/// other, so the answers do not tell which names exist. Only an account a backend marks as the system's
/// uid 0 (``LockoutAccount/isSystemAdministrator``) gets pam_faillock's exemption.
public final class MemoryLockoutStore: LockoutStore {
    private let table = Locked(FailureTable())
    private let clock: SessionClock

    /// - Parameter now: A clock to use instead of `ContinuousClock`, for tests that move time.
    public init(now: (@Sendable () -> ContinuousClock.Instant)? = nil) {
        clock = SessionClock(now)
    }

    public func status(of account: LockoutAccount, policy: LockoutPolicy) -> LockoutStatus {
        let now = clock.now()
        return table.withLock { $0.status(of: account, at: now, policy) }
    }

    /// Whether the account spelled `account` may try to sign in now.
    public func status(of account: String, policy: LockoutPolicy) -> LockoutStatus {
        status(of: LockoutAccount(account), policy: policy)
    }

    public func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) -> LockoutAttempt {
        let now = clock.now()
        return table.withLock { table in
            let before = table.status(of: account, at: now, policy, counting: .all)
            if before.isLocked {
                let settled = table.status(of: account, at: now, policy)
                return settled.isLocked ? .refused(settled) : .waiting(before)
            }
            let (tag, status) = table.registerFailure(of: account, at: now, policy, checking: true)
            return .counted(LockoutTicket(account: account, time: now, tag: tag), status: status)
        }
    }

    public func withdraw(_ ticket: LockoutTicket) {
        table.withLock { $0.withdraw(ticket) }
    }

    public func settled(_ ticket: LockoutTicket) {
        table.withLock { $0.settled(ticket) }
    }

    public func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy)
        -> LockoutStatus
    {
        let now = clock.now()
        return table.withLock { $0.registerFailure(of: account, at: now, policy, checking: false).status }
    }

    public func recordSuccess(of account: String) {
        table.withLock { $0.clear(account, keepingInFlight: true) }
    }

    public func recordSuccess(of account: String, settling ticket: LockoutTicket?) {
        table.withLock { table in
            if let ticket { table.settled(ticket) }
            table.clear(account, keepingInFlight: true)
        }
    }

    public func unlock(_ account: String) {
        table.withLock { $0.clear(account, keepingInFlight: false) }
    }
}

/// The times of recent failed logins per account, in nanoseconds of a ``SessionClock``, each with the tag
/// of the attempt that counted it.
struct FailureTable {
    /// Bounds the memory an attacker can make the table use by trying many names.
    private static let capacity = 10_000
    private static let unit = Duration.nanoseconds(1)
    private var failures: [String: [(time: Int64, tag: UInt16)]] = [:]
    private var lastTag: UInt16 = 0
    /// The failures that are attempts still being checked, by account key, time and tag.
    private var checking: Set<Checking> = []

    private struct Checking: Hashable {
        var key: String
        var time: Int64
        var tag: UInt16
    }

    /// Which failures a status counts: all of them, or only those whose check is over.
    enum Counting { case all, settled }

    /// An account by its name; a name no look-up recognised by its folded form, apart from every account
    /// (a NUL, which no valid name holds, before it), as the file store keeps such names in buckets of
    /// their own.
    private static func key(_ account: LockoutAccount) -> String {
        account.known ? account.key : "\u{0}" + account.bucketKey
    }

    func status(of account: LockoutAccount, at now: Int64, _ policy: LockoutPolicy, counting: Counting = .settled)
        -> LockoutStatus
    {
        let key = Self.key(account)
        var times = failures[key] ?? []
        if counting == .settled, !checking.isEmpty {
            times.removeAll { checking.contains(Checking(key: key, time: $0.time, tag: $0.tag)) }
        }
        return policy.status(
            failures: times.map(\.time), now: now, unit: Self.unit, isAdministrator: account.isSystemAdministrator)
    }

    /// Counts a failure, as pam_faillock's `write_tally`: failures outside the interval, or from before an
    /// unlock by time, stop counting; at most `deny` are kept, which is all the rules look at.
    /// The failure of an attempt still being checked (`checking`) holds its slot until ``settled(_:)``.
    mutating func registerFailure(of account: LockoutAccount, at now: Int64, _ policy: LockoutPolicy, checking: Bool)
        -> (tag: UInt16, status: LockoutStatus)
    {
        let key = Self.key(account)
        if failures.count >= Self.capacity, failures[key] == nil { prune(at: now, policy) }
        var times = failures[key] ?? []
        let window = LockoutPolicy.count(policy.interval, Self.unit)
        if status(of: account, at: now, policy, counting: .all) == .unlockedByTime { times.removeAll() }
        times.removeAll { now &- $0.time >= window }
        lastTag &+= 1
        times.append((now, lastTag))
        if times.count > max(policy.deny, 1) { times.removeFirst(times.count - max(policy.deny, 1)) }
        failures[key] = times
        if checking { self.checking.insert(Checking(key: key, time: now, tag: lastTag)) }
        return (lastTag, status(of: account, at: now, policy, counting: .all))
    }

    mutating func withdraw(_ ticket: LockoutTicket) {
        failures[Self.key(ticket.account)]?.removeAll { $0.time == ticket.time && $0.tag == ticket.tag }
        settled(ticket)
    }

    mutating func settled(_ ticket: LockoutTicket) {
        checking.remove(Checking(key: Self.key(ticket.account), time: ticket.time, tag: ticket.tag))
    }

    /// Forgets `username`'s failures, as an account and as a name no look-up recognised — but for those of
    /// attempts still being checked, when `keepingInFlight`.
    mutating func clear(_ username: String, keepingInFlight: Bool) {
        for key in [username, Self.key(LockoutAccount(username, known: false))] {
            let kept =
                keepingInFlight
                ? (failures[key] ?? []).filter { checking.contains(Checking(key: key, time: $0.time, tag: $0.tag)) }
                : []
            failures[key] = kept.isEmpty ? nil : kept
        }
    }

    private mutating func prune(at now: Int64, _ policy: LockoutPolicy) {
        failures = failures.filter { key, times in
            policy.status(failures: times.map(\.time), now: now, unit: Self.unit).isLocked
                || times.contains { checking.contains(Checking(key: key, time: $0.time, tag: $0.tag)) }
        }
        if failures.count >= Self.capacity { failures.removeAll(keepingCapacity: true) }
    }
}
