// gatekeeper-run: runs a command only after the person signs in (and, with --group, belongs to a group).
import Authentication
import DebugProvider
import FileProvider
import MockProvider
import PAMProvider
import ProviderPlugins
import Synchronization
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// Before anything changes them: what the command will get back before exec.
LaunchSignals.record()

let registry = ProviderRegistry([
    MockProviderPlugin.self, PAMProviderPlugin.self, FileProviderPlugin.self, DebugProviderPlugin.self,
])
let arguments = CommandLine.arguments.dropFirst()

let invocation: Invocation
do {
    guard let parsed = try Invocation.parse(arguments, registry: registry) else {
        print(Invocation.usage(registry: registry))
        exit(0)
    }
    invocation = parsed
} catch {
    fail(.usage, "\(error)\n\(Invocation.shortUsage)")
}

if let path = invocation.checksConfiguration {
    do {
        let stack = try ConfigurationFile.load(path, registry: registry)
        _ = try stack.makeChain(registry: registry)  // Every provider can be built with its options.
        let check = StackCheck(stack, registry: registry)
        print(check.resolved.joined(separator: "\n"))
        for warning in check.warnings { writeStandardError("gatekeeper-run: warning: \(warning)\n") }
        exit(0)
    } catch {
        writeStandardError("gatekeeper-run: \(error)\n")
        exit(1)
    }
}

let provider: any AuthProvider
var settings = Gatekeeper.Configuration()
do {
    if let path = invocation.configuration {
        let stack = try ConfigurationFile.load(path, registry: registry)
        settings = stack.gatekeeperConfiguration()
        provider = try stack.makeChain(registry: registry)
    } else {
        let single = try invocation.selection.makeProvider()
        // --explain traces a one-entry stack.
        provider = invocation.explains ? ProviderChain(name: single.name, [.init(.required, single)]) : single
    }
} catch let error as ConfigurationError {
    fail(.unavailable, "\(error)")
} catch {
    fail(ExitStatus(configuration: error), "\(error)")
}

/// The trace of the login, on standard error, when --explain asked for it.
func explain() {
    guard invocation.explains, let trace = (provider as? ProviderChain)?.lastTrace else { return }
    writeStandardError(trace.description + "\n")
}

// Without a password on standard input, prompts go to the controlling terminal, or — when there is none —
// are read from standard input line by line, so the tool can be scripted.
let terminal = TerminalConversation.controllingTerminal()
var stdinPassword: Secret?
if invocation.passwordFromStdin {
    if invocation.user == nil && terminal == nil {
        fail(.usage, "--password-stdin needs --user when there is no terminal to ask for the user name.")
    }
    stdinPassword = await TerminalConversation.passwordFromStandardInput()
}
let conversation = RunConversation(
    user: invocation.user,
    password: stdinPassword,
    prompter: terminal ?? TerminalConversation(input: 0, output: 2)
)

let gatekeeper = Gatekeeper(
    provider: provider,
    configuration: .init(
        idleTimeout: settings.idleTimeout,
        absoluteTimeout: settings.absoluteTimeout,
        maxAttempts: stdinPassword == nil ? settings.maxAttempts : 1,
        lockoutThreshold: settings.lockoutThreshold,
        lockoutDuration: settings.lockoutDuration,
        terminal: ControllingTerminal.name(),
        requestingUser: ControllingTerminal.invokingUser()
    )
)
let requirement: Requirement = invocation.group.map { .member(of: $0) } ?? .signedIn
let command = invocation.command

// Ctrl-C while the provider works cancels the login (exit 130) instead of killing the process mid-way.
let pendingRun = Mutex<(task: Task<Access<Never>, any Error>?, interrupted: Bool)>((nil, false))
let interrupts = InterruptMonitor {
    // The terminal echoed ^C without a line break; end the line before the message that follows.
    if isatty(2) == 1 { _ = write(2, "\n", 1) }
    pendingRun.withLock { pending in
        pending.interrupted = true
        pending.task?.cancel()
    }
}
let run = Task {
    try await RequiresAuthentication<Never>(requirement) { identity in
        explain()
        return try execute(command, as: identity)
    }.run(through: gatekeeper, conversation: conversation)
}
pendingRun.withLock { pending in
    pending.task = run
    if pending.interrupted { run.cancel() }
}

switch await run.result {
case .success(.dismissed(let reason)):
    interrupts.stop()
    explain()
    fail(ExitStatus(dismissal: reason), reason.description)
case .failure(let error as CommandError):
    fail(error.status, error.message)
case .failure(let error):
    fail(.cannotExecute, "\(command[0]): \(error)")
}
