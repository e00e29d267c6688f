public import Authentication
public import ProviderPlugins

/// Selects ``MockAuthProvider`` with the demonstration accounts as `--provider mock [--delay DURATION]`.
public enum MockProviderPlugin: AuthProviderPlugin {
    public static let name = "mock"
    public static let summary = "in-memory demonstration accounts, answering after a delay"
    public static let options = [
        ProviderOption(
            "delay", valueName: "DURATION", help: "how long each login takes, such as 1s or 250ms (default 1s)")
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        MockAuthProvider(users: MockAuthProvider.demoUsers, delay: try options.duration("delay") ?? .seconds(1))
    }
}
