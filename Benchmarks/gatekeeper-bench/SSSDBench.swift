import Authentication
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// gatekeeperd with pam_gatekeeper.so against SSSD with pam_sss, in the same run (as root), against the
/// same throwaway slapd (`Examples/ldap/demo.sh --start`, StartTLS, with cn=Monitor), the same 32 accounts,
/// configured alike (`Examples/sssd/side-by-side.sh`: SSSD in a mount namespace of its own; offline logins
/// cached by both). Each login is a whole PAM login as sshd makes it — pam_start, pam_authenticate,
/// pam_acct_mgmt, pam_end — by `pam-load` (C, Benchmarks/pam-load), one process per client, each client
/// its own account:
/// - logins a second with 1 and 32 clients at once, and their median and p99 latency, best of three rounds
///   taken alternately;
/// - resident memory after 10,000 logins: gatekeeperd against sssd + sssd_be + sssd_pam (sssd_nss beside);
/// - the directory's load per login of an account not signed in for a while (slapd's cn=Monitor: binds,
///   searches, extended operations, connections made), and with 2 to 16 daemons against the one directory
///   (each its own state, as hosts of a fleet), the load and the connections they keep open.
struct SSSDBench {
    struct Side {
        var perSecond = 0.0
        var p50 = 0.0
        var p99 = 0.0
    }

    /// What one login costs the directory, from cn=Monitor.
    struct Load {
        var binds = 0.0
        var searches = 0.0
        var extended = 0.0
        var connections = 0.0
        /// Requests answered: binds, searches and extended operations (an unbind has no answer).
        var roundTrips: Double { binds + searches + extended }
    }

    struct Fleet {
        var daemons: Int
        var load: Load
        /// Connections the daemons keep open to the directory once their logins are done.
        var held: Int
    }

    struct Figures {
        var clients: [Int] = [1, 32]
        var ours: [Int: Side] = [:]
        var sssd: [Int: Side] = [:]
        var logins: [Int: Int] = [:]
        var memoryLogins = 0
        var oursKiB = 0
        var sssdKiB = 0
        var sssdNSSKiB = 0
        var oursLoad = Load()
        var sssdLoad = Load()
        var loadLogins = 0
        var fleet: [Fleet] = []
    }

    static let password = "load-password-2026"
    static let accounts = 32

