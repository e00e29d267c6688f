public import Authentication
import GatekeeperSupport
public import HostProtection
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a host tool protects every login with, from its configuration file: where failed logins are
/// counted, whether logins are remembered, and where audit events go.
///
/// Without a configuration file (or where it is silent) a tool still counts failures across runs and
/// remembers logins for five minutes, in its state directory: `/var/lib/gatekeeper` (failures) and
/// `/run/gatekeeper` (remembered logins) for root; for another user their runtime directory
/// (`$XDG_RUNTIME_DIR` or `/run/user/UID`, only when it is theirs and private), else
/// `~/.local/state/gatekeeper` — never a name in a shared directory such as `/tmp`, which another user
/// could take first. What the configuration file names wins over the state directory a command line
/// gives, and a configuration owned by root (an administrator's) cannot have its state moved by an
/// invoker at all (``stateDirectoryRefusal(configurationOwner:)``).
public struct HostSettings: Sendable {
    /// The gatekeeper's settings (timeouts, attempts, lockout policy, fail delay).
    public var gatekeeper: Gatekeeper.Configuration
    /// Where failed logins are counted.
    public var lockoutDirectory: String
    /// Where logins are remembered, and for how long (zero: never).
    public var cacheDirectory: String
    public var cacheTimeout: Duration
    /// Where audit events go.
    public var audit: [StackSettings.AuditDestination]

    /// The configuration's `settings` (the defaults, without one), with `stateDirectory` for the
    /// directories the file does not name.
    public init(_ settings: StackSettings?, stateDirectory: String? = nil) {
        gatekeeper = settings?.gatekeeperConfiguration() ?? Gatekeeper.Configuration()
        let (lockout, cache) = stateDirectory.map { ($0 + "/faillock", $0 + "/cache") } ?? Self.defaultDirectories()
        lockoutDirectory = settings?.lockoutDirectory ?? lockout
        cacheDirectory = settings?.cacheDirectory ?? cache
        cacheTimeout = settings?.cacheTimeout ?? .seconds(5 * 60)
        audit = settings?.audit ?? []
    }

    /// Why an invoker may not name a state directory for a configuration owned by `configurationOwner`,
    /// or `nil` when they may: root's configuration is an administrator's, and the lockout and remembered
    /// logins it implies stay where the administrator put them. Root itself may.
    public static func stateDirectoryRefusal(configurationOwner: UInt32, invoker: UInt32? = nil) -> String? {
        let invoker = invoker ?? getuid()
        guard configurationOwner == 0, invoker != 0 else { return nil }
        return "--state-dir cannot move the lockout and remembered logins of a configuration owned by root"
    }

    /// Root's `/var/lib/gatekeeper/faillock` and `/run/gatekeeper/cache`; for another user, both in
    /// their runtime directory, else in `~/.local/state/gatekeeper`.
    static func defaultDirectories() -> (lockout: String, cache: String) {
        let uid = geteuid()
        if uid == 0 { return ("/var/lib/gatekeeper/faillock", "/run/gatekeeper/cache") }
        let environment = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        let base = privateStateBase(uid: uid, runtimeDirectory: environment, home: SystemAccounts.home(of: uid))
        return (base + "/faillock", base + "/cache")
    }

