// gatekeeper-run: runs a command only after the person signs in (and, with --group, belongs to a group).
import Authentication
import GatekeeperBackends
import GatekeeperHost
import GatekeeperSupport
import HostProtection
import OfflineCache
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// Before anything changes them: what the command will get back before exec.
LaunchSignals.record()

// The built-in backends, and a shared-object plugin by absolute path or by short name.
let registry = BuiltInBackends.registry
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

if let path = invocation.verifiesAudit {
    do {
        let verification = try JSONAuditLog.verify(path)
        print("\(path): \(verification)")
        exit(verification.problem == nil ? 0 : 1)
    } catch {
        fail(.unavailable, "\(error)")
    }
}

/// A problem that does not stop the login (an audit log that cannot be written), said once.
@Sendable func warn(_ message: String) {
    writeStandardError("gatekeeper-run: warning: \(message)\n")
}

var stack: StackConfiguration?
if let path = invocation.configuration {
    do {
        let loaded = try ConfigurationFile.read(path, registry: registry)
        if invocation.stateDirectory != nil,
            let refusal = HostSettings.stateDirectoryRefusal(configurationOwner: loaded.owner)
        {
            fail(.usage, "\(refusal) (\(path)).")
        }
        stack = loaded.stack
    } catch {
        // Nothing of a refused file is used, its audit lines included: syslog hears of it.
        HostSettings.reportRefused(error, tool: "gatekeeper-run")
        fail(.unavailable, "\(error)")
    }
}
let host = HostSettings(stack, stateDirectory: invocation.stateDirectory)

// The backend: the configuration's stack or the provider named. Administration (--unlock, -k, -K) uses
// it, when it can be built, to name accounts as the backend spells them; without one, names as given.
@MainActor func makeBackend() throws -> any AuthProvider {
    if let stack { return try stack.makeChain(registry: registry) }
    let single = try invocation.selection.makeProvider()
    // --explain traces a one-entry stack.
    return invocation.explains ? ProviderChain(name: single.name, [.init(.required, single)]) : single
}
if invocation.refreshesOffline {
    let provider: any AuthProvider
    do {
        provider = try makeBackend()
    } catch {
        fail(ExitStatus(configuration: error), "\(error)")
    }
    let caches = OfflineCachingProvider.caches(in: provider)
    if caches.isEmpty { fail(.usage, "--refresh-offline: no backend of this stack keeps an offline cache.") }
    var unchecked = 0
    for cache in caches {
        let report = ThreadExecutor.run { () async -> OfflineCachingProvider.RefreshReport in
            await cache.refresh(dueOnly: false)
        }.get()
        unchecked += report.unchecked
        print(
            "\(cache.name) (\(cache.directoryPath)): \(report.confirmed) confirmed, \(report.removed) forgotten, "
                + "\(report.unchecked) not checked\(report.unchecked > 0 ? " (the directory could not say)" : "")")
    }
    exit(unchecked > 0 ? ExitStatus.unavailable.code : 0)
}

let administers = invocation.command.isEmpty && !invocation.changesPassword
let backend: (any AuthProvider)?
if administers {
    backend = stack != nil || invocation.selection.name != nil ? try? makeBackend() : nil
} else {
    do {
        backend = try makeBackend()
    } catch let error as ConfigurationError where error.location != nil {
        HostSettings.reportRefused(error, tool: "gatekeeper-run")
        fail(.unavailable, "\(error)")
    } catch {
        fail(ExitStatus(configuration: error), "\(error)")
    }
}

/// The account an administrator names with `--unlock USER` or `-K --user USER`, as the backend spells it
/// (`ALICE` is alice where the directory says so); a name the backend knows nothing of is refused, so no
/// file is made for it and nothing of it is written down. Without a backend, the name as given.
func administeredAccount(_ name: String, for option: String) -> (name: String, known: Bool) {
    let typed: String
    do throws(AuthError) {
        typed = try Username.validate(name)
    } catch {
        fail(.invalidInput, "\(option): \(error.description)")
    }
    let backend = backend
    let lookup = ThreadExecutor.run { () async -> AccountLookup? in await backend?.lookUpAccount(typed) }
    switch lookup.get() {
    case .known(let canonical, _)?: return (canonical, true)
    case .unknown?:
        fail(.invalidInput, "\(option): no account of the configured backends is named so; nothing was changed.")
    case .cannotTell?, nil: return (typed, false)
    }
}

if let name = invocation.unlocks {
    // The files are pam_faillock's, whatever the lockout policy says now.
    let account = administeredAccount(name, for: "--unlock")
    do throws(AuthError) {
        try FaillockStore(directory: host.lockoutDirectory).unlock(account.name)
    } catch {
        fail(.unavailable, error.reason ?? error.description)
    }
    let audit = host.auditSink(tool: "gatekeeper-run", report: warn)
    var event = AuditEvent(
        kind: .unlocked, username: account.known ? account.name : nil, provider: "gatekeeper-run",
        detail: ControllingTerminal.invokingUser().map { "by \($0)" })
    if !account.known { event.userDigest = audit.digest(ofUnverifiedName: account.name) }
    audit.record(event)
    print("\(TextSafety.escaped(account.name)): failed logins forgotten in \(host.lockoutDirectory)")
    exit(0)
}

if invocation.forgetsSession || invocation.forgetsAll {
    let scope = HostSettings.scope(
        stack: stack, provider: invocation.selection.name, options: invocation.selection.options)
    let cache = host.loginCache(scope: scope, report: warn)
    if invocation.forgetsSession, let session = TerminalSession.current() {
        do throws(AuthError) { try cache?.forget(session) } catch {
            fail(.unavailable, error.reason ?? error.description)
        }
    }
    if invocation.forgetsAll {
        var user = invocation.user
        if let name = user { user = administeredAccount(name, for: "-K --user").name }
        cache?.forgetAll(of: user)
    }
}
if administers { exit(0) }
// Built above whenever there is a command to run.
let provider: any AuthProvider = backend!