    static func run() async throws -> Figures {
        guard geteuid() == 0 else { throw ProcessBench.Skipped.notRoot }
        for (tool, package) in [("/usr/sbin/sssd", "sssd-ldap"), ("/usr/bin/nsenter", "util-linux")]
        where !FileManager.default.fileExists(atPath: tool) {
            throw ProcessBench.Skipped.missing(package)
        }
        let architectures = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
        guard
            architectures.contains(where: {
                FileManager.default.fileExists(atPath: "/usr/lib/\($0)/security/pam_sss.so")
            })
        else { throw ProcessBench.Skipped.missing("libpam-sss") }
        let daemonPath = try benchedTool("GATEKEEPERD", "gatekeeperd")
        let module = try benchedTool("GATEKEEPER_PAM_MODULE", "pam_gatekeeper.so")
        let load = try benchedTool("GATEKEEPER_PAM_LOAD", "pam-load")
        ThrowawayState.prepare()
        defer { ThrowawayState.removeAll() }

        let demo = try DemoDirectory()
        defer { demo.stop() }
        try demo.add((0..<accounts).map { (username: "sssload\($0)", password: password) })
        let directory = "\(ThrowawayState.scratch)/\(ThrowawayState.prefix)sssd-\(getpid())"
        guard mkdir(directory, 0o755) == 0 else { throw ProcessBench.Skipped.failed("\(directory) cannot be made") }
        ThrowawayState.onRemoval { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/socket"
        let daemon = try startDaemon(daemonPath, demo: demo, directory: directory + "/daemon", socket: socket)
        let sideBySide = SideBySideScript(directory: directory)
        try sideBySide.start(demo: demo, module: module, socket: socket)
        ThrowawayState.onRemoval { sideBySide.stop() }

        /// `clients` pam-load processes at once through `service`, each `each` logins of its own account: logins a
        /// second over the whole, and every login's latency (milliseconds, sorted).
        func batch(_ service: String, clients: Int, each: Int, first: Int = 0) throws -> (Double, [Double]) {
            let start = ContinuousClock.now
            let running = try (0..<clients).map { index in
                try sideBySide.spawn([load, service, "sssload\(first + index)", password, String(each)])
            }
            var latencies: [Double] = []
            for process in running {
                let (status, output, errors) = process.finish()
                guard status == 0 else { throw ProcessBench.Skipped.failed("pam-load through \(service): \(errors)") }
                latencies += output.split(separator: "\n").compactMap { Double($0).map { $0 / 1000 } }
            }
            let seconds = nanoseconds(start.duration(to: .now)) / 1e9
            guard latencies.count == clients * each else { throw ProcessBench.Skipped.failed("pam-load lost logins") }
            return (Double(clients * each) / seconds, latencies.sorted())
        }
        let services = [("gk-compare", true), ("sss-compare", false)]
        // Warm: every account signed in once through each (SSSD caches the accounts, the daemon its connections).
        for (service, _) in services { _ = try batch(service, clients: accounts, each: 1) }

        var figures = Figures()
        for clients in figures.clients {
            let each = clients == 1 ? scaled(400) : max(1, scaled(1600) / clients)
            figures.logins[clients] = clients * each
            for _ in 0..<(smoke ? 1 : 3) {
                for (service, isOurs) in services {
                    let (rate, latencies) = try batch(service, clients: clients, each: each)
                    let side = Side(
                        perSecond: rate, p50: DaemonBench.percentile(latencies, 0.5),
                        p99: DaemonBench.percentile(latencies, 0.99))
                    if isOurs {
                        if rate > figures.ours[clients, default: Side()].perSecond { figures.ours[clients] = side }
                    } else if rate > figures.sssd[clients, default: Side()].perSecond {
                        figures.sssd[clients] = side
                    }
                }
            }
        }

        // The directory's load per login: each account once, one after another, none signed in through that
        // service for longer than either keeps what a login found out (gatekeeperd: 5 s).
        figures.loadLogins = accounts
        sleep(6)
        for (service, isOurs) in services {
            let before = try demo.monitor()
            for index in 0..<accounts { _ = try batch(service, clients: 1, each: 1, first: index) }
            let used = try demo.monitor().load(since: before, logins: figures.loadLogins)
            if isOurs { figures.oursLoad = used } else { figures.sssdLoad = used }
        }

        // Resident memory after many logins.
        figures.memoryLogins = scaled(10_000)
        for (service, _) in services {
            _ = try batch(service, clients: accounts, each: max(1, figures.memoryLogins / accounts))
        }
        figures.oursKiB = DaemonBench.residentKiB(daemon)
        let sssdProcesses = sideBySide.sssdProcesses()
        figures.sssdKiB = sssdProcesses.filter { $0.name != "sssd_nss" }.map { DaemonBench.residentKiB($0.pid) }
            .reduce(0, +)
        figures.sssdNSSKiB = sssdProcesses.filter { $0.name == "sssd_nss" }.map { DaemonBench.residentKiB($0.pid) }
            .reduce(0, +)
        kill(daemon, SIGTERM)

        // Many hosts, one directory: N daemons, each its own state, each signing in every account a few times
        // through its socket as the module does.
        for count in smoke ? [2] : [2, 8, 16] {
            let sockets = try (0..<count).map { index -> String in
                let path = "\(directory)/fleet\(count)-\(index)"
                _ = try startDaemon(daemonPath, demo: demo, directory: path, socket: path + "/socket")
                return path + "/socket"
            }
            let each = smoke ? 1 : 4
            let before = try demo.monitor()
            for socket in sockets {
                for index in 0..<accounts {
                    for _ in 0..<each {
                        guard DaemonBench.login(socket, user: "sssload\(index)", password: password) == .success else {
                            throw ProcessBench.Skipped.failed("a fleet login failed")
                        }
                    }
                }
            }
            let after = try demo.monitor()
            figures.fleet.append(
                Fleet(
                    daemons: count, load: after.load(since: before, logins: count * accounts * each),
                    held: after.currentConnections - before.currentConnections))
        }
        return figures
    }

    /// gatekeeperd serving `demo`'s directory on `socket`, as a host would: LDAP with an offline cache, in a
    /// directory of its own; stopped when the run's state is removed.
    static func startDaemon(_ path: String, demo: DemoDirectory, directory: String, socket: String) throws -> pid_t {
        guard mkdir(directory, 0o755) == 0, mkdir(directory + "/pam.d", 0o755) == 0 else {
            throw ProcessBench.Skipped.failed("\(directory) cannot be made")
        }
        try ThrowawayState.create(
            directory + "/pam.d/default",
            "required ldap uri=\(demo.uri) base=ou=people,\(demo.base) ca=\(demo.caFile) timeout=3s "
                + "offline_cache=\(directory)/offline offline_max_age=7d\n", mode: 0o644)
        return try DaemonBench.startDaemon(path, socket: socket, directory: directory, maxLogins: 128)
    }
}

/// `Examples/sssd/side-by-side.sh` for the run: SSSD (and the two PAM services) in a namespace of its own.
struct SideBySideScript {
    let directory: String
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/sssd/side-by-side.sh").standardized.path

