public import Authentication
public import BlockingPools
import CPAMLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Linux system accounts through libpam: the same checks `login` or `sudo` make, as configured in
/// `/etc/pam.d`.
///
/// Each login is one PAM transaction (`pam_start` … `pam_end`) whose every call runs on a thread of its
/// own, never on Swift's cooperative pool: a module sleeping in its fail delay stalls nothing else.
/// The transaction authenticates, then checks the account (`pam_acct_mgmt`, on by default); a password
/// that PAM says has expired is changed through the same conversation when the host allows it.
///
/// When the person or the task cancels, the conversation answers PAM with an error, and the caller gets
/// ``AuthError/cancelled`` at once even if libpam is still sleeping; the transaction's thread finishes in
/// the background and its result is discarded.
///
/// ## Privileges
/// `pam_unix` reads `/etc/shadow`, which only root can. Run without root, it can check only the invoking
/// user's own password (through the `unix_chkpwd` helper); other users fail, and the error says why.
public final class PAMAuthProvider: AuthProvider {
    /// How a PAM transaction is set up.
    public struct Configuration: Sendable {
        /// The PAM service: the name of the file in the configuration directory (`/etc/pam.d/NAME`).
        public var service: String
        /// Where the service file is, instead of `/etc/pam.d` (`pam_start_confdir`), for tests and for
        /// tools that ship their own PAM stack.
        public var configurationDirectory: String?
        /// Whether to run the account check (`pam_acct_mgmt`) after authenticating. On by default: it
        /// catches expired and locked accounts and expired passwords.
        public var checksAccount: Bool
        /// Whether an expired password may be changed (`pam_chauthtok` with `PAM_CHANGE_EXPIRED_AUTHTOK`,
        /// on the login's own handle, as `login` does) through the conversation, when the login allows it
        /// (``AuthRequest/mayChangeExpiredPassword``). On by default; off, or where the login does not
        /// allow it, the login fails with ``AuthError/passwordChangeRequired``.
        public var allowsPasswordChange: Bool
        /// Whether to establish the user's credentials (`pam_setcred`) after the checks; they are deleted
        /// at sign-out. Off by default.
        public var establishesCredentials: Bool
        /// Whether to open a PAM session (`pam_open_session`, with credentials) after the checks; it is
        /// closed at sign-out, on the same handle. Off by default.
        public var opensSession: Bool
        /// The user on the remote side, for `PAM_RUSER`.
        public var remoteUser: String?
        /// The threads the account look-ups (`getpwnam_r`, which may ask a directory) run on: the
        /// process's shared pool by default. PAM transactions, which may wait on a person, keep a pool
        /// of their own.
        public var threads: BlockingPool = .shared

        public init(
            service: String,
            configurationDirectory: String? = nil,
            checksAccount: Bool = true,
            allowsPasswordChange: Bool = true,
            establishesCredentials: Bool = false,
            opensSession: Bool = false,
            remoteUser: String? = nil
        ) {
            self.service = service
            self.configurationDirectory = configurationDirectory
            self.checksAccount = checksAccount
            self.allowsPasswordChange = allowsPasswordChange
            self.establishesCredentials = establishesCredentials
            self.opensSession = opensSession
            self.remoteUser = remoteUser
        }

        /// Where the service file must be.
        var serviceFile: String {
            (configurationDirectory ?? "/etc/pam.d") + "/" + service
        }
    }

    public let name = "pam"
    public let configuration: Configuration
    private let sessions = PAMSessions()

