public import Authentication
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// A backend that tells "its servers could not be reached" apart from every other failure: the only
/// case in which an offline cache may answer for it. A server's refusal — of a service account's bind,
/// of a search — is an answer (`unavailable` to the caller, a fault of the configuration), never offline.
public protocol ReachabilityReporting: AuthProvider {
    /// The login, as ``AuthProvider/authenticate(_:)``, with ``OnlineAnswer/unreachable(reason:)`` only
    /// when no server could be reached (connect or TLS failed, timed out, the server went away).
    func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer

    /// The login (``authenticateOnline(_:)``), with the account's standing as it was read *before* the password
    /// was checked. The cache saves a success under that standing's stamp, and not at all when the standing read
    /// after the answer says the password changed in between (``passwordUnchangedByLogin(before:after:)``): a
    /// reset while a login of the old password is in flight never lends the new password's stamp to the old
    /// one. By default ``standing(of:)``, then the login; a backend whose login reads the account anyway (a
    /// directory's search for the entry it binds to) answers from that read, at no further cost.
    func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin

    /// Everything that decides which accounts a login through this backend admits, and as whom — its
    /// servers, how it trusts them, where and how it looks accounts up, where their groups come from — and
    /// never a secret. The cache keeps one file for each scope, so that two configurations sharing a
    /// directory (a stack for admins only beside one for everyone) never admit each other's logins
    /// offline, and a configuration narrowed later starts a cache of its own.
    var offlineScope: String { get }

    /// The account check (``AuthProvider/recheck(_:)``), with ``OnlineRecheck/unreachable(reason:)`` only
    /// when no server could be reached: then an account the cache holds is vouched for by it.
    func recheckOnline(_ identity: Identity) async -> OnlineRecheck

    /// Whether an account's password is still the one cached when its stamp was `saved`, the stamp being
    /// `current` now. By default, when the two are equal; a backend whose stamps may change for other reasons
    /// (an entry's modification time, which a password policy moves at every failed bind) tells better.
    func passwordUnchanged(saved: String?, current: String?) -> Bool

    /// Whether the password is still the one a login checked, its stamp `before` when the login read the
    /// account and `after` once it answered. By default ``passwordUnchanged(saved:current:)``; a backend whose
    /// good bind itself moves the stamp (a policy clearing the failed binds it wrote into the entry) tells so.
    func passwordUnchangedByLogin(before: String?, after: String?) -> Bool

    /// The account's standing on the servers now, without a login: asked when a login is cached, and again
    /// while the servers are reachable, so that a reset, a lock or a deletion there ends the cached login
    /// before the servers are next out of reach. Unreachable servers answer ``AccountStanding/cannotTell``.
    func standing(of username: String) async -> AccountStanding

    /// ``standing(of:)`` with the account's groups now (``AccountStanding/current(stamp:groups:)``): what a check
    /// asks, so that a group the directory took the account out of stops admitting it offline at the check,
    /// as a reset password does. By default the standing alone, no groups told: the cached ones stay.
    func standingWithGroups(of username: String) async -> AccountStanding
}

extension ReachabilityReporting {
    /// The login as ``authenticateOnline(_:)`` answers it, no server reached being `unavailable`.
    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        switch try await authenticateOnline(request) {
        case .answered(let outcome): return outcome
        case .unreachable(let reason): return .unavailable(reason: reason)
        }
    }

    /// The account's standing first, then the login.
    public func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin {
        let before = await standing(of: request.username)
        return OnlineLogin(try await authenticateOnline(request), standingBefore: before)
    }

    /// The same stamp.
    public func passwordUnchanged(saved: String?, current: String?) -> Bool { saved == current }

    /// As a saved stamp is compared with a current one.
    public func passwordUnchangedByLogin(before: String?, after: String?) -> Bool {
        passwordUnchanged(saved: before, current: after)
    }

    /// The backend's own answer, never "unreachable": a backend that does not tell keeps the cache out of its
    /// account checks.
    public func recheckOnline(_ identity: Identity) async -> OnlineRecheck { .answered(await recheck(identity)) }

    /// Cannot tell: a backend that does not implement ``standing(of:)`` keeps its cached entries until
    /// their age or an online answer ends them.
    public func standing(of username: String) async -> AccountStanding { .cannotTell }

    /// The standing alone.
    public func standingWithGroups(of username: String) async -> AccountStanding { await standing(of: username) }
}

/// What a backend's servers say of an account now, asked with the service account's rights and without
/// its password: what keeps an offline cache true while the servers are reachable.
public enum AccountStanding: Sendable, Hashable {
    /// The account exists and may sign in. `stamp` is a value the servers change whenever its password
    /// is set, a reset included — a time such as ppolicy's `pwdChangedTime`, never anything derived from
    /// the password — or `nil` when they keep none that can be read. `groups`: the account's groups now, when
    /// the backend read them (``ReachabilityReporting/standingWithGroups(of:)``); `nil` otherwise.
    case current(stamp: String?, groups: Set<String>? = nil)
    /// The account is gone, locked, disabled, expired, or its password must be changed: no cached
    /// password may sign it in.
    case withdrawn(reason: String)
    /// No server could be asked, or it would not say.
    case cannotTell
}

/// The answer of ``ReachabilityReporting/recheckOnline(_:)``.
public enum OnlineRecheck: Sendable, Hashable {
    /// A server answered (or refused to).
    case answered(Recheck)
    /// No server could be reached.
    case unreachable(reason: String)
}

/// The answer of ``ReachabilityReporting/loginOnline(_:)``: the login's, and what the backend read of the
/// account before it checked the password.
public struct OnlineLogin: Sendable, Hashable {
    public var answer: OnlineAnswer
    /// The account's standing as read before the password was checked: for a directory, from the search that
    /// found the entry the password was bound to.
    public var standingBefore: AccountStanding
    /// For a success, the standing read again once the password was found right, searched afresh (a directory
    /// reads it on the connection the bind answered on, holding no other); `nil` when the backend did not read
    /// it, and the cache asks ``ReachabilityReporting/standing(of:)``.
    public var standingAfter: AccountStanding?

    public init(_ answer: OnlineAnswer, standingBefore: AccountStanding, standingAfter: AccountStanding? = nil) {
        self.answer = answer
        self.standingBefore = standingBefore
        self.standingAfter = standingAfter
    }
}

/// The answer of ``ReachabilityReporting/authenticateOnline(_:)``.
public enum OnlineAnswer: Sendable, Hashable {
    /// A server answered (or refused to): its answer, `unavailable` included.
    case answered(AuthOutcome)
    /// No server could be reached.
    case unreachable(reason: String)
}