    func start(demo: DemoDirectory, module: String, socket: String) throws {
        let started = try Running(
            [
                Self.path, "start", directory, demo.uri, demo.base, demo.caFile, module, socket, String(getpid()),
            ]
        ).finish()
        guard started.status == 0 else { throw ProcessBench.Skipped.failed("side-by-side.sh: \(started.errors)") }
    }

    /// `arguments` run in the namespace.
    func spawn(_ arguments: [String]) throws -> Running {
        try Running([Self.path, "run", directory] + arguments)
    }

    func stop() { _ = try? Running([Self.path, "stop", directory]).finish() }

    /// sssd and its children (sssd_be, sssd_pam, sssd_nss): their names and pids.
    func sssdProcesses() -> [(name: String, pid: pid_t)] {
        guard let text = try? String(contentsOfFile: directory + "/namespace.pid", encoding: .utf8),
            let holder = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return [] }
        func children(of parent: pid_t) -> [pid_t] {
            let listed =
                (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
            return listed.split(separator: " ").compactMap { Int32($0) }
        }
        func name(_ pid: pid_t) -> String {
            ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let monitors = children(of: holder).filter { name($0) == "sssd" }
        return (monitors + monitors.flatMap(children)).map { (name($0), $0) }
    }
}

/// A process whose output and errors go to files, read when it ends (posix_spawn and waitpid: no run loop, no
/// pipe a grandchild could hold open).
final class Running {
    let pid: pid_t
    private let output: String
    private let errors: String
    private static let made = Mutex(0)
    /// Whether ``finish()`` reaped it; one that was not (a batch that failed midway) is killed, reaped and its
    /// files removed when it goes.
    private var finished = false

    init(_ arguments: [String]) throws {
        let number = Self.made.withLock { count -> Int in
            count += 1
            return count
        }
        let base = "\(ThrowawayState.scratch)/\(ThrowawayState.prefix)running-\(getpid())-\(number)"
        (output, errors) = (base + ".out", base + ".err")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let started = withCleanSignals { attributes in
            posix_spawn(&child, arguments[0], &actions, &attributes, argv, environ)
        }
        guard started == 0 else {
            throw ProcessBench.Skipped.failed("\(arguments[0]) could not be started")
        }
        pid = child
    }

    /// Waits for the end: the status, standard output, standard error.
    func finish() -> (status: Int32, output: String, errors: String) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        finished = true
        let read = { (path: String) -> String in
            defer { unlink(path) }
            return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        }
        let exited = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exited, read(output), read(errors))
    }

