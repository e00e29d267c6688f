public import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Logins remembered for a terminal session, as sudo's timestamps: after a successful login, further
/// invocations from the same session within ``timeout`` need not ask again.
///
/// A record is kept per user (a file named by the user, mode 0600, written whole by rename), one line per
/// session it was used in. A session is the controlling terminal's device, its session leader's pid and
/// that process's start time — so a pid reused after the leader exits does not inherit the record — or,
/// without a terminal, the parent process and its start time. Times are on `CLOCK_BOOTTIME` with the
/// boot's id: a record from another boot, from the future, or damaged is ignored.
///
/// The cache only says who signed in; the host rechecks the account (``AuthProvider/recheck(_:)``, and
/// the lockout) before it accepts a remembered login.
///
/// **Threat model.** Without setuid, the files belong to the user running the tool: the cache spares a
/// person retyping a password and guards against a passer-by at an unlocked terminal who starts a new
/// session, not against the account's own owner, who can write the records.
public final class LoginCache: Sendable {
    /// How long a login is remembered; zero for never.
    public let timeout: Duration
    /// What the logins were made through (a digest of the configuration): a login remembered under one
    /// configuration is never used under another, which may ask for more (a second factor, a group).
    public let scope: String
    private let directory: StateDirectory
    /// At most this many sessions are remembered per user; the oldest are forgotten first.
    static let maxRecordsPerUser = 32

    /// Opens (creating, mode 0700) the cache directory.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when it cannot be used safely.
    /// - Parameter scope: What the logins are made through, as a digest of the configuration (see
    ///   ``scope(of:)``).
    public init(directory: String, timeout: Duration, scope: String = "default") throws(AuthError) {
        self.timeout = timeout
        self.scope = Self.scope(of: scope)
        do {
            self.directory = try StateDirectory(directory, creatingWith: 0o700)
        } catch {
            throw .providerUnavailable(reason: "the login cache cannot be used: \(error)")
        }
    }

    /// A scope's digest: 16 hexadecimal digits of SHA-256 of `description`.
    public static func scope(of description: String) -> String {
        SHA256.hash(Array(description.utf8)).prefix(8).hexadecimal
    }

    /// A remembered login.
    public struct Login: Sendable, Hashable {
        public var username: String
        public var provider: String
        /// How long ago it was made.
        public var age: Duration
    }

    /// The login remembered for `session`: `username`'s, or — when no user is named — the one user's
    /// whose record for the session is fresh (none when several are).
    public func lookup(_ username: String?, in session: TerminalSession) -> Login? {
        guard timeout > .zero, let now = BootClock.now() else { return nil }
        let names = username.map { [$0] } ?? directory.names().filter { !$0.hasPrefix(".") }
        let fresh = names.compactMap { name -> Login? in
            guard let record = records(of: name).last(where: { $0.session == session && $0.scope == scope }) else {
                return nil
            }
            guard record.time <= now.nanoseconds, record.boot == now.boot else { return nil }
            let age = Duration.nanoseconds(now.nanoseconds - record.time)
            guard age < timeout else { return nil }
            return Login(username: name, provider: record.provider, age: age)
        }
        return fresh.count == 1 ? fresh[0] : nil
    }

    /// Remembers that `identity` signed in within `session` now.
    public func remember(_ identity: Identity, in session: TerminalSession) throws(AuthError) {
        guard timeout > .zero, let now = BootClock.now() else { return }
        var kept = records(of: identity.username).filter {
            !($0.session == session && $0.scope == scope) && $0.boot == now.boot
        }
        kept.append(
            Record(session: session, boot: now.boot, time: now.nanoseconds, scope: scope, provider: identity.provider))
        kept = kept.suffix(Self.maxRecordsPerUser)
        try write(kept, for: identity.username)
    }

    /// Forgets `session`'s logins, of every user (`gatekeeper-run -k`).
    public func forget(_ session: TerminalSession) {
        for name in directory.names() where !name.hasPrefix(".") {
            let records = records(of: name)
            let kept = records.filter { $0.session != session }
            if kept.count != records.count { try? write(kept, for: name) }
        }
    }

    /// Forgets every login of `username`, or of everyone when `nil` (`gatekeeper-run -K`).
    public func forgetAll(of username: String?) {
        for name in username.map({ [$0] }) ?? directory.names() where !name.hasPrefix(".") {
            directory.remove(name)
        }
    }

    private func write(_ records: [Record], for username: String) throws(AuthError) {
        guard StateDirectory.isPlainName(username), !username.hasPrefix(".") else { return }
        do {
            if records.isEmpty {
                directory.remove(username)
            } else {
                // Not synced: a record lost to a crash only means asking for the password again.
                try directory.replace(username, with: Array(records.map(\.line).joined().utf8), durable: false)
            }
        } catch {
            throw .providerUnavailable(reason: "the login cannot be remembered: \(error)")
        }
    }

