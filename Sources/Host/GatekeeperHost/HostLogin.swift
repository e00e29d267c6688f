public import Authentication
public import HostProtection
import ProviderPlugins

/// Everything a host tool puts around its logins, assembled from its configuration in one place: the
/// stack, the lockout store, the login cache, the fail delay and the audit sinks — and the
/// ``Gatekeeper`` whose one admission path every login of the tool takes:
///
/// 1. the name is read and validated;
/// 2. the backend names the account (``AuthProvider/lookUpAccount(_:)``): its own spelling is the key
///    of everything that follows;
/// 3. a login remembered for that account in this place (``LoginPlace``) is accepted, if the backend and
///    the lockout still agree — or the attempt is counted under the lockout's lock *before* the stack
///    checks anything;
/// 4. the stack's answer clears the count, lets it stand, or takes it back;
/// 5. the requirement (a group) is checked, and everything is audited.
///
/// `gatekeeper-run`, `gatekeeper-repl` and any Swift tool that links this module get the same behaviour
/// from this code; a tool only parses its arguments and maps the outcome to an exit status.
public final class HostLogin: Sendable {
    /// What the tool is and where it runs.
    public struct Context: Sendable {
        /// Where the login comes from: the tool's name as its service, the terminal (PAM's `PAM_TTY`), who
        /// runs the tool (`PAM_RUSER`), where the person logs in from (`PAM_RHOST`).
        public var origin: LoginOrigin
        /// The tool's name: the syslog identifier and the service recorded with failures (the ``origin``'s).
        public var tool: String {
            get { origin.service }
            set { origin.service = newValue }
        }
        /// Where the login is made, for remembered logins; `nil` remembers nothing.
        public var place: LoginPlace?
        /// Whether logins are remembered and remembered ones used (off when a password comes from a
        /// script, which must always be checked).
        public var remembersLogins: Bool
        /// Tries per login, instead of the configuration's.
        public var maxAttempts: Int?
        /// Count failures in memory, for this process alone: only for a demonstration (the demo backend
        /// without a configuration). Every real backend and every configuration counts where every tool does.
        public var countsInMemory: Bool
        /// Whether an expired password is changed during the login (off when the password comes from a
        /// script, which cannot answer the new password's questions).
        public var changesExpiredPasswords: Bool
        /// The executor the gatekeeper's own tasks prefer (``Gatekeeper/Configuration/taskExecutor``).
        public var taskExecutor: (any TaskExecutor)?
        /// Whether anything reads the identity's groups (``Gatekeeper/Configuration/Login/readsGroups``).
        public var readsGroups: Bool

        public init(
            tool: String,
            terminal: String? = nil,
            requestingUser: String? = nil,
            place: LoginPlace? = nil,
            remembersLogins: Bool = true,
            maxAttempts: Int? = nil,
            countsInMemory: Bool = false,
            changesExpiredPasswords: Bool = true,
            taskExecutor: (any TaskExecutor)? = nil,
            readsGroups: Bool = true,
            remoteHost: String? = nil
        ) {
            origin = LoginOrigin(
                service: tool, terminal: terminal, remoteHost: remoteHost, requestingUser: requestingUser)
            self.place = place
            self.remembersLogins = remembersLogins
            self.maxAttempts = maxAttempts
            self.countsInMemory = countsInMemory
            self.changesExpiredPasswords = changesExpiredPasswords
            self.taskExecutor = taskExecutor
            self.readsGroups = readsGroups
        }
    }

    public let settings: HostSettings
    public let provider: any AuthProvider
    /// Where failed logins are counted.
    public let lockout: any LockoutStore
    public let audit: any AuditSink
    /// The login cache, when logins are remembered and its directory can be used.
    public let cache: LoginCache?
    /// The gatekeeper every login of the tool goes through.
    public let gatekeeper: Gatekeeper

    /// - Parameters:
    ///   - stack: The configuration, when there is one (its settings are `settings`').
    ///   - selection: The one provider named on the command line (its name and options), when there is no
    ///     configuration: remembered logins are kept apart by what they were made through.
    ///   - report: Told of what does not stop a login (an audit log that cannot be opened, a cache that
    ///     cannot be used), once.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the lockout cannot be used: nobody signs
    ///   in without it.
    public init(
        provider: any AuthProvider,
        stack: StackConfiguration?,
        selection: (name: String?, options: [String: String]) = (nil, [:]),
        settings: HostSettings,
        context: Context,
        report: @escaping @Sendable (String) -> Void
    ) throws(AuthError) {
        self.settings = settings
        self.provider = provider
        audit = settings.auditSink(tool: context.tool, report: report)
        lockout = context.countsInMemory ? MemoryLockoutStore() : try settings.lockoutStore()
        // A tool that only shows what others remembered (the REPL) creates no cache directory to show it.
        let cache = settings.loginCache(
            scope: HostSettings.scope(stack: stack, provider: selection.name, options: selection.options),
            creating: context.remembersLogins, report: report)
        self.cache = cache
        var configuration = settings.gatekeeper
        if let attempts = context.maxAttempts { configuration.attempts.perLogin = attempts }
        configuration.origin = context.origin
        configuration.login.changesExpiredPasswords = context.changesExpiredPasswords
        configuration.taskExecutor = context.taskExecutor
        configuration.login.readsGroups = context.readsGroups
        let remembered: (any RememberedLogins)? =
            context.remembersLogins ? context.place.flatMap { place in cache?.remembering(at: place) } : nil
        let audit = self.audit
        let lockout = self.lockout
        gatekeeper = Gatekeeper(
            provider: provider, configuration: configuration, audit: audit, lockout: lockout, remembered: remembered)
    }

    /// A gatekeeper of its own for one login among many a process serves at once (gatekeeperd's: one per
    /// PAM call), sharing this host's provider, lockout and audit — so every login is counted where every
    /// other is — with its own `origin`: the PAM service, terminal, remote host and requesting user of the
    /// program that asked, whose process is `clientProcessID`. It remembers no login (the calling program
    /// keeps its own, as sudo does).
    public func gatekeeper(origin: LoginOrigin, clientProcessID: Int32? = nil) -> Gatekeeper {
        var configuration = gatekeeper.configuration
        configuration.origin = origin
        configuration.clientProcessID = clientProcessID
        return Gatekeeper(provider: provider, configuration: configuration, audit: audit, lockout: lockout)
    }
}
