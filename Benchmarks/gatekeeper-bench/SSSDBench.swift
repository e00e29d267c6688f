import Authentication
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// gatekeeperd with pam_gatekeeper.so against SSSD with pam_sss, in the same run (as root), against the
/// same throwaway slapd (`Examples/ldap/demo.sh --start`, with cn=Monitor), configured alike
/// (`Examples/sssd/side-by-side.sh`: SSSD in a mount namespace of its own, tuned as its maintainers advise —
/// `pam_initgroups_scheme = always`; offline logins cached by both), once over StartTLS and once over ldaps.
/// Each login is a whole PAM login as sshd makes it — pam_start, pam_authenticate, pam_acct_mgmt, pam_end —
/// by `pam-load` (C, Benchmarks/pam-load), one process per client, each client its own account. For each
/// transport:
/// - logins a second with 1 to 64 clients at once, and their median and p99 latency, best of two rounds
///   taken alternately (the same accounts again and again: what each keeps of a login in memory helps);
/// - the latency of logins that find nothing kept: an account's first login since either started; a login
///   after both were restarted (their disk caches kept); logins of accounts not signed in for more than 5 s
///   (longer than either keeps what a login found out) — medians, each account through both, in turn first;
/// - the directory's load per login of an account not signed in for a while: slapd's own processor time,
///   and its operations (cn=Monitor: binds, searches, extended operations, connections made);
/// - memory after many logins, as PSS (shared pages shared out) and USS (pages of its own): gatekeeperd
///   against sssd + sssd_be + sssd_pam (sssd_nss beside: the module's getpwnam asks it too);
/// and, over StartTLS, 2 to 16 daemons against the one directory (each its own state, as hosts of a fleet):
/// the load and the connections they keep open.
struct SSSDBench {
    enum Transport: String, CaseIterable {
        case startTLS = "StartTLS"
        case ldaps
    }

    struct Side {
        var perSecond = 0.0
        var p50 = 0.0
        var p99 = 0.0
    }

    /// What one login costs the directory, from cn=Monitor, and slapd's processor time.
    struct Load {
        var binds = 0.0
        var searches = 0.0
        var extended = 0.0
        var connections = 0.0
        /// slapd's processor time a login, in milliseconds.
        var slapdMilliseconds = 0.0
        /// Requests answered: binds, searches and extended operations (an unbind has no answer).
        var roundTrips: Double { binds + searches + extended }
    }

    /// KiB of memory, summed over processes.
    struct Memory {
        var rss = 0
        var pss = 0
        var uss = 0

        static func + (a: Memory, b: Memory) -> Memory {
            Memory(rss: a.rss + b.rss, pss: a.pss + b.pss, uss: a.uss + b.uss)
        }
    }

    /// Median latencies (ms) of logins that find nothing kept in memory.
    struct Cold {
        var first = 0.0
        var restarted = 0.0
        var spaced = 0.0
    }

    struct Fleet {
        var daemons: Int
        var load: Load
        /// Connections the daemons keep open to the directory once their logins are done.
        var held: Int
    }

    /// One transport's figures.
    struct Measured {
        var ours: [Int: Side] = [:]
        var sssd: [Int: Side] = [:]
        var logins: [Int: Int] = [:]
        var oursCold = Cold()
        var sssdCold = Cold()
        var oursLoad = Load()
        var sssdLoad = Load()
        var memoryLogins = 0
        var oursMemory = Memory()
        var sssdMemory = Memory()
        var sssdNSSMemory = Memory()
    }

    struct Figures {
        var clients = smoke ? [1, 4] : [1, 2, 4, 8, 16, 32, 64]
        var transports: [(Transport, Measured)] = []
        var coldLogins = 0
        var fleet: [Fleet] = []
    }

    static let password = "load-password-2026"
    /// One account a client, for the most clients at once.
    static let accounts = 64
    /// Accounts never signed in before the first-login measure, for each transport.
    static let fresh = smoke ? 2 : 24

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
        try demo.add(
            (0..<accounts).map { (username: "sssload\($0)", password: password) }
                + Transport.allCases.flatMap { transport in
                    (0..<fresh).map { (username: "ssfirst\(transport.rawValue.lowercased())\($0)", password: password) }
                })
        let directory = "\(ThrowawayState.scratch)/\(ThrowawayState.prefix)sssd-\(getpid())"
        guard mkdir(directory, 0o755) == 0 else { throw ProcessBench.Skipped.failed("\(directory) cannot be made") }
        ThrowawayState.onRemoval { _ = try? FileManager.default.removeItem(atPath: directory) }

