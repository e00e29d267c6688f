/// What a provider is asked when a password is to be changed, in one of PAM's two passes.
///
/// A change runs as `pam_chauthtok` runs: every entry of the stack is asked first whether it *can*
/// change the password (``Pass/preliminaryCheck``: the current password is right, the backend is
/// reachable), and only when the stack as a whole says yes is every entry asked to change it
/// (``Pass/update``). So a refusal by any entry the stack requires changes nothing anywhere.
///
/// The provider asks what it needs through ``conversation`` with the prompts of ``PasswordPrompt``; a
/// chain answers each prompt once for both passes and every entry (as PAM's `PAM_OLDAUTHTOK` and
/// `PAM_AUTHTOK` items), so the person types the current password once and the new one twice.
public struct PasswordChangeRequest: LoginOriginCarrying, Sendable {
    /// PAM's two passes of `pam_chauthtok`.
    public enum Pass: Sendable, Hashable {
        /// `PAM_PRELIM_CHECK`: may this backend change the password now? Changes nothing.
        case preliminaryCheck
        /// `PAM_UPDATE_AUTHTOK`: change it. Asked only when every entry's preliminary check let it.
        case update
    }

    /// The account, already validated.
    public var username: String
    /// How to ask the person for the current and the new password.
    public var conversation: any Conversation
    public var pass: Pass
    /// The change is the one a login requires because the password expired (PAM's
    /// `PAM_CHANGE_EXPIRED_AUTHTOK`): a backend may leave alone a password of its own that has not.
    public var expiredOnly: Bool
    /// Where the change comes from: service, terminal, remote host, requesting user.
    public var origin: LoginOrigin

    public init(
        username: String,
        conversation: any Conversation,
        pass: Pass,
        expiredOnly: Bool = false,
        origin: LoginOrigin = LoginOrigin()
    ) {
        self.username = username
        self.conversation = conversation
        self.pass = pass
        self.expiredOnly = expiredOnly
        self.origin = origin
    }

    /// A request whose origin is given field by field (the service, the default `gatekeeper`).
    public init(
        username: String,
        conversation: any Conversation,
        pass: Pass,
        expiredOnly: Bool = false,
        terminal: String?,
        remoteHost: String? = nil,
        requestingUser: String? = nil
    ) {
        self.init(
            username: username, conversation: conversation, pass: pass, expiredOnly: expiredOnly,
            origin: LoginOrigin(terminal: terminal, remoteHost: remoteHost, requestingUser: requestingUser))
    }
}

/// A provider's answer to one pass of a password change; each is one PAM return code (``pamResult``):
///
/// | answer | PAM return code |
/// |---|---|
/// | ``changed`` | `PAM_SUCCESS` (in the preliminary pass: ready to change) |
/// | ``rejected(_:)`` with ``PasswordChangeRefusal/wrongCurrentPassword`` | `PAM_AUTH_ERR` |
/// | … ``PasswordChangeRefusal/unacceptable(_:)`` | `PAM_AUTHTOK_ERR` |
/// | … ``PasswordChangeRefusal/refusedByPolicy`` | `PAM_PERM_DENIED` |
/// | ``notMine`` | `PAM_USER_UNKNOWN` |
/// | ``unavailable(reason:)`` | `PAM_AUTHINFO_UNAVAIL` |
/// | ``ignored`` | `PAM_IGNORE` (the backend has no password to change: a one-time code) |
/// | ``failed(_:reason:)`` | the code it names |
public enum PasswordChangeOutcome: Sendable, Hashable {
    /// Changed (in the update pass), or ready to be (in the preliminary one).
    case changed
    /// The backend knows the account and will not change its password.
    case rejected(PasswordChangeRefusal)
    /// The backend does not know this account.
    case notMine
    /// The backend has no password to change; a chain goes on as if it were not there.
    case ignored
    /// The backend itself failed; the reason holds no secret.
    case unavailable(reason: String)
    /// Another of PAM's return codes; the reason holds no secret.
    case failed(PAMResult, reason: String)

    /// The PAM return code this answer stands for.
    public var pamResult: PAMResult {
        switch self {
        case .changed: .success
        case .rejected(let refusal): refusal.pamResult
        case .notMine: .userUnknown
        case .ignored: .ignore
        case .unavailable: .authinfoUnavailable
        case .failed(let result, _): result == .success ? .permissionDenied : result
        }
    }

    /// The answer that stands for `result`: `auth_err` a wrong current password, `authtok_err` a new
    /// password refused (for `reason`), `perm_denied` a refusal by policy, `user_unknown` ``notMine``,
    /// `ignore` ``ignored``, `authinfo_unavail` ``unavailable(reason:)``, any other ``failed(_:reason:)``.
    public init(pamResult result: PAMResult, reason: String) {
        switch result {
        case .success: self = .changed
        case .authenticationError: self = .rejected(.wrongCurrentPassword)
        case .authenticationTokenError: self = .rejected(.unacceptable(reason))
        case .permissionDenied: self = .rejected(.refusedByPolicy)
        case .userUnknown: self = .notMine
        case .ignore: self = .ignored
        case .authinfoUnavailable: self = .unavailable(reason: reason)
        default: self = .failed(result, reason: reason)
        }
    }
}

