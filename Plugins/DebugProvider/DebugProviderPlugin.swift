public import Authentication
public import ProviderPlugins

/// Selects ``DebugAuthProvider`` as `--provider debug --result auth_err`.
public enum DebugProviderPlugin: AuthProviderPlugin {
    public static let name = "debug"
    public static let summary = "a fixed answer, for trying stacks (like pam_debug.so)"
    /// It asks nothing: a stack that succeeds through it alone checks nobody.
    public static let checksCredentials = false
    public static let options = [
        ProviderOption(
            "result", valueName: "RESULT",
            help: "any of PAM's 32 return codes: success (default), auth_err, user_unknown, cred_err, … incomplete")
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ProviderConfigurationError) -> any AuthProvider {
        guard let text = options["result"] else { return DebugAuthProvider() }
        guard let result = PAMResult(rawValue: text) else {
            let names = PAMResult.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidValue(option: "result", value: text, expected: "one of \(names)")
        }
        return DebugAuthProvider(result: result)
    }
}
