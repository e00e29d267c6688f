public import Authentication
import GatekeeperSupport

/// The process's pools of threads for blocking work, in one place: what each is for, how big it is, and
/// how a host sizes or replaces one before its first use (as swift-nio keeps its process-wide singletons
/// in `NIOSingletons`, each sizable).
///
/// Each pool is made the first time a login needs it, with its role's defaults, unless a host gave it a
/// size or a pool of its own first:
///
/// ```swift
/// // A service that runs 200 PAM logins at once, early in main:
/// try ProcessPools.configure(.pam, maxThreads: 200)
/// ```
///
/// Pools a backend is given in its configuration (`LDAPAuthProvider.Configuration.threads`,
/// `OIDCAuthProvider.Configuration.threads`, `PAMAuthProvider.Configuration.threads`,
/// `FileAuthProvider.Configuration.threads`) are used instead of these; a terminal's questions have a thread
/// of their own per conversation on a terminal (TerminalLogin's `TerminalConversation`).
///
/// The package's other process-wide state, each kept where its module can reach it, and each behind one lock:
/// - the pools' idle threads, lent between pools that share threads (``BlockingPool``'s `idle`);
/// - the shared-object plugins loaded, once per file for the process's life (PluginHost's
///   `SharedObjectPlugin.loaded`: a plugin cannot be unloaded safely);
/// - the attempts each lockout directory has in flight (HostProtection's `AttemptsInFlight.process`);
/// - the key that names unknown users in audit records (Authentication's `AuditDigest.processKey`);
/// - the signal handlers a terminal login installs and the terminal's saved state (TerminalLogin's
///   `InterruptMonitor` and `TerminalRestoration`), and the signal state a tool started with (ToolSupport's
///   `LaunchSignals`), which a command gets back before exec;
/// - each directory's LDAP connections, shared by every provider naming it the same way and held while one
///   does (LDAPProvider's `LDAPConnectionPool.shared(for:)`).
public enum ProcessPools {
    /// What a pool is for. Each role's pool is separate so that work that can wait on a person, or that
    /// changes the thread it runs on, can never starve or taint the others.
    public enum Role: String, CaseIterable, Sendable {
        /// Blocking C work that ends on its own, with no person in the loop: account look-ups, LDAP
        /// operations, HTTP requests, reading files (``BlockingPool/shared``). 64 at once, 4 idle threads kept.
        case shared
        /// PAM transactions, one thread each from `pam_start` to `pam_end` (a session held until sign-out
        /// keeps its thread). 64 at once. Its threads run nothing else: a transaction may change its thread's
        /// credentials, session keyring or security context.
        case pam
        /// One-time code checks, one at a time: liboath reads its file before it takes its lock, so two
        /// checks in one process could both accept a code. Not sizable beyond one.
        case oneTimeCodes
        /// Helper programs a login runs (their conversations wait on a person). 64 at once.
        case helpers
        /// Shared-object plugins' logins (foreign code; their threads run nothing else). 64 at once.
        case plugins
        /// A Swift plugin's questions to its host, asked from these threads so the host's tasks are never
        /// starved by blocked cooperative threads (the host's code runs on them: nothing else does). 64.
        case pluginExport
        /// Password checks and new hashes (a users file's, the offline cache's): one per processor, so a
        /// burst of logins cannot hash with more memory or threads than that.
        case passwordHashing

        /// Whether the role's threads may run other pools' jobs.
        var sharesThreads: Bool {
            switch self {
            case .pam, .plugins, .pluginExport: false
            case .shared, .oneTimeCodes, .helpers, .passwordHashing: true
            }
        }

        /// The most jobs a pool of this role may run at once.
        var limit: Int { self == .oneTimeCodes ? 1 : Int.max }

        /// The role's size when no host chose: jobs at once, idle threads kept.
        var defaults: (maxThreads: Int, maxIdle: Int) {
            switch self {
            case .shared, .pam, .plugins: (64, 4)
            case .oneTimeCodes: (1, 1)
            case .helpers, .pluginExport: (64, 2)
            case .passwordHashing: (BlockingPool.processorCount, BlockingPool.processorCount)
            }
        }