    /// The records of `username`; a damaged file or line is ignored.
    private func records(of username: String) -> [Record] {
        guard StateDirectory.isPlainName(username), !username.hasPrefix("."),
            let file = try? directory.openFile(username, creatingWith: nil)
        else { return [] }
        defer { close(file) }
        guard let bytes = try? StateDirectory.readAll(file, limit: 64 * 1024) else { return [] }
        return bytes.split(separator: 0x0A).compactMap { Record(line: String(decoding: $0, as: UTF8.self)) }
    }

    /// One remembered session: `v1 KIND DEVICE PID START BOOT TIME SCOPE PROVIDER`.
    struct Record: Hashable {
        var session: TerminalSession
        var boot: String
        var time: Int64
        var scope: String
        var provider: String

        init(session: TerminalSession, boot: String, time: Int64, scope: String, provider: String) {
            self.session = session
            self.boot = boot
            self.time = time
            self.scope = scope
            self.provider = provider
        }

        init?(line: String) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 9, fields[0] == "v1", let kind = TerminalSession.Kind(rawValue: fields[1]),
                let device = UInt64(fields[2]), let pid = Int32(fields[3]), let start = UInt64(fields[4]),
                fields[5].utf8.count == 36, let time = Int64(fields[6]), time >= 0,
                fields[7].utf8.count == 16, !fields[8].isEmpty,
                fields[8].unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 })
            else { return nil }
            session = TerminalSession(kind: kind, device: device, leader: pid, leaderStart: start)
            boot = fields[5]
            self.time = time
            scope = fields[7]
            provider = fields[8]
        }

        var line: String {
            "v1 \(session.kind.rawValue) \(session.device) \(session.leader) \(session.leaderStart) \(boot) \(time) \(scope) "
                + (provider.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 } ? provider : "unknown") + "\n"
        }
    }
}

/// Where a login was made: a terminal session, or — without a terminal — a parent process.
public struct TerminalSession: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case terminal = "tty"
        case parent = "ppid"
    }

    public var kind: Kind
    /// The terminal's device number (0 for ``Kind/parent``).
    public var device: UInt64
    /// The session leader's pid, or the parent's.
    public var leader: Int32
    /// That process's start time, in clock ticks after boot (`/proc/PID/stat`, field 22).
    public var leaderStart: UInt64

    public init(kind: Kind, device: UInt64, leader: Int32, leaderStart: UInt64) {
        self.kind = kind
        self.device = device
        self.leader = leader
        self.leaderStart = leaderStart
    }

    /// This process's session: its controlling terminal and session leader, or its parent. `nil` when
    /// either cannot be read (then nothing is remembered).
    public static func current() -> TerminalSession? {
        let terminal = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        if terminal >= 0 {
            defer { close(terminal) }
            var info = stat()
            let leader = getsid(0)
            guard fstat(terminal, &info) == 0, leader > 0, let start = startTime(of: leader) else { return nil }
            return TerminalSession(kind: .terminal, device: UInt64(info.st_rdev), leader: leader, leaderStart: start)
        }
        let parent = getppid()
        guard parent > 1, let start = startTime(of: parent) else { return nil }
        return TerminalSession(kind: .parent, device: 0, leader: parent, leaderStart: start)
    }

    /// Field 22 of `/proc/PID/stat`, read after the last `)` so a command name with spaces or
    /// parentheses cannot shift the fields.
    static func startTime(of pid: Int32) -> UInt64? {
        guard case .success(let bytes) = readProcFile("/proc/\(pid)/stat"),
            let close = bytes.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        // After ")": field 3 (state) is the first; field 22 is the 20th.
        guard fields.count >= 20 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }
}

/// `CLOCK_BOOTTIME` and the boot's id.
enum BootClock {
    static func now() -> (nanoseconds: Int64, boot: String)? {
        var spec = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &spec) == 0,
            case .success(let id) = readProcFile("/proc/sys/kernel/random/boot_id")
        else { return nil }
        let boot = String(decoding: id.prefix(while: { $0 != 0x0A }), as: UTF8.self)
        guard boot.utf8.count == 36 else { return nil }
        return (Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec), boot)
    }
}

/// A small file under /proc, read whole.
func readProcFile(_ path: String) -> Result<[UInt8], StateFileError> {
    let file = open(path, O_RDONLY | O_CLOEXEC)
    guard file >= 0 else { return .failure(StateFileError("\(path): \(errorDescription())")) }
    defer { close(file) }
    return Result { () throws(StateFileError) in try StateDirectory.readAll(file, limit: 65_536) }
}
