// gatekeeper-repl: a tabbed terminal app showing protected actions, cancellable logins, fallback to the
// previous tab, and swappable backends.
import Authentication
import GatekeeperBackends
import GatekeeperHost
import GatekeeperSupport
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// The built-in backends, and a shared-object plugin by absolute path or by short name.
let registry = BuiltInBackends.registry
var selection = ProviderSelection(registry: registry)

let usage = "usage: gatekeeper-repl [--provider NAME [provider options] | --config FILE] [--state-dir DIR]"
var configurationPath: String?
var stateDirectory: String?
do {
    let parsed = try CommandLineSyntax(flags: ["-h", "--help"], valueOptions: ["config", "state-dir"])
        .selectingProviders(from: selection)
        .parse(CommandLine.arguments.dropFirst())
    if parsed.has("-h", "--help") {
        print(
            "\(usage)\n\nA tabbed terminal demonstration of swift-gatekeeper.\n\n\(selection.help(defaultsToFirst: true))"
        )
        exit(0)
    }
    if let stray = (parsed.positionals + parsed.trailing).first { throw UsageError("Unexpected argument \(stray).") }
    selection.take(from: parsed)
    configurationPath = parsed.values["config"]
    stateDirectory = parsed.values["state-dir"]
    if let directory = stateDirectory, !directory.hasPrefix("/") {
        throw UsageError("--state-dir needs an absolute path.")
    }
    if configurationPath != nil && (selection.name != nil || !selection.options.isEmpty) {
        throw UsageError("--config names the providers; give it without --provider or provider options.")
    }
} catch {
    writeStandardError("gatekeeper-repl: \(error)\n\(usage)\n")
    exit(ExitStatus.usage.code)
}

let provider: any AuthProvider
var stack: StackConfiguration?
do {
    if let configurationPath {
        let loaded = try ConfigurationFile.read(configurationPath, registry: registry)
        if stateDirectory != nil, let refusal = HostSettings.stateDirectoryRefusal(configurationOwner: loaded.owner) {
            writeStandardError("gatekeeper-repl: \(refusal) (\(configurationPath)).\n")
            exit(ExitStatus.usage.code)
        }
        stack = loaded.stack
        provider = try loaded.stack.makeChain(registry: registry)
    } else {
        provider = try selection.makeProvider(defaultsToFirst: true)  // A demo: the mock backend by default.
    }
} catch let error as ConfigurationError where error.location != nil {
    HostSettings.reportRefused(error, tool: "gatekeeper-repl")
    writeStandardError("gatekeeper-repl: \(error)\n")
    exit(ExitStatus.unavailable.code)
} catch {
    writeStandardError("gatekeeper-repl: \(error)\n")
    exit(ExitStatus(configuration: error).code)
}

let console = TerminalConversation(input: 0, output: 1)
let screen = Screen(console: console, environment: ProcessEnvironment.environment)
// The configuration's protections: failed logins counted where gatekeeper-run counts them (in memory only
// for the demo backend without a configuration), its audit sinks, and the logins gatekeeper-run remembers,
// shown by `status`.
let host = HostSettings(stack, stateDirectory: stateDirectory)
let warnings: @Sendable (String) -> Void = { writeStandardError("gatekeeper-repl: warning: \($0)\n") }
let login: HostLogin
do throws(AuthError) {
    // The REPL shows gatekeeper-run's remembered logins (`status`) but makes its own sessions.
    login = try HostLogin(
        provider: provider, stack: stack, selection: (selection.name, selection.options), settings: host,
        context: .init(
            tool: "gatekeeper-repl", terminal: ControllingTerminal.name(), remembersLogins: false,
            countsInMemory: stack == nil && stateDirectory == nil && provider.name == BuiltInBackends.demo),
        report: warnings)
} catch {
    writeStandardError("gatekeeper-repl: \(error.reason ?? error.description)\n")
    exit(ExitStatus.unavailable.code)
}
let gatekeeper = login.gatekeeper
let repl = REPL(gatekeeper: gatekeeper, screen: screen, cache: login.cache)

// Ctrl-C outside a prompt cancels the command in progress; with no command in progress it is ignored
// on a terminal (the prompt handles its own Ctrl-C) and ends a scripted session.
let interrupts = InterruptMonitor {
    if !repl.interrupt() && !screen.interactive {
        ChildProcesses.stopAll()
        exit(130)
    }
}

screen.say(screen.styled("gatekeeper-repl", .heading) + " — protected tabs, cancellable logins, swappable backends.")
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
// No helper a login started outlives the REPL.
ChildProcesses.stopAll()
exit(0)
