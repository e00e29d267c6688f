public import Authentication

/// A provider that gives a fixed answer without asking anything, as `pam_debug.so` does: for trying a
/// stack (`debug result=auth_err`), and for testing chains against libpam — a login's answer (`result=`,
/// pam_debug's `auth=`) and each pass of a password change (`prechauthtok=` and `chauthtok=`, pam_debug's
/// own names), every one `success` unless given.
public struct DebugAuthProvider: AuthProvider {
    public let name = "debug"
    /// The PAM result every login gets.
    public let result: PAMResult
    /// The PAM result of a password change's preliminary pass.
    public let preliminaryChangeResult: PAMResult
    /// The PAM result of a password change's update pass.
    public let changeResult: PAMResult

    public init(
        result: PAMResult = .success, preliminaryChangeResult: PAMResult = .success, changeResult: PAMResult = .success
    ) {
        self.result = result
        self.preliminaryChangeResult = preliminaryChangeResult
        self.changeResult = changeResult
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        if Task.isCancelled { throw .cancelled }
        guard result != .success else { return .authenticated(Identity(username: request.username, provider: name)) }
        return AuthOutcome(pamResult: result, reason: "the debug provider answers \(result.rawValue)")
    }

    public var changesPasswords: Bool { true }

    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        if Task.isCancelled { throw .cancelled }
        let result = request.pass == .preliminaryCheck ? preliminaryChangeResult : changeResult
        return PasswordChangeOutcome(pamResult: result, reason: "the debug provider answers \(result.rawValue)")
    }
}
