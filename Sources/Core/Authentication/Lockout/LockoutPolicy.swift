/// When failed logins lock an account, and for how long: pam_faillock's rules and option names.
///
/// An account is locked once `deny` failures fall within `interval` of the latest one; it unlocks
/// `unlockAfter` after that latest failure (or only when an administrator unlocks it, when `nil`).
/// Accounts of the system's uid 0 are never locked unless `evenDenyRoot`, and then for
/// `rootUnlockAfter`. A successful login starts the count again.
public struct LockoutPolicy: Sendable, Hashable {
    /// How many failures within ``interval`` lock the account (`deny`).
    public var deny: Int
    /// Failures further apart than this from the latest one no longer count (`fail_interval`).
    public var interval: Duration
    /// How long after its latest failure a locked account unlocks by itself; `nil` for only when an
    /// administrator unlocks it (`unlock_time=0`).
    public var unlockAfter: Duration?
    /// Whether accounts with uid 0 are locked too (`even_deny_root`).
    public var evenDenyRoot: Bool
    /// How long a uid 0 account stays locked, with ``evenDenyRoot`` (`root_unlock_time`).
    public var rootUnlockAfter: Duration?

    /// How long a uid 0 account stays locked, as ``init(deny:interval:unlockAfter:evenDenyRoot:rootUnlock:)``
    /// is told: as long as the others (pam_faillock's default), for a time, or until an administrator
    /// unlocks it.
    public enum RootUnlock: Sendable, Hashable {
        case asOthers
        case after(Duration)
        case never
    }

    /// - Parameters: as pam_faillock's options.
    public init(
        deny: Int = 5,
        interval: Duration = .seconds(15 * 60),
        unlockAfter: Duration? = .seconds(10 * 60),
        evenDenyRoot: Bool = false,
        rootUnlock: RootUnlock = .asOthers
    ) {
        self.deny = deny
        self.interval = interval
        self.unlockAfter = unlockAfter
        self.evenDenyRoot = evenDenyRoot
        switch rootUnlock {
        case .asOthers: rootUnlockAfter = unlockAfter
        case .after(let duration): rootUnlockAfter = duration
        case .never: rootUnlockAfter = nil
        }
    }

    /// The state of an account whose recorded failures happened at `failures`, at `now` — pam_faillock's
    /// `check_tally`.
    /// - Parameters:
    ///   - failures: When each recorded failure happened (on any clock, in whole `unit`s).
    ///   - now: The time now, on the same clock.
    ///   - unit: How long one step of that clock is.
    ///   - isAdministrator: Whether the account has uid 0.
    public func status(
        failures: some Sequence<Int64>,
        now: Int64,
        unit: Duration,
        isAdministrator: Bool = false
    ) -> LockoutStatus {
        if isAdministrator && !evenDenyRoot { return .open(failures: 0) }
        let times = Array(failures)
        guard let latest = times.max() else { return .open(failures: 0) }
        let window = Self.count(interval, unit)
        let counted = times.count(where: { latest &- $0 < window })
        guard deny > 0, counted >= deny else { return .open(failures: counted) }
        guard let unlock = isAdministrator ? rootUnlockAfter : unlockAfter, unlock > .zero else {
            return .locked(failures: counted, remaining: nil)
        }
        // Saturating: a damaged record from the far future locks for as long as it can, never wraps.
        let (sum, overflow) = latest.addingReportingOverflow(Self.count(unlock, unit))
        let until = overflow ? Int64.max : sum
        // As pam_faillock: unlocked only once the unlock time has strictly passed.
        guard until >= now else { return .unlockedByTime }
        return .locked(failures: counted, remaining: unit * Int(clamping: max(until - now, 1)))
    }

    /// `duration` in whole `unit`s, rounded up, saturating.
    public static func count(_ duration: Duration, _ unit: Duration) -> Int64 {
        guard duration > .zero else { return 0 }
        let ratio = duration / unit
        return ratio >= Double(Int64.max) ? .max : Int64(ratio.rounded(.up))
    }
}

/// Whether an account may try to sign in now.
public enum LockoutStatus: Sendable, Hashable {
    /// It may; `failures` recent failures count towards the lockout.
    case open(failures: Int)
    /// It is locked: for `remaining`, or until an administrator unlocks it when `nil`.
    case locked(failures: Int, remaining: Duration?)
    /// It was locked, and its unlock time has passed: it may, and its old failures no longer count
    /// (pam_faillock marks them invalid at the next failure).
    case unlockedByTime

    /// Whether a login is refused.
    public var isLocked: Bool {
        if case .locked = self { return true }
        return false
    }

    /// How many recent failures count.
    public var failures: Int {
        switch self {
        case .open(let failures), .locked(let failures, _): failures
        case .unlockedByTime: 0
        }
    }
}

/// Where a failed login came from, recorded with it as pam_faillock does: the remote host when there is
/// one, else the terminal, else the service.
public enum LoginSource: Sendable, Hashable {
    case remoteHost(String)
    case terminal(String)
    case service(String)

    /// The source of a login with these items.
    public init(remoteHost: String?, terminal: String?, service: String) {
        if let remoteHost, !remoteHost.isEmpty {
            self = .remoteHost(remoteHost)
        } else if let terminal, !terminal.isEmpty {
            self = .terminal(terminal)
        } else {
            self = .service(service)
        }
    }

    /// The source of a login from `origin`.
    public init(_ origin: LoginOrigin) {
        self.init(remoteHost: origin.remoteHost, terminal: origin.terminal, service: origin.service)
    }
}
