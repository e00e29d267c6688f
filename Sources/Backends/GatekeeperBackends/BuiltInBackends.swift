import DebugProvider
import FileProvider
import HelperPrograms
import LDAPProvider
import MockProvider
import OIDCProvider
import OTPProvider
import PAMProvider
import PluginHost
public import ProviderPlugins

/// The backends the host tools offer by name — the one list of them. `gatekeeper-run`, `gatekeeper-repl`
/// and the tests of the README's examples read it, and a backend added here is offered everywhere a user
/// reaches one: each tool's `--help` and its completion, the manual's PROVIDERS, a configuration file.
/// docs/layout.md, "Adding a backend", lists the steps; `BuiltInBackendsTests` fails on one left out.
public enum BuiltInBackends {
    /// In the order the tools' help lists them; the first, the demo backend, is the REPL's default.
    public static let plugins: [any AuthProviderPlugin.Type] = [
        MockProviderPlugin.self, PAMProviderPlugin.self, FileProviderPlugin.self, DebugProviderPlugin.self,
        CheckpasswordPlugin.self, ConversationHelperPlugin.self, OTPProviderPlugin.self, LDAPProviderPlugin.self,
        OIDCProviderPlugin.self,
    ]

    /// The demo backend's name: its published accounts are for the REPL's demonstration.
    public static let demo = MockProviderPlugin.name

    /// The tools' registry: these backends, and a shared-object plugin named by absolute path or by
    /// short name.
    public static var registry: ProviderRegistry {
        ProviderRegistry(plugins).resolving(with: SharedObjectPlugins.resolver())
    }
}
