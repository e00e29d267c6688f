public import Authentication
public import ProviderPlugins

/// Selects ``PAMAuthProvider`` as `--provider pam --service NAME [--pam-dir DIR]`.
public enum PAMProviderPlugin: AuthProviderPlugin {
    public static let name = "pam"
    public static let summary = "Linux system accounts through PAM"
    public static let options = [
        ProviderOption("service", valueName: "NAME", help: "the PAM service, a file in /etc/pam.d (required)"),
        ProviderOption("pam-dir", valueName: "DIR", help: "read the service file from DIR instead of /etc/pam.d"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ProviderConfigurationError) -> any AuthProvider {
        guard let service = options["service"] else { throw .missingOption("service", provider: name) }
        do {
            return try PAMAuthProvider(.init(service: service, configurationDirectory: options["pam-dir"]))
        } catch {
            throw .invalidValue(option: "service", value: service, expected: "the name of a PAM service file")
        }
    }
}
