public import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Logins remembered for a terminal session, as sudo's timestamps: after a successful login, further
/// invocations from the same place within ``timeout`` need not ask again.
///
/// A record is kept per user (a file named by the user, mode 0600, written whole by rename), one line per
/// place it was used in. A place (``LoginPlace``) is everything that made the login valid:
/// - the **invoking Unix user** (the real uid);
/// - the **terminal session** — the controlling terminal's device, its session leader's pid and that
///   process's start time, so a pid reused after the leader exits does not inherit the record — or,
///   without a terminal, the parent process and its start time;
/// - **where the login's input came from**: the terminal, or standard input's file (its device and inode):
///   a long-lived parent that runs the tool for several people, each on a pipe of their own, never lends
///   one person's login to the next;
/// - the **configuration** it was made under (``scope``).
///
/// Times are on `CLOCK_BOOTTIME` with the boot's id: a record from another boot, from the future, or
/// damaged is ignored. A record is only ever looked up by the account a login names — never "whoever
/// signed in here" — and a ``Gatekeeper`` looks it up only once the typed name is known
/// (``RememberedLogins``), then rechecks the account and the lockout before it accepts it.
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
    /// What a record's age is measured on: ``BootClock/now()`` but in tests.
    private let clock: @Sendable () -> BootInstant?
    /// At most this many places are remembered per user; the oldest are forgotten first.
    static let maxRecordsPerUser = 32

    /// Opens (creating, mode 0700) the cache directory.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when it cannot be used safely.
    /// - Parameter scope: What the logins are made through, as a digest of the configuration (see
    ///   ``scope(of:)``).
    public convenience init(directory: String, timeout: Duration, scope: String = "default") throws(AuthError) {
        try self.init(directory: directory, timeout: timeout, scope: scope, clock: BootClock.now)
    }

    /// The cache in `directory` if the directory exists, for a reader of what others remembered (the REPL's
    /// `status`): `nil` when nothing was ever remembered there, and nothing is created.
    public static func existing(directory: String, timeout: Duration, scope: String = "default") throws(AuthError)
        -> LoginCache?
    {
        do throws(StateFileError) {
            let opened = try StateDirectory(directory, creatingWith: nil)
            return LoginCache(opened, timeout: timeout, scope: scope, clock: BootClock.now)
        } catch let error where error.isMissing {
            return nil
        } catch {
            throw .providerUnavailable(reason: "the login cache cannot be used: \(error)")
        }
    }

    /// The cache, its times read from `clock` instead of `CLOCK_BOOTTIME` (for tests, which move time
    /// on rather than wait for it). `nil` from the clock means the time cannot be told: nothing is
    /// remembered or found.
    package convenience init(
        directory: String, timeout: Duration, scope: String = "default",
        clock: @escaping @Sendable () -> BootInstant?
    ) throws(AuthError) {
        do throws(StateFileError) {
            self.init(try StateDirectory(directory, creatingWith: 0o700), timeout: timeout, scope: scope, clock: clock)
        } catch {
            throw .providerUnavailable(reason: "the login cache cannot be used: \(error)")
        }
    }

    private init(
        _ directory: StateDirectory, timeout: Duration, scope: String, clock: @escaping @Sendable () -> BootInstant?
    ) {
        self.timeout = timeout
        self.scope = Self.scope(of: scope)
        self.clock = clock
        self.directory = directory
    }

    /// A scope's digest: 16 hexadecimal digits of SHA-256 of `description`.
    public static func scope(of description: String) -> String {
        SHA256.hash(Array(description.utf8)).prefix(8).hexadecimal
    }

    /// The cache as a gatekeeper uses it, for logins made at `place`.
    public func remembering(at place: LoginPlace) -> some RememberedLogins {
        Remembering(cache: self, place: place)
    }

    /// The login `username` made at `place`, if it is fresh.
    public func lookup(_ username: String, in place: LoginPlace) -> RememberedLogin? {
        guard timeout > .zero, let now = clock(),
            let record = records(of: username).last(where: { $0.place == place && $0.scope == scope }),
            record.time <= now.nanoseconds, record.boot == now.boot
        else { return nil }
        let age = Duration.nanoseconds(now.nanoseconds - record.time)
        guard age < timeout else { return nil }
        return RememberedLogin(username: username, provider: record.provider, age: age)
    }

    /// Every fresh login made in `session` by the invoking user, whatever the input (for a status
    /// display, never for admission).
    public func logins(in session: TerminalSession, invokingUser: UInt32? = nil) -> [RememberedLogin] {
        let invokingUser = invokingUser ?? getuid()
        return directory.names().filter { !$0.hasPrefix(".") }.compactMap { name in
            guard
                let record = records(of: name).last(where: {
                    $0.place.session == session && $0.place.invokingUser == invokingUser && $0.scope == scope
                })
            else { return nil }
            return lookup(name, in: record.place)
        }
    }

    /// Remembers that `identity` signed in at `place` now.
    public func remember(_ identity: Identity, in place: LoginPlace) throws(AuthError) {
        guard timeout > .zero, let now = clock() else { return }
        try changing { () throws(AuthError) in
            var kept = records(of: identity.username).filter {
                !($0.place == place && $0.scope == scope) && $0.boot == now.boot
            }
            kept.append(
                Record(place: place, boot: now.boot, time: now.nanoseconds, scope: scope, provider: identity.provider))
            kept = kept.suffix(Self.maxRecordsPerUser)
            try write(kept, for: identity.username)
        }
    }

    /// Forgets `session`'s logins, of every user (`gatekeeper-run -k`).
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when a record cannot be rewritten: the caller
    ///   must not report the logins forgotten.
    public func forget(_ session: TerminalSession) throws(AuthError) {
        try changing { () throws(AuthError) in
            for name in directory.names() where !name.hasPrefix(".") {
                let records = records(of: name)
                let kept = records.filter { $0.place.session != session }
                if kept.count != records.count { try write(kept, for: name) }
            }
        }
    }

    /// Runs `change` — a read of a user's records, then their rewrite — holding the cache's lock, which
    /// every process takes for every change: two logins remembered at once, by two processes, both stay.
    private func changing(_ change: () throws(AuthError) -> Void) throws(AuthError) {
        let held: Int32
        do {
            held = try directory.openFile(".lock", creatingWith: 0o600)
        } catch {
            throw .providerUnavailable(reason: "the login cannot be remembered: \(error)")
        }
        defer { close(held) }
        do {
            try StateDirectory.lock(held)
        } catch {
            throw .providerUnavailable(reason: "the login cannot be remembered: \(error)")
        }
        try change()
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

    /// One remembered place: `v2 KIND DEVICE PID START UID INPUT BOOT TIME SCOPE PROVIDER`. Records of the
    /// first version, which knew no invoking user nor input, are ignored.
    struct Record: Hashable {
        var place: LoginPlace
        var boot: String
        var time: Int64
        var scope: String
        var provider: String

        init(place: LoginPlace, boot: String, time: Int64, scope: String, provider: String) {
            self.place = place
            self.boot = boot
            self.time = time
            self.scope = scope
            self.provider = provider
        }

        init?(line: String) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 11, fields[0] == "v2", let kind = TerminalSession.Kind(rawValue: fields[1]),
                let device = UInt64(fields[2]), let pid = Int32(fields[3]), let start = UInt64(fields[4]),
                let uid = UInt32(fields[5]), LoginPlace.isToken(fields[6]),
                fields[7].utf8.count == 36, let time = Int64(fields[8]), time >= 0,
                fields[9].utf8.count == 16, LoginPlace.isToken(fields[10])
            else { return nil }
            place = LoginPlace(
                TerminalSession(kind: kind, device: device, leader: pid, leaderStart: start), invokingUser: uid,
                input: fields[6])
            boot = fields[7]
            self.time = time
            scope = fields[9]
            provider = fields[10]
        }

        var line: String {
            let session = place.session
            return "v2 \(session.kind.rawValue) \(session.device) \(session.leader) \(session.leaderStart) "
                + "\(place.invokingUser) \(place.input) \(boot) \(time) \(scope) "
                + (LoginPlace.isToken(provider) ? provider : "unknown") + "\n"
        }
    }

    /// The cache bound to one place: what a ``Gatekeeper`` consults.
    struct Remembering: RememberedLogins {
        let cache: LoginCache
        let place: LoginPlace

        func lookup(_ account: String) -> RememberedLogin? { cache.lookup(account, in: place) }
        func remember(_ identity: Identity) throws(AuthError) { try cache.remember(identity, in: place) }
    }
}