// Without a password on standard input, prompts go to the controlling terminal, or — when there is none —
// are read from standard input line by line, so the tool can be scripted.
let terminal = TerminalConversation.controllingTerminal()
var stdinPassword: Secret?
if invocation.passwordFromStdin {
    if invocation.user == nil && terminal == nil {
        fail(.usage, "--password-stdin needs --user when there is no terminal to ask for the user name.")
    }
    // Cancelled at the terminal (Ctrl-C, Ctrl-D): nothing was tried, as for a cancelled prompt.
    guard let password = TerminalConversation.passwordFromStandardInput() else {
        fail(.cancelled, AuthError.cancelled.description)
    }
    stdinPassword = password
}
let conversation = RunConversation(
    user: invocation.user,
    password: stdinPassword,
    prompter: terminal ?? TerminalConversation(input: 0, output: 2)
)

// Everything around the login — lockout, remembered logins, fail delay, audit — and the one admission
// path through them. A login remembered for this place (this invoking user, this terminal session or
// parent, answers from the same terminal or the same standard input) is used only once the typed name
// names its account, and only after the backend and the lockout agree; a password given on standard
// input is always checked. Without a usable lockout, nobody signs in.
// The login runs on this thread, which lends itself to the login's tasks as their executor: a login
// that only waits on its provider starts no thread of Swift's pool.
let mainThread = ThreadExecutor()
let login: HostLogin
do throws(AuthError) {
    login = try HostLogin(
        provider: provider, stack: stack, selection: (invocation.selection.name, invocation.selection.options),
        settings: host,
        context: .init(
            tool: "gatekeeper-run", terminal: ControllingTerminal.name(),
            requestingUser: ControllingTerminal.invokingUser(),
            place: LoginPlace.current(fromTerminal: terminal != nil), remembersLogins: stdinPassword == nil,
            maxAttempts: stdinPassword == nil ? nil : 1, changesExpiredPasswords: stdinPassword == nil,
            taskExecutor: mainThread, readsGroups: invocation.group != nil),
        report: warn)
} catch {
    fail(.unavailable, error.reason ?? error.description)
}
let gatekeeper = login.gatekeeper

/// The trace of the login, on standard error, when --explain asked for it.
func explain() {
    guard invocation.explains, let trace = gatekeeper.latestTrace else { return }
    writeStandardError(trace.description + "\n")
}
let requirement: Requirement = invocation.group.map { .member(of: $0) } ?? .signedIn
let command = invocation.command

// Ctrl-C while the provider works cancels the login (exit 130) instead of killing the process mid-way;
// SIGTERM and SIGHUP end it the same way (exit 143, 129). Either way every helper the login started —
// and anything a helper started, even in a session of its own — is stopped before the tool exits.
ChildProcesses.becomeSubreaper()
// The run's answer: `nil` for a password changed (--change-password), which runs no command.
let pendingRun = Locked<(task: Task<Void, Never>?, signal: Int32?)>((nil, nil))
// The login runs on this thread (ThreadExecutor); signals are read by a thread of their own until the tool
// exits or, once it has stopped its helpers, execs. A signal ignored at launch (nohup's SIGHUP) stays so.
let interrupts = SignalThread(signals: [SIGINT, SIGTERM, SIGHUP].filter { !LaunchSignals.wasIgnored($0) }) { number in
    // The terminal echoed ^C without a line break; end the line before the message that follows.
    if number == SIGINT, isatty(2) == 1 { _ = write(2, "\n", 1) }
    pendingRun.withLock { pending in
        if pending.signal == nil { pending.signal = number }
        pending.task?.cancel()
    }
}
let result = mainThread.run { () async throws -> Access<Never>? in
    if invocation.changesPassword {
        // Signed in through the one admission path, then changed through the stack's two passes.
        do throws(AuthError) {
            try await gatekeeper.changePassword(conversation: conversation)
        } catch {
            explain()
            return Access<Never>.dismissed(error)
        }
        explain()
        return nil
    }
    return try await RequiresAuthentication<Never>(requirement) { identity in
        explain()
        return try execute(command, as: identity) {
            // Helpers stopped: the signals are watched no longer, and one that came meanwhile is the
            // tool's, never the command's (which must not start after it).
            interrupts?.stop()
            return pendingRun.withLock { $0.signal }
        }
    }.run(through: gatekeeper, conversation: conversation)
} started: { run in
    pendingRun.withLock { pending in
        pending.task = run
        if pending.signal != nil { run.cancel() }
    }
}
// The signal thread goes on until the tool exits: a second Ctrl-C while the helpers are stopped is only
// handed on, never the end of the tool with a helper still running.
if case .success(nil) = result {
    // Changed, even if a signal came while it was written: a change once begun is finished and said so.
    writeStandardError("gatekeeper-run: the password was changed.\n")
    exit(0)
}
if let number = pendingRun.withLock({ $0.signal }), number != SIGINT {
    fail(ExitStatus(code: 128 + number), "stopped by signal \(number)")
}
switch result {
case .success(nil):
    exit(0)  // Said above.
case .success(.dismissed(let reason)?):
    explain()
    fail(ExitStatus(dismissal: reason), reason.description)
case .failure(let error as CommandError):
    fail(error.status, error.message)
case .failure(let error):
    fail(.cannotExecute, "\(command[0]): \(error)")
}
