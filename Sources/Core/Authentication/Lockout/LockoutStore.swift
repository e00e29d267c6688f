/// Where a ``Gatekeeper`` counts failed logins per account and remembers who is locked out.
///
/// The gatekeeper's attempt ledger counts each attempt as its credential is handed to the backend, before
/// it is checked: ``beginAttempt(_:source:policy:)`` looks at the account's recent failures and, unless the
/// account is locked out, records the attempt as a failure, both under one lock — so however many guesses
/// arrive at once, from threads or processes, at most `deny` of them are ever checked. A success then
/// clears the count (``recordSuccess(of:)``: the account's, and the name's among names no look-up
/// recognised); an answer that proves the credential right otherwise takes the attempt back
/// (``withdraw(_:)``); anything else stands.
///
/// Accounts are counted by the backend's own spelling (``LockoutAccount/key``), never the typed one,
/// so every spelling of one account shares one lockout.
///
/// Counted attempts still being checked hold their slots: when they fill all `deny` of them, a new attempt
/// of the same process is not refused as locked for answers nobody has yet — ``beginAttempt(_:source:policy:)``
/// answers ``LockoutAttempt/waiting(_:)``, the ledger asks again as each settles (``settled(_:)``), for a
/// bounded time, and the tally is the same as if the attempts had come one after another.
///
/// Two stores ship: ``MemoryLockoutStore`` keeps the count in memory, for the life of a process; the
/// host-protection module's `FaillockStore` keeps it in files in pam_faillock's format, shared by every
/// process and by pam_faillock itself. A store must be safe to call from many tasks at once and must
/// fail closed: when it cannot tell whether an account is locked, or cannot record an attempt, it throws,
/// and the login is refused.
public protocol LockoutStore: Sendable {
    /// Whether `account` may try to sign in now.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the state cannot be read; the login is
    ///   then refused.
    func status(of account: LockoutAccount, policy: LockoutPolicy) throws(AuthError) -> LockoutStatus

    /// Counts an attempt on `account` before it is checked, under the account's lock: refused when the
    /// account is locked out (nothing is written), else recorded as a failure.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the attempt cannot be recorded (a full or
    ///   read-only file system): the login is refused rather than left to unlimited guessing.
    func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
        -> LockoutAttempt

    /// Takes back an attempt that was counted but never checked. A ticket whose record is gone (a success
    /// or an unlock cleared it meanwhile) changes nothing.
    func withdraw(_ ticket: LockoutTicket) throws(AuthError)

    /// The check of an attempt counted at its presentation is over, and its count stands (a failure) or a
    /// success cleared it: it no longer holds a slot that another attempt of this process waits for
    /// (``LockoutAttempt/waiting(_:)``). Nothing is written. A store that never answers `waiting` has nothing
    /// to do; one that wraps another passes it on, or the other's slots stay held.
    func settled(_ ticket: LockoutTicket)

    /// Counts a failed login for `account` after the fact: the backend answered for another spelling than
    /// the one the attempt was counted against.
    /// - Returns: The account's status after the failure.
    func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
        -> LockoutStatus

    /// A successful login for `account`: its count starts again, both as an account and as a name no
    /// look-up recognised (``LockoutAccount/known`` false), where the attempt may have been counted — but for
    /// the counts of this process's attempts still being checked, which stay (one that proves wrong is a
    /// failure after the success, as pam_faillock, counting once checked, would have it).
    func recordSuccess(of account: String) throws(AuthError)

    /// A successful login whose own attempt, counted at its presentation, is `ticket`: settled
    /// (``settled(_:)``) and cleared with the rest at once, so that nobody sees it as a failure between the two.
    /// By default one after the other.
    func recordSuccess(of account: String, settling ticket: LockoutTicket?) throws(AuthError)

    /// An administrator unlocks `account`: its failures are forgotten.
    func unlock(_ account: String) throws(AuthError)
}

extension LockoutStore {
    public func recordSuccess(of account: String, settling ticket: LockoutTicket?) throws(AuthError) {
        if let ticket { settled(ticket) }
        try recordSuccess(of: account)
    }

    /// Whether the account the backend spells `account` may try to sign in now.
    public func status(of account: String, policy: LockoutPolicy) throws(AuthError) -> LockoutStatus {
        try status(of: LockoutAccount(account), policy: policy)
    }
}

/// An account as the lockout counts it.
public struct LockoutAccount: Sendable, Hashable {
    /// The backend's own spelling of the account, or the typed name when no backend can tell.
    public var key: String
    /// Whether a backend recognises the name. Names that match no account must not let anyone fill
    /// memory or disk, nor be written down (a password typed into the name prompt): they are counted
    /// alike, within a bound, under a keyed hash.
    public var known: Bool
    /// Whether it is the system's uid 0, as a backend whose accounts are system accounts says
    /// (``AccountLookup/known(canonicalName:isSystemAdministrator:)``); exempt unless `even_deny_root`.
    public var isSystemAdministrator: Bool

    public init(_ key: String, known: Bool = true, isSystemAdministrator: Bool = false) {
        self.key = key
        self.known = known
        self.isSystemAdministrator = isSystemAdministrator
    }

    /// What a name no look-up recognised is counted under in memory: the name with its case and its
    /// fullwidth forms folded, so that a backend matching names loosely (`ALICE`, `Alice` and `ａｌｉｃｅ` as
    /// alice) but unable to say so beforehand (a checkpassword program, a helper) still gets `deny` guesses
    /// per account, not per spelling. (The file store folds further, with Unicode's NFKC case fold.) Never
    /// used for an account's own file, which keeps its exact name.
    public var bucketKey: String {
        let scalars = key.unicodeScalars.map { scalar -> Unicode.Scalar in
            switch scalar.value {
            case 0xFF01...0xFF5E: Unicode.Scalar(scalar.value - 0xFEE0)!
            case 0x3000: " "
            default: scalar
            }
        }
        return String(String.UnicodeScalarView(scalars)).lowercased()
    }

    /// The account a look-up found for the typed `username`.
    public init(_ username: String, lookup: AccountLookup) {
        switch lookup {
        case .known(let canonical, let administrator):
            self.init(canonical, known: true, isSystemAdministrator: administrator)
        case .unknown, .cannotTell:
            self.init(username, known: false)
        }
    }
}

/// The answer of ``LockoutStore/beginAttempt(_:source:policy:)``.
public enum LockoutAttempt: Sendable, Hashable {
    /// The account is locked out; nothing was recorded, and nothing may be checked.
    case refused(LockoutStatus)
    /// The attempt is counted as a failure until a success clears it or it is withdrawn; `status` is the
    /// account's state with it counted.
    case counted(LockoutTicket, status: LockoutStatus)
    /// Every failure the account may have is counted, and some of them are attempts this process is still
    /// checking: nothing was recorded. The attempt waits and asks again, for none of those may be a failure
    /// (one right password clears them all); once they settle as failures the account is locked and the
    /// answer is ``refused(_:)``. `status` counts them. Attempts another process is checking count as the
    /// failures pam_faillock takes them for.
    case waiting(LockoutStatus)
}

/// An attempt counted before its check, to take back if it is never checked.
public struct LockoutTicket: Sendable, Hashable {
    public var account: LockoutAccount
    /// When it was counted, in the store's unit.
    public var time: Int64
    /// Tells it from other attempts counted at the same time.
    public var tag: UInt16

    public init(account: LockoutAccount, time: Int64, tag: UInt16) {
        self.account = account
        self.time = time
        self.tag = tag
    }
}