/// Everything a remembered login is valid for, but the configuration: the invoking user, the terminal
/// session (or parent), and where the login's input comes from.
public struct LoginPlace: Sendable, Hashable {
    public var session: TerminalSession
    /// The real uid of whoever runs the tool.
    public var invokingUser: UInt32
    /// Where the login's answers come from: `tty` for the controlling terminal, else standard input's
    /// anonymous pipe or socket as `stdin-pipe-N` or `stdin-socket-N`.
    public var input: String

    /// - Parameter invokingUser: The real uid (`getuid()`) when `nil`.
    public init(_ session: TerminalSession, invokingUser: UInt32? = nil, input: String = "tty") {
        self.session = session
        self.invokingUser = invokingUser ?? getuid()
        self.input = input
    }

    /// This process's place, its answers read from the controlling terminal (`fromTerminal`) or from
    /// standard input; `nil` when either cannot be told (then nothing is remembered).
    ///
    /// Standard input counts as one place only when it is an anonymous pipe or a socket, named by the
    /// kernel's own number for it (`pipe:[N]`, which is not handed out again while the system runs). A
    /// regular file, a named pipe or a device is not: a file's inode is given to the next new file as soon
    /// as it is removed, so a parent handing each person a file of their answers would lend one person's
    /// login to the next. Logins read from such an input are never remembered.
    public static func current(fromTerminal: Bool) -> LoginPlace? {
        guard let session = TerminalSession.current() else { return nil }
        if fromTerminal { return LoginPlace(session) }
        guard let input = anonymousStandardInput() else { return nil }
        return LoginPlace(session, input: input)
    }

