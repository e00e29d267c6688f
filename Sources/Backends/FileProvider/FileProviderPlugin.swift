public import Authentication
public import ProviderPlugins

/// Selects ``FileAuthProvider`` as `--provider file --users PATH`.
public enum FileProviderPlugin: AuthProviderPlugin {
    public static let name = "file"
    public static let summary = "accounts in an htpasswd-compatible users file"
    public static let options = [
        ProviderOption("users", valueName: "PATH", help: "the users file (required)")
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        guard let path = options["users"] else { throw .missingOption("users", provider: name) }
        do {
            return try FileAuthProvider(.init(path: path))
        } catch {
            throw .unusable(provider: name, reason: error.description)
        }
    }
}