        var figures = Figures()
        figures.coldLogins = fresh
        for transport in Transport.allCases {
            let uri = transport == .startTLS ? demo.uri : demo.ldapsURI
            let place = "\(directory)/\(transport.rawValue.lowercased())"
            guard mkdir(place, 0o755) == 0 else { throw ProcessBench.Skipped.failed("\(place) cannot be made") }
            figures.transports.append(
                (
                    transport,
                    try measure(
                        uri: uri, first: "ssfirst\(transport.rawValue.lowercased())", clients: figures.clients,
                        demo: demo, place: place, daemonPath: daemonPath, module: module, load: load)
                ))
        }

        // Many hosts, one directory: N daemons, each its own state, each signing in every account a few times
        // through its socket as the module does.
        for count in smoke ? [2] : [2, 8, 16] {
            let sockets = try (0..<count).map { index -> String in
                let path = "\(directory)/fleet\(count)-\(index)"
                _ = try startDaemon(daemonPath, uri: demo.uri, demo: demo, directory: path, socket: path + "/socket")
                return path + "/socket"
            }
            let each = smoke ? 1 : 4
            let before = try demo.monitor()
            let cpu = demo.slapdCPU()
            for socket in sockets {
                for index in 0..<32 {
                    for _ in 0..<each {
                        guard DaemonBench.login(socket, user: "sssload\(index)", password: password) == .success else {
                            throw ProcessBench.Skipped.failed("a fleet login failed")
                        }
                    }
                }
            }
            let slapd = (demo.slapdCPU() - cpu) / 1e6 / Double(count * 32 * each)
            let after = try demo.monitor()
            var load = after.load(since: before, logins: count * 32 * each)
            load.slapdMilliseconds = slapd
            figures.fleet.append(
                Fleet(daemons: count, load: load, held: after.currentConnections - before.currentConnections))
        }
        return figures
    }

    /// Both against the directory at `uri`, in `place`.
    static func measure(
        uri: String, first: String, clients: [Int], demo: DemoDirectory, place: String, daemonPath: String,
        module: String, load: String
    ) throws -> Measured {
        let socket = place + "/socket"
        var daemon = try startDaemon(daemonPath, uri: uri, demo: demo, directory: place + "/daemon", socket: socket)
        let sideBySide = SideBySideScript(directory: place)
        try sideBySide.start(uri: uri, demo: demo, module: module, socket: socket)
        ThrowawayState.onRemoval { sideBySide.stop() }
        defer { sideBySide.stop() }

        /// `clients` pam-load processes at once through `service`, each `each` logins of its own account (`user`
        /// and a number from `first`): logins a second over the whole, and every login's latency (milliseconds,
        /// sorted).
        func batch(_ service: String, clients: Int, each: Int, user: String = "sssload", first: Int = 0) throws
            -> (Double, [Double])
        {
            let start = ContinuousClock.now
            let running = try (0..<clients).map { index in
                try sideBySide.spawn([load, service, "\(user)\(first + index)", password, String(each)])
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
        /// One login of each account `user`0..<count through both services, one after another, each account
        /// through the one and then the other, which goes first taking turns: the median latency of each.
        func eachOnce(_ user: String, count: Int) throws -> (ours: Double, sssd: Double) {
            var (ours, sssd): ([Double], [Double]) = ([], [])
            for index in 0..<count {
                for (service, isOurs) in index % 2 == 0 ? services : services.reversed() {
                    let latency = try batch(service, clients: 1, each: 1, user: user, first: index).1[0]
                    if isOurs { ours.append(latency) } else { sssd.append(latency) }
                }
            }
            return (DaemonBench.percentile(ours.sorted(), 0.5), DaemonBench.percentile(sssd.sorted(), 0.5))
        }

        var measured = Measured()
        // First logins: accounts neither has seen since it started.
        (measured.oursCold.first, measured.sssdCold.first) = try eachOnce(first, count: fresh)
        // Warm: every account signed in once through each (SSSD caches the accounts, the daemon its connections).
        for (service, _) in services { _ = try batch(service, clients: accounts, each: 1) }

        for clients in clients {
            let each = max(1, scaled(800) / clients)
            measured.logins[clients] = clients * each
            for _ in 0..<(smoke ? 1 : 2) {
                for (service, isOurs) in services {
                    let (rate, latencies) = try batch(service, clients: clients, each: each)
                    let side = Side(
                        perSecond: rate, p50: DaemonBench.percentile(latencies, 0.5),
                        p99: DaemonBench.percentile(latencies, 0.99))
                    if isOurs {
                        if rate > measured.ours[clients, default: Side()].perSecond { measured.ours[clients] = side }
                    } else if rate > measured.sssd[clients, default: Side()].perSecond {
                        measured.sssd[clients] = side
                    }
                }
            }
        }
        measured.memoryLogins = measured.logins.values.reduce(0, +) * (smoke ? 1 : 2) + accounts
        measured.oursMemory = memory(of: daemon)
        let sssdProcesses = sideBySide.sssdProcesses()
        measured.sssdMemory = sssdProcesses.filter { $0.name != "sssd_nss" }.map { memory(of: $0.pid) }
            .reduce(Memory(), +)
        measured.sssdNSSMemory = sssdProcesses.filter { $0.name == "sssd_nss" }.map { memory(of: $0.pid) }
            .reduce(Memory(), +)

        // Logins more than 5 s apart (longer than gatekeeperd keeps what a login found out, and SSSD's
        // pam_id_timeout), and the directory's load for each: cn=Monitor's operations and slapd's processor time.
        let spacedAccounts = min(fresh, accounts)
        for (service, isOurs) in services {
            sleep(smoke ? 1 : 6)
            let before = try demo.monitor()
            let cpu = demo.slapdCPU()
            for index in 0..<spacedAccounts { _ = try batch(service, clients: 1, each: 1, first: index) }
            let slapd = (demo.slapdCPU() - cpu) / 1e6 / Double(spacedAccounts)
            var used = try demo.monitor().load(since: before, logins: spacedAccounts)
            used.slapdMilliseconds = slapd
            if isOurs { measured.oursLoad = used } else { measured.sssdLoad = used }
        }
        sleep(smoke ? 1 : 6)
        (measured.oursCold.spaced, measured.sssdCold.spaced) = try eachOnce("sssload", count: spacedAccounts)

        // After a restart of both: the caches on disk kept, nothing in memory.
        kill(daemon, SIGTERM)
        var status: Int32 = 0
        waitpid(daemon, &status, 0)
        daemon = try DaemonBench.startDaemon(
            daemonPath, socket: socket, directory: place + "/daemon", maxLogins: 128)
        try sideBySide.restart()
        (measured.oursCold.restarted, measured.sssdCold.restarted) = try eachOnce(
            "sssload", count: spacedAccounts)
        kill(daemon, SIGTERM)
        waitpid(daemon, &status, 0)
        return measured
    }

    /// PSS, USS and RSS of `pid`, from /proc/PID/smaps_rollup.
    static func memory(of pid: pid_t) -> Memory {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, parts[0].hasSuffix(":"), let value = Int(parts[1]) {
                fields[String(parts[0].dropLast())] = value
            }
        }
        return Memory(
            rss: fields["Rss"] ?? 0, pss: fields["Pss"] ?? 0,
            uss: (fields["Private_Clean"] ?? 0) + (fields["Private_Dirty"] ?? 0))
    }

    /// gatekeeperd serving the directory at `uri` on `socket`, as a host would: LDAP with an offline cache, in a
    /// directory of its own; stopped when the run's state is removed.
    static func startDaemon(_ path: String, uri: String, demo: DemoDirectory, directory: String, socket: String)
        throws -> pid_t
    {
        guard mkdir(directory, 0o755) == 0, mkdir(directory + "/pam.d", 0o755) == 0 else {
            throw ProcessBench.Skipped.failed("\(directory) cannot be made")
        }
        try ThrowawayState.create(
            directory + "/pam.d/default",
            "required ldap uri=\(uri) base=ou=people,\(demo.base) ca=\(demo.caFile) timeout=3s "
                + "offline_cache=\(directory)/offline offline_max_age=7d\n", mode: 0o644)
        return try DaemonBench.startDaemon(path, socket: socket, directory: directory, maxLogins: 128)
    }
}