    /// Where a user's state goes: `runtimeDirectory` (`$XDG_RUNTIME_DIR`), else `/run/user/UID`, when it is
    /// a directory of `uid`'s that nobody else may enter (checked without following a link); else
    /// `home/.local/state/gatekeeper`, when the home is `uid`'s and nobody else may write it. A shared
    /// directory is never used, so nobody can make the name first.
    package static func privateStateBase(uid: UInt32, runtimeDirectory: String?, home: String?) -> String {
        for candidate in [runtimeDirectory, "/run/user/\(uid)"].compactMap({ $0 }) where candidate.hasPrefix("/") {
            var info = stat()
            if lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == uid,
                info.st_mode & 0o077 == 0
            {
                return candidate + "/gatekeeper"
            }
        }
        // No home in the user database: a path under /run/user that does not exist, which the lockout then
        // refuses to use (every login is refused, saying why) rather than guessing a shared place.
        // A home of someone else's, or one others may write (a home of /tmp), is no private place either.
        var info = stat()
        guard let home, home.hasPrefix("/"), home != "/", lstat(home, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
            info.st_uid == uid, info.st_mode & 0o022 == 0
        else { return "/run/user/\(uid)/gatekeeper" }
        return home + "/.local/state/gatekeeper"
    }

    /// The failure counter: pam_faillock's files in ``lockoutDirectory``.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the directory cannot be used; the tool
    ///   then refuses to log anyone in rather than run without its lockout.
    public func lockoutStore() throws(AuthError) -> any LockoutStore {
        guard gatekeeper.attempts.lockout != nil else { return MemoryLockoutStore() }
        do {
            return try FaillockStore(directory: lockoutDirectory)
        } catch  where isDefaultLockoutDirectory {
            // An account with no private runtime directory and no usable home (a system account, say).
            throw .providerUnavailable(
                reason: "\(error.reason ?? error.description); name a private state directory with --state-dir, "
                    + "or dir= in the configuration's lockout line")
        }
    }

    /// Whether ``lockoutDirectory`` is the default for the user, neither configured nor given.
    private var isDefaultLockoutDirectory: Bool { lockoutDirectory == Self.defaultDirectories().lockout }

    /// The login cache, or `nil` when logins are not remembered or the directory cannot be used (then
    /// `report` says why, and every login asks for a password).
    /// - Parameters:
    ///   - scope: What logins are made through (``scope(stack:provider:)``): a login is used only under the
    ///     configuration it was made under.
    ///   - creating: `false` for a tool that only reads what others remembered: a missing directory is no
    ///     cache, and is not created.
    public func loginCache(scope: String, creating: Bool = true, report: (String) -> Void) -> LoginCache? {
        guard cacheTimeout > .zero else { return nil }
        do {
            guard creating else {
                return try LoginCache.existing(directory: cacheDirectory, timeout: cacheTimeout, scope: scope)
            }
            return try LoginCache(directory: cacheDirectory, timeout: cacheTimeout, scope: scope)
        } catch {
            report("\(error.reason ?? error.description); logins are not remembered")
            return nil
        }
    }

    /// The audit sinks: the JSON log first (its key names unknown users in every sink), then syslog.
    /// A log that cannot be opened is reported and left out; the login goes on.
    public func auditSink(tool: String, report: @escaping @Sendable (String) -> Void) -> any AuditSink {
        var sinks: [any AuditSink] = []
        // An event the JSON log cannot take goes to syslog instead (the configuration's, or the system's).
        let syslog = audit.lazy.compactMap { destination -> String? in
            if case .syslog(let socket) = destination { socket } else { nil }
        }.first
        for destination in audit {
            switch destination {
            case .json(let path):
                do {
                    let fallback = SyslogAuditSink(
                        socketPath: syslog ?? "/dev/log", identifier: tool, onFailure: report)
                    sinks.insert(try JSONAuditLog(path: path, onFailure: report, fallback: fallback), at: 0)
                } catch {
                    report("\(error.description); audit events are not written there")
                }
            case .syslog(let socket):
                sinks.append(SyslogAuditSink(socketPath: socket, identifier: tool, onFailure: report))
            }
        }
        return sinks.isEmpty ? DiscardingAuditSink() : AuditSinks(sinks)
    }

    /// What logins are made through: every entry of the stack (control, provider, options), or the one
    /// provider and its options. Changing any of it forgets the logins remembered under it. A value that
    /// names a file relative to the working directory (`--users users`) stands for that file's absolute
    /// path, so the same words in two directories are two scopes.
    public static func scope(stack: StackConfiguration?, provider: String?, options: [String: String]) -> String {
        let directory = workingDirectory()
        func resolved(_ value: String) -> String {
            guard !value.hasPrefix("/"), !value.isEmpty, let directory, access(value, F_OK) == 0 else { return value }
            return directory + "/" + value
        }
        func text(_ options: [String: String]) -> String {
            options.sorted { $0.key < $1.key }.map { "\($0.key)=\(resolved($0.value))" }.joined(separator: " ")
        }
        func lines(_ entries: [StackConfiguration.Entry]) -> [String] {
            entries.flatMap { entry in
                entry.isSubstack
                    ? ["substack \(entry.provider) {"] + lines(entry.substack) + ["}"]
                    : ["\(entry.control) \(entry.provider) \(text(entry.options))"]
            }
        }
        if let stack { return lines(stack.entries).joined(separator: "\n") }
        return "provider \(provider ?? "") \(text(options))"
    }

    static func workingDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reports a refused configuration file to syslog — the only sink known when the file that names the
    /// others is refused — as a `configurationRefused` event naming where and what kind of problem, never
    /// the file's words (others read syslog; the file may be one they may not).
    public static func reportRefused(
        _ error: ConfigurationError,
        tool: String,
        socketPath: String = "/dev/log"
    ) {
        SyslogAuditSink(socketPath: socketPath, identifier: tool).record(
            AuditEvent(kind: .configurationRefused, username: nil, provider: tool, detail: error.withoutContents))
    }
}
