public import Authentication
public import ProviderPlugins

/// Selects ``DebugAuthProvider`` as `--provider debug --result auth_err`.
public enum DebugProviderPlugin: AuthProviderPlugin {
    public static let name = "debug"
    public static let summary = "a fixed answer, for trying stacks (like pam_debug.so)"
    /// It asks nothing: a stack that succeeds through it alone checks nobody.
    public static let checksCredentials = false
    private static let codes =
        "any of PAM's 32 return codes: success (default), auth_err, user_unknown, cred_err, … incomplete"
    public static let options = [
        ProviderOption("result", valueName: "RESULT", help: "a login's answer: \(codes)"),
        ProviderOption("prechauthtok", valueName: "RESULT", help: "a password change's preliminary pass: \(codes)"),
        ProviderOption("chauthtok", valueName: "RESULT", help: "a password change's update pass: \(codes)"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        func result(_ option: String) throws(ConfigurationError) -> PAMResult {
            guard let text = options[option] else { return .success }
            guard let result = PAMResult(rawValue: text) else {
                let names = PAMResult.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidValue(option: option, value: text, expected: "one of \(names)")
            }
            return result
        }
        return DebugAuthProvider(
            result: try result("result"), preliminaryChangeResult: try result("prechauthtok"),
            changeResult: try result("chauthtok"))
    }
}
