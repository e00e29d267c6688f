import Authentication
import BlockingPools
import GatekeeperBackends
import GatekeeperHost
import GatekeeperSupport
import HostProtection
import OfflineCache
public import ProviderPlugins
import TerminalLogin
public import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// gatekeeper-run: runs a command only after the person signs in (and, with `--group`, belongs to a
/// group); checks configurations and audit logs; unlocks accounts and forgets remembered logins.
public struct RunCommand {
    static let tool = "gatekeeper-run"

    /// The tool: reads the process's command line, does what it asks, and exits (or execs the command).
    public static func main() -> Never {
        // Before anything changes them: what the command will get back before exec.
        LaunchSignals.record()
        let registry = BuiltInBackends.registry
        let invocation = readCommandLine(of: tool, usage: RunInvocation.shortUsage) { arguments throws(UsageError) in
            try RunInvocation.parse(arguments, registry: registry)
        }
        exitTool(perform(invocation, registry: registry))
    }

    /// Does what `invocation` asks, saying what it has to say on `output`; answers the status the tool exits
    /// with. A command to run replaces the process (`exec`) and never returns here.
    public static func perform(
        _ invocation: RunInvocation, registry: ProviderRegistry,
        output: ToolOutput = .standard
    ) -> ExitStatus {
        do throws(ToolExit) {
            try RunCommand(invocation, registry: registry, output: output).perform()
            return .success
        } catch {
            return ended(error, tool: tool, output: output)
        }
    }

    let invocation: RunInvocation
    let registry: ProviderRegistry
    let output: ToolOutput

    init(_ invocation: RunInvocation, registry: ProviderRegistry, output: ToolOutput) {
        self.invocation = invocation
        self.registry = registry
        self.output = output
    }

    /// One action; a failure ends it with its status and message.
    func perform() throws(ToolExit) {
        switch invocation.action {
        case .help: output.print(RunInvocation.usage(registry: registry))
        case .checkConfig(let path): try checkConfiguration(path)
        case .verifyAudit(let path): try verifyAudit(path)
        case .refreshOffline: try refreshOffline(stack: try readConfiguration()?.stack)
        case .unlock(let name):
            let configuration = try readConfiguration()
            try unlock(name, host: host(configuration), backend: administeringBackend(configuration?.stack))
        case .forget:
            let configuration = try readConfiguration()
            try forget(
                stack: configuration?.stack, host: host(configuration),
                backend: administeringBackend(configuration?.stack))
        case .changePassword, .run: try signIn(try readConfiguration())
        }
    }

    /// A problem that does not stop the login (an audit log that cannot be written), said once.
    var warn: @Sendable (String) -> Void {
        { [output] message in output.error("\(Self.tool): warning: \(message)") }
    }

    // MARK: Run nothing

    func checkConfiguration(_ path: String) throws(ToolExit) {
        do {
            let loaded = try ConfigurationFile.read(path, registry: registry)
            _ = try loaded.stack.makeChain(registry: registry)  // Every provider can be built with its options.
            let check = StackCheck(loaded.stack, settings: loaded.settings.lines, registry: registry)
            output.print(check.resolved.joined(separator: "\n"))
            for warning in check.warnings { warn(warning) }
        } catch {
            throw ToolExit(ExitStatus(code: 1), "\(error)")
        }
    }

    func verifyAudit(_ path: String) throws(ToolExit) {
        let verification: JSONAuditLog.Verification
        do {
            verification = try JSONAuditLog.verify(path)
        } catch {
            throw ToolExit(.unavailable, "\(error)")
        }
        output.print("\(path): \(verification)")
        if verification.problem != nil { throw ToolExit(ExitStatus(code: 1)) }
    }

    func refreshOffline(stack: StackConfiguration?) throws(ToolExit) {
        let provider: any AuthProvider
        do {
            provider = try makeBackend(stack)
        } catch {
            throw ToolExit(ExitStatus(configuration: error), "\(error)")
        }
        let caches = OfflineCachingProvider.caches(in: provider)
        if caches.isEmpty {
            throw ToolExit(.usage, "--refresh-offline: no backend of this stack keeps an offline cache.")
        }
        var unchecked = 0
        for cache in caches {
            let report = ThreadExecutor.run { () async -> OfflineCachingProvider.RefreshReport in
                await cache.refresh(dueOnly: false)
            }.get()
            unchecked += report.unchecked
            output.print(
                "\(cache.name) (\(cache.directoryPath)): \(report.confirmed) confirmed, \(report.removed) forgotten, "
                    + "\(report.unchecked) not checked\(report.unchecked > 0 ? " (the directory could not say)" : "")")
        }
        if unchecked > 0 { throw ToolExit(.unavailable) }
    }