    deinit {
        guard !finished else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        unlink(output)
        unlink(errors)
    }
}

/// Runs `body` with spawn attributes that give the child default signal dispositions and an empty signal
/// mask. This process ignores SIGINT and SIGTERM (``ThrowawayState/prepare()``), and a child would inherit
/// that: a daemon, or a shell and the sssd it starts, that SIGTERM then could not stop.
func withCleanSignals<T>(_ body: (inout posix_spawnattr_t) -> T) -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var every = sigset_t()
    sigfillset(&every)
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigdefault(&attributes, &every)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    return body(&attributes)
}

extension DemoDirectory {
    /// What slapd has served so far (cn=Monitor): operations completed by kind, connections made and open.
    struct Monitor {
        var completed: [String: Int] = [:]
        var totalConnections = 0
        var currentConnections = 0

        /// The load of the logins since `before`, per login, without the reads' own operations (each read is a
        /// connection, a bind, a search and an unbind; the first read's search completes after it counted).
        func load(since before: Monitor, logins: Int) -> SSSDBench.Load {
            func per(_ kind: String) -> Double {
                let own = kind == "Extended" ? 0 : 1
                return Double((completed[kind] ?? 0) - (before.completed[kind] ?? 0) - own) / Double(logins)
            }
            return SSSDBench.Load(
                binds: per("Bind"), searches: per("Search"), extended: per("Extended"),
                connections: Double(totalConnections - before.totalConnections - 1) / Double(logins))
        }
    }