    /// - Throws: ``PAMConfigurationError`` for a service name that cannot name a file in the
    ///   configuration directory.
    public init(_ configuration: Configuration) throws(PAMConfigurationError) {
        let service = configuration.service
        let usable =
            !service.isEmpty && service.utf8.count <= 255 && service != "." && service != ".."
            && service.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "/" }
        guard usable else {
            throw PAMConfigurationError(
                .invalidService,
                "\(TextSafety.escaped(service).debugDescription) is not the name of a PAM service file")
        }
        self.configuration = configuration
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // A missing service file would silently run under `other`; report it instead.
        var info = stat()
        guard stat(configuration.serviceFile, &info) == 0 else {
            return .unavailable(reason: "there is no PAM service file \(configuration.serviceFile).")
        }
        return try await PAMTransaction(request: request, configuration: configuration, sessions: sessions).run().get()
    }

    /// Whether the system account still exists, and — where this process may read the shadow file — is
    /// neither locked (`passwd -l`) nor expired.
    public func recheck(_ identity: Identity) async -> Recheck {
        await Self.recheckSystemAccount(identity, provider: name, on: configuration.threads)
    }

    /// ``recheck(_:)`` on `threads` (a name service may block), for this provider and its isolated form.
    static func recheckSystemAccount(_ identity: Identity, provider: String, on threads: BlockingPool) async -> Recheck
    {
        await threads.run { SystemAccount.recheck(identity.username, provider: provider) }
            ?? .unavailable(reason: "the account check was cancelled")
    }

    /// The system database's spelling of the account, and whether it is uid 0 (which pam_faillock exempts
    /// from the lockout unless `even_deny_root`). A name the database does not know may still be a PAM
    /// module's own account: that cannot be told before the stack runs.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        await Self.lookUpSystemAccount(username, on: configuration.threads)
    }

    /// The system database's account for `username` (off the cooperative pool, on `threads`: a name
    /// service may block), for this provider and its isolated form alike.
    static func lookUpSystemAccount(_ username: String, on threads: BlockingPool) async -> AccountLookup {
        let found = await threads.run { SystemAccounts.account(named: username) }
        guard let account = found ?? nil, (try? Username.validate(account.name)) != nil else { return .cannotTell }
        return .known(canonicalName: account.name, isSystemAdministrator: account.uid == 0)
    }

    public var changesPasswords: Bool { true }

    /// A password change through the service's `password` stack, as `passwd` makes one. libpam runs both
    /// of its passes in one `pam_chauthtok`, so here the passes are:
    /// - On request: the current password, asked as ``PasswordPrompt/current`` and checked in both passes
    ///   by the service's `auth` lines (`pam_authenticate`), whoever runs the program — as root pam_unix
    ///   would change a password without asking the current one, and a stack's other entries must not
    ///   make that unnecessary; then, in the update, `pam_chauthtok`, its questions through the
    ///   conversation (pam_unix's "Current password: " is answered from the first question).
    /// - The change a login needs (`expiredOnly`): `pam_chauthtok` with `PAM_CHANGE_EXPIRED_AUTHTOK`,
    ///   which changes only an expired password and makes pam_unix ask the current one, even of root.
    ///
    /// The modules write atomically (pam_unix: a new shadow file renamed over the old, under
    /// `lckpwdf`); a change cancelled at a question changes nothing.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        var info = stat()
        guard stat(configuration.serviceFile, &info) == 0 else {
            return .unavailable(reason: "there is no PAM service file \(configuration.serviceFile).")
        }
        var login = AuthRequest(
            username: request.username, conversation: request.conversation, terminal: request.terminal,
            remoteHost: request.remoteHost, requestingUser: request.requestingUser)
        if !request.expiredOnly {
            let current = try await request.conversation.askSecret(PasswordPrompt.current)
            var check = login
            check.conversation = CurrentPasswordConversation(current)
            let checked = await PAMTransaction(
                request: check, configuration: configuration, sessions: sessions, purpose: .passwordCheck
            ).run()
            switch checked {
            case .failure(let error) where error == .cancelled: throw error
            case .failure: return .rejected(.wrongCurrentPassword)  // A question only the person could answer.
            case .success: break
            }
            switch try checked.get() {
            case .authenticated: break
            case .failed(.authenticationError, _), .failed(.maximumTries, _), .failed(.credentialsInsufficient, _):
                return .rejected(.wrongCurrentPassword)
            case .failed(.userUnknown, _): return .notMine
            case .failed(let code, let reason): return PasswordChangeOutcome(pamResult: code, reason: reason)
            case let other: return .unavailable(reason: "PAM answered \(other.pamResult.rawValue)")
            }
        }
        guard request.pass == .update else { return .changed }
        login.conversation = request.conversation
        let transaction = PAMTransaction(
            request: login, configuration: configuration, sessions: sessions,
            purpose: .passwordChange(expiredOnly: request.expiredOnly))
        switch try await transaction.run().get() {
        case .authenticated: return .changed
        case .failed(.authenticationError, _): return .rejected(.wrongCurrentPassword)
        case .failed(.authenticationTokenError, _), .failed(.tryAgain, _):
            // libpam's words are "Authentication token manipulation error"; the modules said why as they refused.
            return .rejected(.unacceptable("the system's password rules refused it"))
        case .failed(let code, let reason): return PasswordChangeOutcome(pamResult: code, reason: reason)
        case let other: return .unavailable(reason: "PAM answered \(other.pamResult.rawValue)")
        }
    }

    /// Closes the PAM session and deletes the credentials of `identity`, if this provider opened them.
    public func signOut(_ identity: Identity) async {
        await sessions.close(identity.attributes[PAMSessions.attribute])
    }
}

/// A configuration the PAM provider cannot use: a ``code`` and a message; equal when the codes are.
public struct PAMConfigurationError: CodedError {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<PAMConfigurationError>

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

}

/// The conversation of a current password's check: the stack's hidden questions are answered with the
/// password the person gave as the current one; a visible question (a one-time code) cannot be, and fails
/// the check. Messages are not shown: the check is not the person's login.
private final class CurrentPasswordConversation: Conversation {
    private let password: Secret

    init(_ password: Secret) { self.password = password }

    func ask(_ prompt: String) async throws(AuthError) -> String { throw .invalidCredentials }
    func askSecret(_ prompt: String) async throws(AuthError) -> Secret { password }
    func show(_ message: String, as kind: MessageKind) async {}
}

extension ErrorCode where Domain == PAMConfigurationError {
    /// The service name cannot name a file in the configuration directory.
    public static var invalidService: Self { Self("invalidService") }
}
