public import FoundationEssentials

/// A backend that checks who someone is: an in-memory table, Linux PAM, a users file, a directory service.
///
/// ## The contract
/// An implementation must honour all of this; ``AuthenticationTesting``'s `ProviderConformance` checks it,
/// and every provider in this package runs that suite.
///
/// - ``authenticate(_:)`` asks for what it needs (a password, a code) through
///   ``AuthRequest/conversation``, and answers with an ``AuthOutcome``: a failed check is an answer
///   (``AuthOutcome/rejected(_:canonicalUsername:)``, ``AuthOutcome/notMine``), not an error.
/// - It throws only ``AuthError/cancelled`` or what the conversation threw. When the task is cancelled it
///   returns promptly, even if a call into a C library is still blocked: move that call off the
///   cooperative thread pool and stop waiting for it.
/// - An unknown user costs the same as a wrong password and is asked for a password all the same, so
///   neither the prompts nor the timing tell which names exist.
/// - No secret reaches an ``Identity``, a rejection, an `unavailable` reason, or a log.
/// - It is safe to call concurrently from many tasks.
///
/// The ``Gatekeeper`` validates the user name and password shapes before calling a provider, so a
/// provider may rely on ``AuthRequest/username`` passing ``Username/validate(_:)``.
public protocol AuthProvider: Sendable {
    /// A short, stable name for this backend (`"mock"`, `"pam"`, `"file"`), used in identities and audit records.
    var name: String { get }

    /// Checks who the person is.
    /// - Throws: ``AuthError/cancelled`` when the person or the task cancelled, or the error the
    ///   conversation threw.
    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome

    /// Ends whatever the backend keeps for `identity` (a session, a token). Best effort: failures are
    /// the provider's to log, and signing out locally always succeeds.
    func signOut(_ identity: Identity) async

    /// Whether `identity`, signed in earlier through this backend, still names an account that may sign
    /// in — asked without a password, before a remembered login is accepted. An account deleted, locked
    /// or expired since is refused. The default cannot tell, and so refuses every remembered login.
    func recheck(_ identity: Identity) async -> Recheck
}

extension AuthProvider {
    public func signOut(_ identity: Identity) async {}

    public func recheck(_ identity: Identity) async -> Recheck {
        .unverifiable
    }
}

/// The answer of ``AuthProvider/recheck(_:)``.
public enum Recheck: Sendable, Hashable {
    /// The account may still sign in; the identity as the backend sees it now (its groups may differ).
    case valid(Identity)
    /// The account may not: deleted (``AuthError/userNotFound``), locked, expired.
    case refused(AuthError)
    /// The backend could not answer now.
    case unavailable(reason: String)
    /// The backend cannot check an account without a password.
    case unverifiable
}

/// What a provider is asked to check. A struct, so fields can be added without breaking providers.
public struct AuthRequest: Sendable {
    /// The user name, already validated.
    public var username: String
    /// How to ask the person for a password or anything else.
    public var conversation: any Conversation
    /// The terminal the person is on, if any (PAM's `PAM_TTY`).
    public var terminal: String?
    /// The remote host the person connects from, if any (PAM's `PAM_RHOST`).
    public var remoteHost: String?
    /// The account of whoever asked for the login, if known: the user running a local tool (PAM's
    /// `PAM_RUSER`, as `sudo` sets it).
    public var requestingUser: String?

    public init(
        username: String,
        conversation: any Conversation,
        terminal: String? = nil,
        remoteHost: String? = nil,
        requestingUser: String? = nil
    ) {
        self.username = username
        self.conversation = conversation
        self.terminal = terminal
        self.remoteHost = remoteHost
        self.requestingUser = requestingUser
    }
}