        /// The role's pool as made when no host chose.
        func makeDefault() -> BlockingPool { pool(maxThreads: defaults.maxThreads, maxIdle: defaults.maxIdle) }

        func pool(maxThreads: Int, maxIdle: Int) -> BlockingPool {
            BlockingPool(
                name: "gatekeeper.\(rawValue)", maxThreads: maxThreads, maxIdle: maxIdle, sharesThreads: sharesThreads)
        }
    }

    /// Why a pool was not configured. Equal when the codes are.
    public struct Refusal: CodedError {
        /// Why. Codes may be added; a `switch` needs a `default`.
        public typealias Code = ErrorCode<Refusal>

        public let code: Code
        public let role: Role

        public var description: String {
            switch code {
            case .alreadyInUse: "the \(role.rawValue) pool is in use already; configure pools before the first login"
            default:
                "that pool cannot serve \(role.rawValue): it shares its threads, runs more at once than allowed, "
                    + "or serves another role"
            }
        }

        /// The role's pool is in use already.
        public static let alreadyInUse = Refusal(code: .alreadyInUse, role: .shared)
        /// The pool cannot serve the role.
        public static let unsuitable = Refusal(code: .unsuitable, role: .shared)
    }

    private static let pools = Pools()

    /// The pool of `role`, made with the role's defaults the first time unless a host configured it.
    public static func pool(_ role: Role) -> BlockingPool { pools.pool(role) }

    /// Sizes `role`'s pool: at most `maxThreads` jobs at once, `maxIdle` idle threads kept (the role's own
    /// default when `nil`). Only before the pool is first used.
    public static func configure(_ role: Role, maxThreads: Int, maxIdle: Int? = nil) throws(Refusal) {
        try pools.configure(role, maxThreads: maxThreads, maxIdle: maxIdle)
    }

    /// Gives `role` a pool of the host's (one it shares with its own work, say). Only before the role's pool
    /// is first used; a pool that shares its threads cannot serve a role whose threads must not be shared.
    public static func replace(_ role: Role, with pool: BlockingPool) throws(Refusal) {
        try pools.replace(role, with: pool)
    }

    /// A set of pools by role: the process's one (``ProcessPools``), or a test's own.
    package final class Pools: Sendable {
        private let pools = Locked<[Role: BlockingPool]>([:])

        package init() {}

        package func pool(_ role: Role) -> BlockingPool {
            pools.withLock { pools in
                if let pool = pools[role] { return pool }
                let pool = role.makeDefault()
                pools[role] = pool
                return pool
            }
        }

        package func configure(_ role: Role, maxThreads: Int, maxIdle: Int?) throws(Refusal) {
            guard maxThreads >= 1, maxThreads <= role.limit, (maxIdle ?? 0) >= 0 else {
                throw Refusal(code: .unsuitable, role: role)
            }
            try replace(role, with: role.pool(maxThreads: maxThreads, maxIdle: maxIdle ?? role.defaults.maxIdle))
        }

        package func replace(_ role: Role, with pool: BlockingPool) throws(Refusal) {
            guard pool.maxThreads <= role.limit, role.sharesThreads || !pool.sharesThreads else {
                throw Refusal(code: .unsuitable, role: role)
            }
            try pools.withLock { pools throws(Refusal) in
                guard pools[role] == nil else { throw Refusal(code: .alreadyInUse, role: role) }
                // Each role's pool is its own: a pool serving another role would let PAM's threads run
                // plugins' code, or a plugin's questions wait behind its own logins.
                guard !pools.values.contains(where: { $0 === pool }) else {
                    throw Refusal(code: .unsuitable, role: role)
                }
                pools[role] = pool
            }
        }
    }
}

extension ErrorCode where Domain == ProcessPools.Refusal {
    /// The role's pool is in use already: a host configures pools before the first login.
    public static var alreadyInUse: Self { Self("alreadyInUse") }
    /// The pool given would let the role's threads run other pools' jobs, run more at once than the role
    /// allows, or serves another role already.
    public static var unsuitable: Self { Self("unsuitable") }
}
