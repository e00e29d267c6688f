public import FoundationEssentials

/// A backend that checks who someone is: an in-memory table, Linux PAM, a users file, a directory service.
///
/// ## The contract
/// An implementation must honour all of this; `AuthenticationTesting`'s `ProviderConformance` checks it,
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

    /// What the backend knows of `username` before anything is asked: whether it names an account, and
    /// that account's own spelling — the key its failed logins are counted against, so that `ALICE` and
    /// `alice` share one lockout when the backend matches both to one account. Asked once per attempt,
    /// before the lockout is consulted and before any password; it must not ask the person anything, and
    /// must cost about the same whether or not the account exists. The default cannot tell.
    func lookUpAccount(_ username: String) async -> AccountLookup

    /// Whether a success of this backend says *who* someone is (a password, a directory bind), rather than
    /// confirming an identity another entry established (a one-time code, a hardware token). In a stack,
    /// the identity is the one the first successful entry that establishes an identity gave; later
    /// factors must answer for the same user and add nothing to it. The default is `true`.
    var establishesIdentity: Bool { get }

    /// Which backend of its kind this is, for people reading a trace (`--explain`) or a profile: the
    /// issuer of an OpenID Connect provider, a directory's server. Never a secret; `nil` by default.
    var detail: String? { get }

    /// Whether this backend keeps passwords it can change (``changePassword(_:)``). The default is `false`.
    var changesPasswords: Bool { get }

    /// One pass of a password change (``PasswordChangeRequest/Pass``), as a PAM module's `pam_sm_chauthtok`
    /// is called: the preliminary check changes nothing; the update changes the password atomically,
    /// so that a change cancelled or failed at any point leaves the old password working. Ask the
    /// current and new passwords with ``PasswordPrompt``'s prompts. A backend that does not know the
    /// account answers ``PasswordChangeOutcome/notMine``; the default, for backends without passwords,
    /// answers ``PasswordChangeOutcome/ignored``. Run both passes with
    /// ``changePassword(of:conversation:expiredOnly:origin:)``.
    /// - Throws: ``AuthError/cancelled``, or the conversation's error.
    func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome

    /// ``authenticate(_:)``, with the trace of how a stack decided it (``ProviderChain/Trace``): which
    /// entry answered what, and which one gave the identity. The default, for a backend that is no
    /// stack, answers ``authenticate(_:)``'s outcome with no trace; a provider that wraps a stack
    /// forwards the stack's.
    func authenticateWithTrace(_ request: AuthRequest) async throws(AuthError) -> Traced<AuthOutcome>

    /// ``changePassword(_:)``, with the trace of how a stack decided the pass.
    func changePasswordWithTrace(_ request: PasswordChangeRequest) async throws(AuthError)
        -> Traced<PasswordChangeOutcome>
}

/// An outcome, and the trace of the stack that decided it (`nil` when no stack did).
public struct Traced<Outcome: Sendable>: Sendable {
    public var outcome: Outcome
    public var trace: ProviderChain.Trace?
    /// For a gatekeeper's login: when the person's last answer was handed to the backend, where the fail delay
    /// of a refusal runs from (``Gatekeeper/delayRefusal(answeredAt:)``); `nil` when nothing was handed over.
    public var answeredAt: ContinuousClock.Instant?

    public init(_ outcome: Outcome, trace: ProviderChain.Trace? = nil, answeredAt: ContinuousClock.Instant? = nil) {
        self.outcome = outcome
        self.trace = trace
        self.answeredAt = answeredAt
    }
}

extension AuthProvider {
    public func signOut(_ identity: Identity) async {}

    public func recheck(_ identity: Identity) async -> Recheck {
        .unverifiable
    }

    public func lookUpAccount(_ username: String) async -> AccountLookup { .cannotTell }

    public var establishesIdentity: Bool { true }

    public var detail: String? { nil }

    public var changesPasswords: Bool { false }

    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        .ignored
    }

    public func authenticateWithTrace(_ request: AuthRequest) async throws(AuthError) -> Traced<AuthOutcome> {
        Traced(try await authenticate(request))
    }

    public func changePasswordWithTrace(_ request: PasswordChangeRequest) async throws(AuthError)
        -> Traced<PasswordChangeOutcome>
    {
        Traced(try await changePassword(request))
    }
}