/// `Examples/sssd/side-by-side.sh` for the run: SSSD (and the two PAM services) in a namespace of its own.
struct SideBySideScript {
    let directory: String
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/sssd/side-by-side.sh").standardized.path

    func start(uri: String, demo: DemoDirectory, module: String, socket: String) throws {
        let started = try Running(
            [Self.path, "start", directory, uri, demo.base, demo.caFile, module, socket, String(getpid())]
        ).finish()
        guard started.status == 0 else { throw ProcessBench.Skipped.failed("side-by-side.sh: \(started.errors)") }
    }

    /// sssd stopped and started again on its cache, once it answers PAM.
    func restart() throws {
        let restarted = try Running([Self.path, "restart", directory]).finish()
        guard restarted.status == 0 else {
            throw ProcessBench.Skipped.failed("side-by-side.sh restart: \(restarted.errors)")
        }
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
    func describe(_ load: SSSDBench.Load) -> String {
        "\(fixed(load.binds)) binds, \(fixed(load.searches)) searches, \(fixed(load.extended)) extended, "
            + "\(fixed(load.connections)) connections, slapd \(fixed(load.slapdMilliseconds)) ms"
    }
    func memory(_ memory: SSSDBench.Memory) -> String {
        "PSS \(fixed(Double(memory.pss) / 1024, 1)) MiB, USS \(fixed(Double(memory.uss) / 1024, 1)) MiB, "
            + "RSS \(fixed(Double(memory.rss) / 1024, 1)) MiB"
    }
    func row(_ label: String, _ values: [String]) -> String {
        Goals.pad(label, 34) + values.map { Goals.pad($0, 9) }.joined()
    }
    var lines: [String] = []
    let goalClients = smoke ? figures.clients : [1, 8, 64]
    for (transport, measured) in figures.transports {
        let name = transport.rawValue
        lines += [
            "gatekeeperd against SSSD (pam_initgroups_scheme = always), \(name), whole PAM logins:",
            row("clients at once", figures.clients.map(String.init)),
            row("logins/s, gatekeeperd", figures.clients.map { fixed(measured.ours[$0]?.perSecond ?? 0, 1) }),
            row("logins/s, SSSD", figures.clients.map { fixed(measured.sssd[$0]?.perSecond ?? 0, 1) }),
            row("p99 ms, gatekeeperd", figures.clients.map { fixed(measured.ours[$0]?.p99 ?? 0, 1) }),
            row("p99 ms, SSSD", figures.clients.map { fixed(measured.sssd[$0]?.p99 ?? 0, 1) }),
        ]
        for clients in goalClients {
            let (ours, sssd) = (measured.ours[clients] ?? .init(), measured.sssd[clients] ?? .init())
            let throughput = ours.perSecond / max(sssd.perSecond, 1e-9)
            let p99 = ours.p99 / max(sssd.p99, 1e-9)
            lines += [
                "ratio logins/s gatekeeperd / SSSD, \(clients) client(s)  \(fixed(throughput))         \(Goals.atLeast("\(name), \(clients) client(s): logins a second, gatekeeperd / SSSD", throughput, 1.0))",
                "ratio p99 gatekeeperd / SSSD, \(clients) client(s)       \(fixed(p99))         \(Goals.atMost("\(name), \(clients) client(s): p99 latency, gatekeeperd / SSSD", p99, 1.0))",
            ]
        }
        for (label, ours, sssd) in [
            ("first login", measured.oursCold.first, measured.sssdCold.first),
            ("login after a restart", measured.oursCold.restarted, measured.sssdCold.restarted),
            ("login 6 s after the last", measured.oursCold.spaced, measured.sssdCold.spaced),
        ] {
            let ratio = ours / max(sssd, 1e-9)
            lines.append(
                Goals.pad("\(label), median ms gatekeeperd / SSSD", 50)
                    + "\(fixed(ours, 1)) / \(fixed(sssd, 1))   \(fixed(ratio))   \(Goals.atMost("\(name): \(label), median, gatekeeperd / SSSD", ratio, 1.0))"
            )
        }
        let pss = Double(measured.oursMemory.pss) / Double(max(measured.sssdMemory.pss, 1))
        let trips = measured.oursLoad.roundTrips / max(measured.sssdLoad.roundTrips, 1e-9)
        let slapd = measured.oursLoad.slapdMilliseconds / max(measured.sssdLoad.slapdMilliseconds, 1e-9)
        lines += [
            "memory after \(measured.memoryLogins) logins, gatekeeperd     \(memory(measured.oursMemory))",
            "memory, sssd + sssd_be + sssd_pam               \(memory(measured.sssdMemory))",
            "memory, sssd_nss (beside)                       \(memory(measured.sssdNSSMemory))",
            "ratio PSS gatekeeperd / SSSD                    \(fixed(pss))         \(Goals.atMost("\(name): memory (PSS), gatekeeperd / SSSD", pss, 1.0))",
            "a login's load on slapd, gatekeeperd            \(describe(measured.oursLoad))",
            "a login's load on slapd, SSSD                   \(describe(measured.sssdLoad))",
            "ratio round trips per login, gatekeeperd / SSSD \(fixed(trips))         \(Goals.atMost("\(name): directory round trips a login, gatekeeperd / SSSD", trips, 1.0))",
            "ratio slapd time per login, gatekeeperd / SSSD  \(fixed(slapd))         \(Goals.atMost("\(name): slapd processor time a login, gatekeeperd / SSSD", slapd, 1.0))",
            "",
        ]
    }
    for fleet in figures.fleet {
        lines.append(
            "\(fleet.daemons) daemons, one slapd (StartTLS): per login     \(describe(fleet.load)); \(fleet.held) connections held"
        )
    }
    return lines.joined(separator: "\n") + "\n"
}

func sssdJSON(_ result: Result<SSSDBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    func load(_ load: SSSDBench.Load) -> String {
        "{\"binds\":\(fixed(load.binds)),\"searches\":\(fixed(load.searches)),\"extended\":\(fixed(load.extended)),"
            + "\"connections\":\(fixed(load.connections)),\"round_trips\":\(fixed(load.roundTrips)),"
            + "\"slapd_ms\":\(fixed(load.slapdMilliseconds, 3))}"
    }
    func memory(_ memory: SSSDBench.Memory) -> String {
        "{\"rss_kib\":\(memory.rss),\"pss_kib\":\(memory.pss),\"uss_kib\":\(memory.uss)}"
    }
    func cold(_ cold: SSSDBench.Cold) -> String {
        "{\"first_ms\":\(fixed(cold.first, 2)),\"restarted_ms\":\(fixed(cold.restarted, 2)),\"spaced_ms\":\(fixed(cold.spaced, 2))}"
    }
    let transports = figures.transports.map { transport, measured -> String in
        func side(_ sides: [Int: SSSDBench.Side]) -> String {
            let points = figures.clients.map { clients -> String in
                let side = sides[clients] ?? .init()
                return "{\"clients\":\(clients),\"logins\":\(measured.logins[clients] ?? 0),"
                    + "\"per_second\":\(fixed(side.perSecond, 1)),\"p50_ms\":\(fixed(side.p50, 2)),\"p99_ms\":\(fixed(side.p99, 2))}"
            }
            return "[" + points.joined(separator: ",") + "]"
        }
        return "\"\(transport.rawValue)\":{\"gatekeeperd\":\(side(measured.ours)),\"sssd\":\(side(measured.sssd)),"
            + "\"gatekeeperd_cold\":\(cold(measured.oursCold)),\"sssd_cold\":\(cold(measured.sssdCold)),"
            + "\"memory_logins\":\(measured.memoryLogins),\"gatekeeperd_memory\":\(memory(measured.oursMemory)),"
            + "\"sssd_memory\":\(memory(measured.sssdMemory)),\"sssd_nss_memory\":\(memory(measured.sssdNSSMemory)),"
            + "\"gatekeeperd_load\":\(load(measured.oursLoad)),\"sssd_load\":\(load(measured.sssdLoad))}"
    }
    let fleet = figures.fleet.map {
        "{\"daemons\":\($0.daemons),\"per_login\":\(load($0.load)),\"connections_held\":\($0.held)}"
    }
    return "{\"sssd_tuning\":\"pam_initgroups_scheme = always\",\"cold_logins\":\(figures.coldLogins),"
        + transports.joined(separator: ",") + ",\"fleet\":[\(fleet.joined(separator: ","))]}"
}
