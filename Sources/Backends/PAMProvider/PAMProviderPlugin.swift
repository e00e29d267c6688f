public import Authentication
import BlockingPools
import GatekeeperSupport
import HelperPrograms
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#endif

/// Selects ``PAMAuthProvider`` as `--provider pam --service NAME [--pam-dir DIR] [--isolated yes]`.
public enum PAMProviderPlugin: AuthProviderPlugin {
    public static let name = "pam"
    public static let summary = "Linux system accounts through PAM"
    public static let options = [
        ProviderOption("service", valueName: "NAME", help: "the PAM service, a file in /etc/pam.d (required)"),
        ProviderOption("pam-dir", valueName: "DIR", help: "read the service file from DIR instead of /etc/pam.d"),
        ProviderOption(
            "isolated", valueName: "yes|no", help: "run each transaction in gatekeeper-pam-helper, a process of its own"
        ),
        ProviderOption("pam-helper", valueName: "PATH", help: "that helper (default: PREFIX/libexec/gatekeeper)"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        guard let service = options["service"] else { throw .missingOption("service", provider: name) }
        // A service file outside /etc/pam.d decides who gets in: held to the rule of configuration files.
        if let directory = options["pam-dir"] {
            let file = directory + "/" + service
            guard !service.contains("/"), let resolved = resolvedPath(file) else {
                throw .unusable(provider: name, reason: "the service file \(file) cannot be found")
            }
            if let problem = untrustedDirectory(above: resolved) {
                throw .unusable(provider: name, reason: "the service file \(file) is refused: \(problem)")
            }
            switch readPrivateFileAndOwner(file) {
            case .success: break
            case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
                throw .unusable(provider: name, reason: "the service file \(file) \(why)")
            }
        }
        let provider: PAMAuthProvider
        do {
            provider = try PAMAuthProvider(.init(service: service, configurationDirectory: options["pam-dir"]))
        } catch {
            throw .invalidValue(option: "service", value: service, expected: "the name of a PAM service file")
        }
        guard try options.boolean("isolated") == true else { return provider }
        let helper = options["pam-helper"] ?? Self.defaultHelper()
        var arguments = ["--service", service]
        if let directory = options["pam-dir"] { arguments += ["--pam-dir", directory] }
        // PAM modules may wait seconds (a fail delay, a network check); the person types for as long.
        let settings = try HelperSettings(program: helper, arguments: arguments, timeout: .seconds(300), provider: name)
        return IsolatedPAMProvider(helper: ConversationHelperProvider(settings, name: name), service: service)
    }

    /// `gatekeeper-pam-helper` in the directory of the running program (the build tree), or where it is
    /// installed: `PREFIX/libexec/gatekeeper` for a program in `PREFIX/bin`.
    static func defaultHelper() -> String {
        if let directory = Installation.executableDirectory() {
            let nextToProgram = directory + "/gatekeeper-pam-helper"
            if access(nextToProgram, F_OK) == 0 { return nextToProgram }
        }
        return Installation.helperDirectory + "/gatekeeper-pam-helper"
    }
}

/// PAM out of process: each transaction in `gatekeeper-pam-helper`, so a module that crashes or hangs
/// cannot take the host down, and a cancelled login kills the transaction. Sessions are not offered (they
/// would keep a process per signed-in person); a remembered login is rechecked in the host, which needs
/// no PAM call.
struct IsolatedPAMProvider: AuthProvider {
    let helper: ConversationHelperProvider
    let service: String
    var name: String { helper.name }

    /// The helper's answer, of which only the user is taken: the identity — display name, uid, groups — is
    /// looked up here, as in-process PAM looks it up, so a module that prints a protocol line of its own on
    /// standard output makes up no groups or attributes.
    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let outcome = try await helper.authenticate(request)
        guard case .authenticated(let told) = outcome else { return outcome }
        let (user, provider) = (told.username, name)
        guard
            var identity = await BlockingPool.shared.run({
                SystemAccount.identity(of: user, provider: provider, groupsNow: true)
            })
        else { throw .cancelled }
        identity.mustChangePassword = told.mustChangePassword
        return .authenticated(identity)
    }

    /// The same check as in-process PAM's, off the cooperative pool (a name service may block).
    func recheck(_ identity: Identity) async -> Recheck {
        await PAMAuthProvider.recheckSystemAccount(identity, provider: name, on: .shared)
    }

    /// The same look-up as in-process PAM: the accounts are the system's, whichever process runs libpam.
    func lookUpAccount(_ username: String) async -> AccountLookup {
        await PAMAuthProvider.lookUpSystemAccount(username, on: .shared)
    }
}