/// A provider's answer. A failed check is an answer too, so a chain of providers can decide what to do
/// next, as PAM's stacking does. Each answer is one PAM return code (``pamResult``):
///
/// | answer | PAM return code |
/// |---|---|
/// | ``authenticated(_:)`` | `PAM_SUCCESS` |
/// | ``rejected(_:canonicalUsername:)`` with ``Rejection/wrongCredentials`` or ``Rejection/locked(until:)`` | `PAM_AUTH_ERR` |
/// | … ``Rejection/expiredAccount`` | `PAM_ACCT_EXPIRED` |
/// | … ``Rejection/passwordChangeRequired`` | `PAM_NEW_AUTHTOK_REQD` |
/// | … ``Rejection/tooManyTries`` | `PAM_MAXTRIES` |
/// | … ``Rejection/refusedByPolicy`` | `PAM_PERM_DENIED` |
/// | ``notMine`` | `PAM_USER_UNKNOWN` |
/// | ``unavailable(reason:)`` | `PAM_AUTHINFO_UNAVAIL` |
/// | ``ignored`` | `PAM_IGNORE` |
///
/// A locked account answers `PAM_AUTH_ERR`, as `pam_faillock` and `pam_unix` do; the unlock time, when
/// the backend knows it, is only for the person's message.
public enum AuthOutcome: Sendable, Hashable {
    /// The person is who they say they are.
    case authenticated(Identity)
    /// The backend knows the user and refused the login, for one of a closed set of reasons.
    ///
    /// `canonicalUsername` is the backend's own spelling of the account when it differs from the one
    /// typed (a case-insensitive directory, a PAM module that changed `PAM_USER`): failures are counted
    /// against it, so every spelling of one account shares one lockout.
    case rejected(Rejection, canonicalUsername: String? = nil)
    /// The backend does not know this user: another backend may.
    case notMine
    /// The backend itself failed (down, misconfigured); the reason is for people and logs, and holds no
    /// secret.
    case unavailable(reason: String)
    /// The provider does not apply to this login (a second factor for a user who has none): a chain
    /// goes on as if it were not there; alone, it admits nobody.
    case ignored

    /// The PAM return code this answer stands for.
    public var pamResult: PAMResult {
        switch self {
        case .authenticated: .success
        case .rejected(let rejection, _): rejection.pamResult
        case .notMine: .userUnknown
        case .unavailable: .authinfoUnavailable
        case .ignored: .ignore
        }
    }
}

/// Why a backend that knows the user refused a login.
public enum Rejection: Sendable, Hashable {
    /// The password (or code) is wrong.
    case wrongCredentials
    /// The account is locked, until the given time if the backend knows one.
    case locked(until: Date?)
    /// The account has expired.
    case expiredAccount
    /// The password has expired and must be changed first.
    case passwordChangeRequired
    /// The backend counted too many failed tries (PAM's `PAM_MAXTRIES`; no time to wait is known).
    case tooManyTries
    /// The backend's rules refuse this login (an access list, a time window, an account not activated).
    case refusedByPolicy

    /// The PAM return code of this refusal.
    public var pamResult: PAMResult {
        switch self {
        case .wrongCredentials, .locked: .authenticationError
        case .expiredAccount: .accountExpired
        case .passwordChangeRequired: .newAuthenticationTokenRequired
        case .tooManyTries: .maximumTries
        case .refusedByPolicy: .permissionDenied
        }
    }

    /// The error a caller gets for it.
    public var error: AuthError {
        switch self {
        case .wrongCredentials: .invalidCredentials
        case .locked(let until): .accountLocked(until: until)
        case .expiredAccount: .accountExpired
        case .passwordChangeRequired: .passwordChangeRequired
        case .tooManyTries: .tooManyAttempts(retryAfter: nil)
        case .refusedByPolicy: .refusedByPolicy
        }
    }
}

/// The PAM return codes a provider's answer maps to; `rawValue` is the name used in PAM's
/// `[value=action]` control syntax.
public enum PAMResult: String, Sendable, Hashable, CaseIterable {
    case success
    case authenticationError = "auth_err"
    case accountExpired = "acct_expired"
    case newAuthenticationTokenRequired = "new_authtok_reqd"
    case maximumTries = "maxtries"
    case permissionDenied = "perm_denied"
    case userUnknown = "user_unknown"
    case authinfoUnavailable = "authinfo_unavail"
    case ignore
}
