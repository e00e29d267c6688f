public import Authentication

/// A provider that gives a fixed answer without asking anything, as `pam_debug.so` does: for trying a
/// stack (`debug result=auth_err`), and for testing chains against libpam.
public struct DebugAuthProvider: AuthProvider {
    public let name = "debug"
    /// The PAM result every login gets.
    public let result: PAMResult

    public init(result: PAMResult = .success) {
        self.result = result
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        if Task.isCancelled { throw .cancelled }
        guard result != .success else { return .authenticated(Identity(username: request.username, provider: name)) }
        return AuthOutcome(pamResult: result, reason: "the debug provider answers \(result.rawValue)")
    }
}