/// The answer of ``AuthProvider/lookUpAccount(_:)``.
public enum AccountLookup: Sendable, Hashable {
    /// The backend has this account. `canonicalName` is its own spelling of it (the entry's `uid`, the
    /// system database's `pw_name`, the users file's line). `isSystemAdministrator` is set only by a
    /// backend whose accounts are the system's own (PAM) for uid 0, which pam_faillock exempts from
    /// the lockout unless `even_deny_root` is set.
    case known(canonicalName: String, isSystemAdministrator: Bool = false)
    /// The backend has no such account.
    case unknown
    /// The backend cannot tell without checking a password (a helper program, a PAM stack of unknown
    /// modules), or cannot be reached now.
    case cannotTell
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
public struct AuthRequest: LoginOriginCarrying, Sendable {
    /// The user name, already validated.
    public var username: String
    /// How to ask the person for a password or anything else.
    public var conversation: any Conversation
    /// Where the login comes from: service, terminal, remote host, requesting user.
    public var origin: LoginOrigin
    /// Whether the person may be asked for a new password when theirs has expired (PAM's
    /// `pam_chauthtok` with `PAM_CHANGE_EXPIRED_AUTHTOK`, as `login` and `sudo` call it). A provider that
    /// finds the password right but expired then answers ``AuthOutcome/authenticated(_:)`` with
    /// ``Identity/mustChangePassword`` set, and changes nothing: only once the whole stack has admitted
    /// the person does the ``Gatekeeper`` change the password, through the stack, before it admits. When
    /// it is `false` (the default, for a caller that would not act on the mark), an expired password is
    /// ``Rejection/passwordChangeRequired``. The ``Gatekeeper`` always sets it, and changes the password or
    /// refuses the login as ``Gatekeeper/Configuration/Login/changesExpiredPasswords`` says.
    public var mayChangeExpiredPassword: Bool
    /// Whether the caller reads the identity's groups. When it does not (a tool that checks no group and
    /// hands them to nobody), a provider whose groups cost a lookup of their own — PAM's, from the name
    /// service — may leave it to the first read (``Identity/init(username:displayName:provider:attributes:groupsLookedUpBy:)``)
    /// instead of making it on its own thread before it answers. The groups read are the same either way.
    public var readsGroups: Bool

    public init(
        username: String,
        conversation: any Conversation,
        origin: LoginOrigin,
        mayChangeExpiredPassword: Bool = false,
        readsGroups: Bool = true
    ) {
        self.username = username
        self.conversation = conversation
        self.origin = origin
        self.mayChangeExpiredPassword = mayChangeExpiredPassword
        self.readsGroups = readsGroups
    }