/// Why a backend that knows the account will not change its password: the reason in a change's outcome,
/// as ``Rejection`` is a login's, never thrown (callers get ``error``). It is an `Error` only so that a
/// `Result` can carry it (``PasswordPrompt/askNewPassword(_:)``).
public enum PasswordChangeRefusal: Error, Sendable, Hashable {
    /// The current password given is wrong.
    case wrongCurrentPassword
    /// The new password is refused, for the reason given in words a person understands ("it is shorter
    /// than 8 characters", "it was used before", "the two entries differ"); never the password itself.
    case unacceptable(String)
    /// The backend's rules refuse a change now (an account that may not change its password).
    case refusedByPolicy

    /// The PAM return code of this refusal.
    public var pamResult: PAMResult {
        switch self {
        case .wrongCurrentPassword: .authenticationError
        case .unacceptable: .authenticationTokenError
        case .refusedByPolicy: .permissionDenied
        }
    }

    /// The error a caller gets for it.
    public var error: AuthError {
        switch self {
        case .wrongCurrentPassword: .passwordNotChanged(reason: "the current password is incorrect")
        case .unacceptable(let reason): .passwordNotChanged(reason: reason)
        case .refusedByPolicy: .passwordNotChanged(reason: "this account may not change its password")
        }
    }
}

/// The prompts of a password change, pam_unix's own, so that every provider asks alike and a chain
/// asks each one once.
public enum PasswordPrompt {
    public static let current = "Current password: "
    public static let new = "New password: "
    public static let retype = "Retype new password: "
    /// What a login says before it asks for a new password, as pam_unix says it.
    public static let expiredNotice = "You are required to change your password immediately (administrator enforced)."

    /// Asks the new password twice; the two entries must be the same, and the password must pass
    /// ``Credentials/validatePassword(_:)``.
    /// - Returns: the new password, or the refusal to answer with.
    public static func askNewPassword(_ conversation: any Conversation) async throws(AuthError)
        -> Result<Secret, PasswordChangeRefusal>
    {
        let first = try await conversation.askSecret(new)
        do throws(AuthError) {
            try Credentials.validatePassword(first)
        } catch {
            return .failure(.unacceptable(error.inputProblem.map { "it \($0.phrase)" } ?? "it is empty"))
        }
        let second = try await conversation.askSecret(retype)
        guard first == second else { return .failure(.unacceptable("the two entries differ")) }
        return .success(first)
    }
}

extension AuthProvider {
    /// Changes the password of `username` through this provider (a chain: through its stack), as
    /// `pam_chauthtok` does: the preliminary pass, then, only if it succeeded, the update. The person
    /// answers each prompt once.
    /// - Returns: the PAM result of the pass that decided (`success` when the password was changed) and
    ///   its outcome.
    /// - Throws: ``AuthError/cancelled`` when the person or the task cancelled (nothing was changed
    ///   unless the update pass had begun writing, which every provider in this package does at once and
    ///   atomically), or the conversation's error.
    public func changePassword(
        of username: String,
        conversation: any Conversation,
        expiredOnly: Bool = false,
        origin: LoginOrigin = LoginOrigin()
    ) async throws(AuthError) -> PasswordChangeOutcome {
        try await changePasswordWithTrace(
            of: username, conversation: conversation, expiredOnly: expiredOnly, origin: origin
        ).outcome
    }

    /// ``changePassword(of:conversation:expiredOnly:origin:)``, with the trace
    /// of the pass that decided: the update, or the preliminary check when it refused.
    public func changePasswordWithTrace(
        of username: String,
        conversation: any Conversation,
        expiredOnly: Bool = false,
        origin: LoginOrigin = LoginOrigin()
    ) async throws(AuthError) -> Traced<PasswordChangeOutcome> {
        try await changePasswordInTwoPasses(
            of: username, conversation: conversation, expiredOnly: expiredOnly, origin: origin
        ).answer
    }

    /// Both passes; `preliminaryPassed` tells whether every entry's preliminary check let the change go on
    /// (so the current password, where one was asked, was right).
    func changePasswordInTwoPasses(
        of username: String,
        conversation: any Conversation,
        expiredOnly: Bool = false,
        origin: LoginOrigin = LoginOrigin()
    ) async throws(AuthError) -> (answer: Traced<PasswordChangeOutcome>, preliminaryPassed: Bool) {
        var request = PasswordChangeRequest(
            username: username, conversation: SharingConversation(conversation), pass: .preliminaryCheck,
            expiredOnly: expiredOnly, origin: origin)
        let preliminary = try await changePasswordWithTrace(request)
        guard preliminary.outcome.pamResult == .success else { return (preliminary, false) }
        if Task.isCancelled { throw .cancelled }
        request.pass = .update
        return (try await changePasswordWithTrace(request), true)
    }
}

extension PasswordChangeOutcome {
    /// The error a caller gets for an outcome that changed nothing; `nil` for ``changed``.
    public var error: AuthError? {
        switch self {
        case .changed: nil
        case .rejected(let refusal): refusal.error
        case .notMine: .userNotFound
        case .ignored: .passwordNotChanged(reason: "no provider of this stack keeps a password for the account")
        case .unavailable(let reason), .failed(_, let reason): .providerUnavailable(reason: reason)
        }
    }
}
