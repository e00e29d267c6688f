import Authentication
import BlockingPools
import GatekeeperHost
import GatekeeperSupport
import HostProtection
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension RunCommand {
    /// Signs in, then runs the command (`exec`) or changes the password (`--change-password`).
    func signIn(_ configuration: ConfigurationFile.Loaded?) throws(ToolExit) {
        // What `parse` refuses, refused for an invocation a host made itself too.
        if case .run(let command) = invocation.action, command.isEmpty { throw ToolExit(.usage, "No command given.") }
        if invocation.action == .changePassword && invocation.passwordFromStdin {
            throw ToolExit(
                .usage, "--change-password asks the new password twice; it cannot come from standard input.")
        }
        let (stack, host) = (configuration?.stack, host(configuration))
        let provider: any AuthProvider
        do {
            provider = try makeBackend(stack)
        } catch let error as ConfigurationError where error.location != nil {
            HostSettings.reportRefused(error, tool: Self.tool)
            throw ToolExit(.unavailable, "\(error)")
        } catch {
            throw ToolExit(ExitStatus(configuration: error), "\(error)")
        }
        try forget(stack: stack, host: host, backend: provider)

        // Without a password on standard input, prompts go to the controlling terminal, or — when there is
        // none — are read from standard input line by line, so the tool can be scripted.
        let terminal = TerminalConversation.controllingTerminal()
        var stdinPassword: Secret?
        if invocation.passwordFromStdin {
            if invocation.user == nil && terminal == nil {
                throw ToolExit(
                    .usage, "--password-stdin needs --user when there is no terminal to ask for the user name.")
            }
            // Cancelled at the terminal (Ctrl-C, Ctrl-D): nothing was tried, as for a cancelled prompt.
            guard let password = output.passwordFromStandardInput() else {
                throw ToolExit(.cancelled, AuthError.cancelled.description)
            }
            stdinPassword = password
        }
        let conversation = RunConversation(
            user: invocation.user, password: stdinPassword,
            prompter: terminal ?? TerminalConversation(input: 0, output: 2))

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
                provider: provider, stack: stack,
                selection: (invocation.selection.name, invocation.selection.options), settings: host,
                context: .init(
                    tool: Self.tool, terminal: ControllingTerminal.name(),
                    requestingUser: ControllingTerminal.invokingUser(),
                    place: LoginPlace.current(fromTerminal: terminal != nil), remembersLogins: stdinPassword == nil,
                    maxAttempts: stdinPassword == nil ? nil : 1, changesExpiredPasswords: stdinPassword == nil,
                    taskExecutor: mainThread, readsGroups: invocation.group != nil),
                report: warn)
        } catch {
            throw ToolExit(.unavailable, error.reason ?? error.description)
        }
        try run(login.gatekeeper, conversation: conversation, on: mainThread)
    }

    /// The login on `mainThread`, and what follows it: the command's `exec`, or the password's change.
    ///
    /// Ctrl-C while the provider works cancels the login (exit 130) instead of killing the process mid-way;
    /// SIGTERM and SIGHUP end it the same way (exit 143, 129). Either way every helper the login started —
    /// and anything a helper started, even in a session of its own — is stopped before the tool exits.
    private func run(_ gatekeeper: Gatekeeper, conversation: RunConversation, on mainThread: ThreadExecutor)
        throws(ToolExit)
    {
        let requirement: Requirement = invocation.group.map { .member(of: $0) } ?? .signedIn
        if output.endsProcess { ChildProcesses.becomeSubreaper() }
        // The login's task, and the first signal that came.
        let pending = Locked<(task: Task<Void, Never>?, signal: Int32?)>((nil, nil))
        // Signals are read by a thread of their own until the tool exits or, once it has stopped its helpers,
        // execs. A signal ignored at launch (nohup's SIGHUP) stays so.
        let interrupts = SignalThread(signals: [SIGINT, SIGTERM, SIGHUP].filter { !LaunchSignals.wasIgnored($0) }) {
            number in
            // The terminal echoed ^C without a line break; end the line before the message that follows.
            if number == SIGINT, isatty(2) == 1 { _ = write(2, "\n", 1) }
            pending.withLock { pending in
                if pending.signal == nil { pending.signal = number }
                pending.task?.cancel()
            }
        }
        // The identity admitted, or `nil` once the password is changed (--change-password).
        let run = mainThread.run { [invocation] () async -> Traced<Result<Identity?, AuthError>> in
            if invocation.action == .changePassword {
                // Signed in through the one admission path, then changed through the stack's two passes.
                let change = await gatekeeper.changePasswordWithTrace(conversation: conversation)
                return Traced(change.outcome.map { nil }, trace: change.trace)
            }
            let login = await gatekeeper.authorizeWithTrace(requirement, conversation: conversation)
            return Traced(login.outcome.map { $0 }, trace: login.trace)
        } started: { task in
            pending.withLock { pending in
                pending.task = task
                if pending.signal != nil { task.cancel() }
            }
        }
        let answer = run.get()
        // In a tool the watch goes on until the exit (below); in a host that goes on, it ends here.
        defer { if !output.endsProcess { interrupts?.stop() } }
        // The trace of the login (or the change), on standard error, when --explain asked for it.
        if invocation.explains, let trace = answer.trace { output.error(trace.description) }
        // The signal thread goes on until the tool exits: a second Ctrl-C while the helpers are stopped is only
        // handed on, never the end of the tool with a helper still running.
        if case .success(nil) = answer.outcome {
            // Changed, even if a signal came while it was written: a change once begun is finished and said so.
            output.error("\(Self.tool): the password was changed.")
            return
        }
        if let number = pending.withLock({ $0.signal }), number != SIGINT {
            throw ToolExit(ExitStatus(code: 128 + number), "stopped by signal \(number)")
        }
        let identity: Identity
        switch answer.outcome {
        case .success(let admitted?): identity = admitted
        case .success(nil): return  // Said above.
        case .failure(let reason): throw ToolExit(ExitStatus(dismissal: reason), reason.description)
        }
        guard case .run(let command) = invocation.action else { return }
        try execute(command, as: identity) {
            // Helpers stopped: the signals are watched no longer, and one that came meanwhile is the tool's,
            // never the command's (which must not start after it).
            interrupts?.stop()
            return pending.withLock { $0.signal }
        }
    }
}
