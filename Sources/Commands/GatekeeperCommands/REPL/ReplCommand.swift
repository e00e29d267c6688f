import Authentication
import GatekeeperBackends
import GatekeeperHost
import GatekeeperSupport
public import ProviderPlugins
import TerminalLogin
public import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What gatekeeper-repl's command line asks for: the backend (a provider and its options, or a
/// configuration file) and the state directory.
public struct ReplInvocation: Sendable {
    public var selection: ProviderSelection
    public var configuration: String?
    public var stateDirectory: String?
    /// Print the help and start nothing.
    public var showsHelp = false

    public static let usage =
        "usage: gatekeeper-repl [--provider NAME [provider options] | --config FILE] [--state-dir DIR]"

    /// Reads the arguments (without the program's name).
    public static func parse(_ arguments: ArraySlice<String>, registry: ProviderRegistry) throws(UsageError)
        -> ReplInvocation
    {
        var selection = ProviderSelection(registry: registry)
        let parsed = try CommandLineSyntax(flags: ["-h", "--help"], valueOptions: ["config", "state-dir"])
            .selectingProviders(from: selection)
            .parse(arguments)
        selection.take(from: parsed)
        var invocation = ReplInvocation(selection: selection)
        if parsed.has("-h", "--help") {
            invocation.showsHelp = true
            return invocation
        }
        if let stray = (parsed.positionals + parsed.trailing).first {
            throw UsageError("Unexpected argument \(stray).")
        }
        invocation.configuration = parsed.values["config"]
        invocation.stateDirectory = parsed.values["state-dir"]
        if let directory = invocation.stateDirectory, !directory.hasPrefix("/") {
            throw UsageError("--state-dir needs an absolute path.")
        }
        if invocation.configuration != nil && (selection.name != nil || !selection.options.isEmpty) {
            throw UsageError("--config names the providers; give it without --provider or provider options.")
        }
        return invocation
    }

    public static func help(registry: ProviderRegistry) -> String {
        let selection = ProviderSelection(registry: registry)
        return
            "\(usage)\n\nA tabbed terminal demonstration of swift-gatekeeper.\n\n\(selection.help(defaultsToFirst: true))"
    }
}

/// gatekeeper-repl: a tabbed terminal app showing protected actions, cancellable logins, fallback to the
/// previous tab, and swappable backends.
public enum ReplCommand {
    static let tool = "gatekeeper-repl"

    /// The tool: reads the process's command line, runs the session on the terminal, and exits.
    public static func main() async -> Never {
        let registry = BuiltInBackends.registry
        let invocation = readCommandLine(of: tool, usage: ReplInvocation.usage) { arguments throws(UsageError) in
            try ReplInvocation.parse(arguments, registry: registry)
        }
        if invocation.showsHelp {
            print(ReplInvocation.help(registry: registry))
            exitTool(.success)
        }
        do throws(ToolExit) {
            try await run(invocation, registry: registry)
            exitTool(.success)
        } catch {
            exitTool(ended(error, tool: tool, output: .standard))
        }
    }

    /// Starts the session `invocation` asks for and runs it until the person quits.
    static func run(_ invocation: ReplInvocation, registry: ProviderRegistry) async throws(ToolExit) {
        let selection = invocation.selection
        let provider: any AuthProvider
        var stack: StackConfiguration?
        var settings: StackSettings?
        do {
            if let configurationPath = invocation.configuration {
                let loaded = try ConfigurationFile.read(configurationPath, registry: registry)
                if invocation.stateDirectory != nil,
                    let refusal = HostSettings.stateDirectoryRefusal(configurationOwner: loaded.owner)
                {
                    throw ToolExit(.usage, "\(refusal) (\(configurationPath)).")
                }
                (stack, settings) = (loaded.stack, loaded.settings)
                provider = try loaded.stack.makeChain(registry: registry)
            } else {
                provider = try selection.makeProvider(defaultsToFirst: true)  // A demo: the mock backend by default.
            }
        } catch let exit as ToolExit {
            throw exit
        } catch let error as ConfigurationError where error.location != nil {
            HostSettings.reportRefused(error, tool: tool)
            throw ToolExit(.unavailable, "\(error)")
        } catch {
            throw ToolExit(ExitStatus(configuration: error), "\(error)")
        }
        let stateDirectory = invocation.stateDirectory
        let console = TerminalConversation(input: 0, output: 1)
        let screen = Screen(console: console, environment: ProcessEnvironment.environment)
        // The configuration's protections: failed logins counted where gatekeeper-run counts them (in memory only
        // for the demo backend without a configuration), its audit sinks, and the logins gatekeeper-run remembers,
        // shown by `status`.
        let host = HostSettings(settings, stateDirectory: stateDirectory)
        let warnings: @Sendable (String) -> Void = { writeStandardError("gatekeeper-repl: warning: \($0)\n") }
        let login: HostLogin
        do throws(AuthError) {
            // The REPL shows gatekeeper-run's remembered logins (`status`) but makes its own sessions.
            login = try HostLogin(
                provider: provider, stack: stack, selection: (selection.name, selection.options), settings: host,
                context: .init(
                    tool: tool, terminal: ControllingTerminal.name(), remembersLogins: false,
                    countsInMemory: stack == nil && stateDirectory == nil && provider.name == BuiltInBackends.demo),
                report: warnings)
        } catch {
            throw ToolExit(.unavailable, error.reason ?? error.description)
        }
        let gatekeeper = login.gatekeeper
        // A cache the configuration keeps but nobody made yet has no login to show (the REPL does not make one).
        let repl = REPL(
            gatekeeper: gatekeeper, screen: screen, remembered: host.cacheTimeout > .zero ? login.cache : nil)

        // Ctrl-C outside a prompt cancels the command in progress; with no command in progress it is ignored
        // on a terminal (the prompt handles its own Ctrl-C) and ends a scripted session.
        let interrupts = InterruptMonitor {
            if !repl.interrupt() && !screen.interactive {
                exitTool(.cancelled)
            }
        }

        screen.say(screen.styled(tool, .heading) + " — protected tabs, cancellable logins, swappable backends.")
        if provider.name == BuiltInBackends.demo {
            screen.say(
                "Provider: mock. Demo accounts: alice / wonderland (admin), bob / builder; "
                    + "carol needs activation, dave is locked, erin (erin-2026) must change her password."
            )
        } else {
            screen.say("Provider: \(provider.name).")
        }
        screen.say("Tabs: home, contact (public) · courses, profile (sign in) · admin (group admin). Type 'help'.")

        await repl.run()
        interrupts.stop()
    }
}