    func monitor() throws -> Monitor {
        let read = try Running([
            "/usr/bin/ldapsearch", "-LLL", "-x", "-o", "ldif-wrap=no", "-H", uri, "-b", "cn=Monitor",
            "(|(objectClass=monitorOperation)(objectClass=monitorCounterObject))", "monitorOpCompleted",
            "monitorCounter",
        ]).finish()
        guard read.status == 0 else { throw ProcessBench.Skipped.failed("cn=Monitor: \(read.errors)") }
        var monitor = Monitor()
        for entry in read.output.components(separatedBy: "\n\n") {
            let lines = entry.split(separator: "\n")
            guard let dn = lines.first(where: { $0.hasPrefix("dn: ") }) else { continue }
            let value =
                lines.compactMap { line -> Int? in
                    guard let colon = line.firstIndex(of: ":"), !line.hasPrefix("dn:") else { return nil }
                    return Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
            let name = dn.dropFirst(7).prefix { $0 != "," }  // "dn: cn=Bind,cn=Operations,cn=Monitor" → Bind
            if dn.hasSuffix(",cn=Operations,cn=Monitor") {
                monitor.completed[String(name)] = value
            } else if dn == "dn: cn=Total,cn=Connections,cn=Monitor" {
                monitor.totalConnections = value
            } else if dn == "dn: cn=Current,cn=Connections,cn=Monitor" {
                monitor.currentConnections = value
            }
        }
        return monitor
    }
}

func sssdTable(_ result: Result<SSSDBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else {
        if case .failure(let reason) = result { return "gatekeeperd against SSSD: skipped, \(reason)\n" }
        return ""
    }
    var lines: [String] = []
    for clients in figures.clients {
        let (ours, sssd) = (figures.ours[clients] ?? .init(), figures.sssd[clients] ?? .init())
        let throughput = ours.perSecond / max(sssd.perSecond, 1e-9)
        let p99 = ours.p99 / max(sssd.p99, 1e-9)
        lines += [
            "\(clients) client(s), logins/s gatekeeperd / SSSD        \(fixed(ours.perSecond, 1)) / \(fixed(sssd.perSecond, 1))",
            "ratio gatekeeperd / SSSD, \(clients) client(s)            \(fixed(throughput))         \(Goals.atLeast("\(clients) client(s): logins a second, gatekeeperd / SSSD", throughput, 1.0))",
            "\(clients) client(s), p50 / p99 gatekeeperd (ms)         \(fixed(ours.p50, 2)) / \(fixed(ours.p99, 2))",
            "\(clients) client(s), p50 / p99 SSSD (ms)                \(fixed(sssd.p50, 2)) / \(fixed(sssd.p99, 2))",
            "ratio p99 gatekeeperd / SSSD, \(clients) client(s)        \(fixed(p99))         \(Goals.atMost("\(clients) client(s): p99 latency, gatekeeperd / SSSD", p99, 1.0))",
        ]
    }
    let memory = Double(figures.oursKiB) / Double(max(figures.sssdKiB, 1))
    lines += [
        "resident after \(figures.memoryLogins) logins, gatekeeperd      \(figures.oursKiB) KiB",
        "resident, sssd + sssd_be + sssd_pam (sssd_nss)     \(figures.sssdKiB) KiB (\(figures.sssdNSSKiB) KiB)",
        "ratio resident gatekeeperd / SSSD                  \(fixed(memory))         \(Goals.atMost("resident after many logins, gatekeeperd / SSSD", memory, 1.0))",
    ]
    func describe(_ load: SSSDBench.Load) -> String {
        "\(fixed(load.binds)) binds, \(fixed(load.searches)) searches, \(fixed(load.extended)) extended, \(fixed(load.connections)) connections"
    }
    let trips = figures.oursLoad.roundTrips / max(figures.sssdLoad.roundTrips, 1e-9)
    lines += [
        "a login's load on slapd, gatekeeperd               \(describe(figures.oursLoad))",
        "a login's load on slapd, SSSD                      \(describe(figures.sssdLoad))",
        "ratio round trips per login, gatekeeperd / SSSD    \(fixed(trips))         \(Goals.atMost("directory round trips per login, gatekeeperd / SSSD", trips, 1.0))",
    ]
    for fleet in figures.fleet {
        lines.append(
            "\(fleet.daemons) daemons, one slapd: per login                 \(describe(fleet.load)); \(fleet.held) connections held"
        )
    }
    return lines.joined(separator: "\n") + "\n"
}

func sssdJSON(_ result: Result<SSSDBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    func load(_ load: SSSDBench.Load) -> String {
        "{\"binds\":\(fixed(load.binds)),\"searches\":\(fixed(load.searches)),\"extended\":\(fixed(load.extended)),"
            + "\"connections\":\(fixed(load.connections)),\"round_trips\":\(fixed(load.roundTrips))}"
    }
    let sides = figures.clients.map { clients -> String in
        let (ours, sssd) = (figures.ours[clients] ?? .init(), figures.sssd[clients] ?? .init())
        return "\"clients_\(clients)\":{\"logins\":\(figures.logins[clients] ?? 0),"
            + "\"gatekeeperd_per_second\":\(fixed(ours.perSecond, 1)),\"sssd_per_second\":\(fixed(sssd.perSecond, 1)),"
            + "\"gatekeeperd_p50_ms\":\(fixed(ours.p50, 2)),\"gatekeeperd_p99_ms\":\(fixed(ours.p99, 2)),"
            + "\"sssd_p50_ms\":\(fixed(sssd.p50, 2)),\"sssd_p99_ms\":\(fixed(sssd.p99, 2))}"
    }
    let fleet = figures.fleet.map {
        "{\"daemons\":\($0.daemons),\"per_login\":\(load($0.load)),\"connections_held\":\($0.held)}"
    }
    return "{" + sides.joined(separator: ",")
        + ",\"memory_logins\":\(figures.memoryLogins),\"gatekeeperd_kib\":\(figures.oursKiB),"
        + "\"sssd_kib\":\(figures.sssdKiB),\"sssd_nss_kib\":\(figures.sssdNSSKiB),"
        + "\"load_logins\":\(figures.loadLogins),\"gatekeeperd_load\":\(load(figures.oursLoad)),"
        + "\"sssd_load\":\(load(figures.sssdLoad)),\"fleet\":[\(fleet.joined(separator: ","))]}"
}