    // MARK: The backend and the host

    /// The configuration file (`--config`): `nil` without one. A refused file is reported to syslog
    /// (nothing of it is used, its audit lines included).
    func readConfiguration() throws(ToolExit) -> ConfigurationFile.Loaded? {
        guard let path = invocation.configuration else { return nil }
        let loaded: ConfigurationFile.Loaded
        do {
            loaded = try ConfigurationFile.read(path, registry: registry)
        } catch {
            HostSettings.reportRefused(error, tool: Self.tool)
            throw ToolExit(.unavailable, "\(error)")
        }
        if invocation.stateDirectory != nil,
            let refusal = HostSettings.stateDirectoryRefusal(configurationOwner: loaded.owner)
        {
            throw ToolExit(.usage, "\(refusal) (\(path)).")
        }
        return loaded
    }

    /// The protections around every login, from the configuration's settings (and `--state-dir`).
    func host(_ configuration: ConfigurationFile.Loaded?) -> HostSettings {
        HostSettings(configuration?.settings, stateDirectory: invocation.stateDirectory)
    }

    /// The backend: the configuration's stack or the provider named. Administration (--unlock, -k, -K) uses
    /// it, when it can be built, to name accounts as the backend spells them; without one, names as given.
    func makeBackend(_ stack: StackConfiguration?) throws -> any AuthProvider {
        if let stack { return try stack.makeChain(registry: registry) }
        let single = try invocation.selection.makeProvider()
        // --explain traces a one-entry stack.
        return invocation.explains ? ProviderChain(name: single.name, [.init(.required, single)]) : single
    }

    // MARK: Administration

    /// The account an administrator names with `--unlock USER` or `-K --user USER`, as the backend spells it
    /// (`ALICE` is alice where the directory says so); a name the backend knows nothing of is refused, so no
    /// file is made for it and nothing of it is written down. Without a backend, the name as given.
    func administeredAccount(_ name: String, for option: String, backend: (any AuthProvider)?) throws(ToolExit)
        -> (name: String, known: Bool)
    {
        let typed: String
        do throws(AuthError) {
            typed = try Username.validate(name)
        } catch {
            throw ToolExit(.invalidInput, "\(option): \(error.description)")
        }
        let lookup = ThreadExecutor.run { () async -> AccountLookup? in await backend?.lookUpAccount(typed) }
        switch lookup.get() {
        case .known(let canonical, _)?: return (canonical, true)
        case .unknown?:
            throw ToolExit(
                .invalidInput, "\(option): no account of the configured backends is named so; nothing was changed.")
        case .cannotTell?, nil: return (typed, false)
        }
    }

    /// The backend administration names accounts through, when one is named and can be built.
    func administeringBackend(_ stack: StackConfiguration?) -> (any AuthProvider)? {
        stack != nil || invocation.selection.name != nil ? try? makeBackend(stack) : nil
    }

    func unlock(_ name: String, host: HostSettings, backend: (any AuthProvider)?) throws(ToolExit) {
        let account = try administeredAccount(name, for: "--unlock", backend: backend)
        // The files are pam_faillock's, whatever the lockout policy says now.
        do throws(AuthError) {
            try FaillockStore(directory: host.lockoutDirectory).unlock(account.name)
        } catch {
            throw ToolExit(.unavailable, error.reason ?? error.description)
        }
        let audit = host.auditSink(tool: Self.tool, report: warn)
        var event = AuditEvent(
            kind: .unlocked, username: account.known ? account.name : nil, provider: Self.tool,
            detail: ControllingTerminal.invokingUser().map { "by \($0)" })
        if !account.known { event.userDigest = audit.digest(ofUnverifiedName: account.name) }
        audit.record(event)
        output.print("\(TextSafety.escaped(account.name)): failed logins forgotten in \(host.lockoutDirectory)")
    }

    /// Forgets this session's remembered login (`-k`) or every one, or one user's (`-K`).
    func forget(stack: StackConfiguration?, host: HostSettings, backend: (any AuthProvider)?) throws(ToolExit) {
        guard let forgetting = invocation.forgetting else { return }
        let scope = HostSettings.scope(
            stack: stack, provider: invocation.selection.name, options: invocation.selection.options)
        let cache = host.loginCache(scope: scope, report: warn)
        switch forgetting {
        case .session:
            guard let session = TerminalSession.current() else { return }
            do throws(AuthError) { try cache?.forget(session) } catch {
                throw ToolExit(.unavailable, error.reason ?? error.description)
            }
        case .all:
            var user = invocation.user
            if let name = user { user = try administeredAccount(name, for: "-K --user", backend: backend).name }
            cache?.forgetAll(of: user)
        }
    }
}