    /// A request whose origin is given field by field (the service, the default `gatekeeper`).
    public init(
        username: String,
        conversation: any Conversation,
        terminal: String? = nil,
        remoteHost: String? = nil,
        requestingUser: String? = nil,
        mayChangeExpiredPassword: Bool = false,
        readsGroups: Bool = true
    ) {
        self.init(
            username: username, conversation: conversation,
            origin: LoginOrigin(terminal: terminal, remoteHost: remoteHost, requestingUser: requestingUser),
            mayChangeExpiredPassword: mayChangeExpiredPassword, readsGroups: readsGroups)
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
/// | … ``Rejection/refusedByPolicy`` or ``Rejection/activationRequired`` | `PAM_PERM_DENIED` |
/// | ``notMine`` | `PAM_USER_UNKNOWN` |
/// | ``unavailable(reason:)`` | `PAM_AUTHINFO_UNAVAIL` |
/// | ``ignored`` | `PAM_IGNORE` |
/// | ``failed(_:reason:)`` | the code it names: `PAM_CRED_ERR`, `PAM_CONV_ERR`, `PAM_ABORT`, … |
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
    /// The backend failed with another of PAM's return codes (a system, conversation or credential
    /// error, `try_again`, `abort`, `incomplete`, …): a stack's controls can act on the code; alone, the
    /// login fails and is not counted as a wrong password. Make one with
    /// ``AuthOutcome/init(pamResult:reason:canonicalUsername:)``, which gives a code that has an answer of
    /// its own (`auth_err`, `user_unknown`, …) that answer.
    /// The reason holds no secret.
    case failed(PAMResult, reason: String)

    /// The PAM return code this answer stands for.
    public var pamResult: PAMResult {
        switch self {
        case .authenticated: .success
        case .rejected(let rejection, _): rejection.pamResult
        case .notMine: .userUnknown
        case .unavailable: .authinfoUnavailable
        case .ignored: .ignore
        // A code with an answer of its own is that answer (``init(pamResult:reason:)``); `success` is no failure.
        case .failed(let result, _): result == .success ? .permissionDenied : result
        }
    }

    /// The answer that stands for `result`, as a provider or a stack reports one PAM return code:
    /// `auth_err` is a wrong credential, `user_unknown` ``notMine``, `authinfo_unavail`
    /// ``unavailable(reason:)``, `ignore` ``ignored``, the refusals their ``Rejection``, and every other
    /// code ``failed(_:reason:)``. `success` is no answer without an identity: it is refused by policy.
    public init(pamResult result: PAMResult, reason: String, canonicalUsername: String? = nil) {
        switch result {
        case .success, .permissionDenied: self = .rejected(.refusedByPolicy, canonicalUsername: canonicalUsername)
        case .authenticationError: self = .rejected(.wrongCredentials, canonicalUsername: canonicalUsername)
        case .accountExpired: self = .rejected(.expiredAccount, canonicalUsername: canonicalUsername)
        case .newAuthenticationTokenRequired:
            self = .rejected(.passwordChangeRequired, canonicalUsername: canonicalUsername)
        case .maximumTries: self = .rejected(.tooManyTries, canonicalUsername: canonicalUsername)
        case .userUnknown: self = .notMine
        case .authinfoUnavailable: self = .unavailable(reason: reason)
        case .ignore: self = .ignored
        default: self = .failed(result, reason: reason)
        }
    }

    /// The answer with a ``failed(_:reason:)`` that names a code with an answer of its own made that
    /// answer, so that no backend can report a wrong password the lockout does not count.
    public var normalized: AuthOutcome {
        guard case .failed(let result, let reason) = self else { return self }
        return AuthOutcome(pamResult: result, reason: reason)
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
    /// The backend's rules refuse this login (an access list, a time window).
    case refusedByPolicy
    /// The password is right, but the account has not been activated yet (its owner has not confirmed
    /// it): refused with a message of its own, and not counted as a failed guess.
    case activationRequired

    /// Whether the backend says this only once the credential has been checked and found right (an
    /// expired password, an account not activated): then the attempt is no failed guess to count.
    public var followsTheRightCredential: Bool {
        self == .passwordChangeRequired || self == .activationRequired
    }

    /// The PAM return code of this refusal.
    public var pamResult: PAMResult {
        switch self {
        case .wrongCredentials, .locked: .authenticationError
        case .expiredAccount: .accountExpired
        case .passwordChangeRequired: .newAuthenticationTokenRequired
        case .tooManyTries: .maximumTries
        case .refusedByPolicy, .activationRequired: .permissionDenied
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
        case .activationRequired: .accountNotActivated
        }
    }
}

/// Linux-PAM's 32 return codes, in the order of their numbers (``code``); `rawValue` is the name PAM's
/// `[value=action]` control syntax and `pam_debug.so` use.
public enum PAMResult: String, Sendable, Hashable, CaseIterable {
    case success
    case openError = "open_err"
    case symbolError = "symbol_err"
    case serviceError = "service_err"
    case systemError = "system_err"
    case bufferError = "buf_err"
    case permissionDenied = "perm_denied"
    case authenticationError = "auth_err"
    case credentialsInsufficient = "cred_insufficient"
    case authinfoUnavailable = "authinfo_unavail"
    case userUnknown = "user_unknown"
    case maximumTries = "maxtries"
    case newAuthenticationTokenRequired = "new_authtok_reqd"
    case accountExpired = "acct_expired"
    case sessionError = "session_err"
    case credentialsUnavailable = "cred_unavail"
    case credentialsExpired = "cred_expired"
    case credentialsError = "cred_err"
    case noModuleData = "no_module_data"
    case conversationError = "conv_err"
    case authenticationTokenError = "authtok_err"
    case authenticationTokenRecoveryError = "authtok_recover_err"
    case authenticationTokenLockBusy = "authtok_lock_busy"
    case authenticationTokenAgingDisabled = "authtok_disable_aging"
    case tryAgain = "try_again"
    case ignore
    case abort
    case authenticationTokenExpired = "authtok_expired"
    case moduleUnknown = "module_unknown"
    case badItem = "bad_item"
    case conversationAgain = "conv_again"
    /// The module waits for the application: libpam ends the stack at once with this code.
    case incomplete

    private static let byCode = Array(allCases)

    /// The code's number, as in `<security/_pam_types.h>` (`PAM_SUCCESS` is 0, `PAM_INCOMPLETE` 31).
    public var code: Int32 { Int32(Self.byCode.firstIndex(of: self)!) }

    /// The result numbered `code`; `nil` for a number that is no PAM return code.
    public init?(code: Int32) {
        guard code >= 0, Int(code) < Self.byCode.count else { return nil }
        self = Self.byCode[Int(code)]
    }

    /// Whether a module answering this refused the credential it was given (`auth_err`, `maxtries`): a
    /// failed guess, which the lockout counts.
    public var refusesCredential: Bool { self == .authenticationError || self == .maximumTries }
}