    /// `stdin-pipe-N` or `stdin-socket-N` for standard input's anonymous pipe or socket, else `nil`.
    static func anonymousStandardInput() -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { raw in
            readlink("/proc/self/fd/0", raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
        }
        guard count > 0, count < buffer.count else { return nil }
        let target = String(decoding: buffer[..<count], as: UTF8.self)
        for kind in ["pipe", "socket"] where target.hasPrefix(kind + ":[") && target.hasSuffix("]") {
            let number = target.dropFirst(kind.utf8.count + 2).dropLast()
            guard !number.isEmpty, number.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return "stdin-\(kind)-\(number)"
        }
        return nil
    }

    /// A field of a record: printable ASCII without blanks, at most 64 bytes.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
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

/// A time on `CLOCK_BOOTTIME`, with the id of the boot it belongs to: what a ``LoginCache`` record keeps.
package struct BootInstant: Sendable, Hashable {
    /// Nanoseconds since the boot.
    package var nanoseconds: Int64
    /// The boot's id (`/proc/sys/kernel/random/boot_id`, 36 characters).
    package var boot: String

    package init(nanoseconds: Int64, boot: String) {
        self.nanoseconds = nanoseconds
        self.boot = boot
    }
}

/// `CLOCK_BOOTTIME` and the boot's id.
enum BootClock {
    /// Now, or `nil` when the clock or the boot's id cannot be read.
    static func now() -> BootInstant? {
        var spec = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &spec) == 0,
            case .success(let id) = readProcFile("/proc/sys/kernel/random/boot_id")
        else { return nil }
        let boot = String(decoding: id.prefix(while: { $0 != 0x0A }), as: UTF8.self)
        guard boot.utf8.count == 36 else { return nil }
        return BootInstant(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec), boot: boot)
    }
}

/// A small file under /proc, read whole.
func readProcFile(_ path: String) -> Result<[UInt8], StateFileError> {
    let file = open(path, O_RDONLY | O_CLOEXEC)
    guard file >= 0 else { return .failure(StateFileError("\(path): \(errorDescription())")) }
    defer { close(file) }
    return Result { () throws(StateFileError) in try StateDirectory.readAll(file, limit: 65_536) }
}
