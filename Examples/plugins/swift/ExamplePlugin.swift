// An example provider plugin written in Swift: accounts from a `users=` option (`name:password,…`), loaded
// by a host at run time from this shared object (libGatekeeperExamplePlugin.so).
import Authentication
import PluginExport
import ProviderPlugins

/// Accounts given in the configuration, for demonstrations and tests: never real passwords.
final class ExampleProvider: AuthProvider {
    let name = "swift-example"
    private let accounts: [String: Secret]

    init(_ options: ProviderOptions) throws {
        guard let list = options["users"], !list.isEmpty else {
            throw ConfigurationError.missingOption("users", provider: "swift-example")
        }
        var accounts: [String: Secret] = [:]
        for (index, pair) in list.split(separator: ",").enumerated() {
            let parts = pair.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else {
                // The entry is not quoted: a pair written without its colon may be a password.
                throw ConfigurationError.unusable(
                    provider: "swift-example", reason: "users= entry \(index + 1) is not name:password")
            }
            accounts[String(parts[0])] = Secret(copying: parts[1].utf8)
        }
        self.accounts = accounts
    }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // Asked whether or not the user exists, so the prompts do not tell names apart.
        let password = try await request.conversation.askSecret("Password: ")
        guard let expected = accounts[request.username] else { return .notMine }
        guard password == expected else { return .rejected(.wrongCredentials) }
        return .authenticated(Identity(username: request.username, groups: ["plugin-users"], provider: name))
    }
}

@_cdecl("gatekeeper_plugin_entry")
public func gatekeeperPluginEntry() -> UnsafeRawPointer {
    PluginExport.table(
        name: "swift-example", summary: "accounts from the users= option (a Swift plugin)",
        options: [ProviderOption("users", valueName: "NAME:PASSWORD,...", help: "the accounts")]
    ) { options in try ExampleProvider(options) }
}
