import Authentication
import Dispatch
import Foundation
import GatekeeperBackends
import GatekeeperDaemon
import GatekeeperHost
import ProviderPlugins
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// gatekeeperd and pam_gatekeeper.so against their peers, in the same run (as root):
/// - `sudo -S -k /bin/true` through the module (a users-file stack in a warm daemon) against sudo through
///   pam_unix, each user's password a yescrypt hash made by chpasswd (the users file holds the hash
///   /etc/shadow has): wall time and sudo's peak memory, run alternately, medians;
/// - `pamtester … authenticate acct_mgmt` through the module against pamtester through pam_unix;
/// - 64 clients at once, each signing in again and again: logins a second through the daemon's socket
///   against the same stack in process (`HostLogin`'s gatekeepers, 64 tasks), and the latencies through the
///   daemon;
/// - the daemon's resident memory idle and after 10,000 logins (a cheap hash, so the logins are many);
/// - how long the daemon takes to end a login whose client went away at its question (sudo's Ctrl-C), seen
///   from outside: a daemon allowed one login at a time admits the next.
struct DaemonBench {
    struct Figures {
        var sudoUnix: ProcessBench.Run
        var sudoModule: ProcessBench.Run
        var pamtesterUnix: ProcessBench.Run
        var pamtesterModule: ProcessBench.Run
        var runs: Int
        var clients: Int
        var loginsEach: Int
        var inProcessPerSecond: Double
        var daemonPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var idleKiB: Int
        var afterKiB: Int
        var cheapLogins: Int
        var cancelMilliseconds: [Double]
    }

    static func run() async throws -> Figures {
        guard geteuid() == 0 else { throw ProcessBench.Skipped.notRoot }
        signal(SIGPIPE, SIG_IGN)
        for (tool, package) in [
            ("/usr/bin/pamtester", "pamtester"), ("/usr/bin/time", "GNU time"), ("/usr/bin/sudo", "sudo"),
            ("/usr/bin/mkpasswd", "mkpasswd (whois)"),
        ] where !FileManager.default.fileExists(atPath: tool) {
            throw ProcessBench.Skipped.missing(package)
        }
        let daemonPath = try benchedTool("GATEKEEPERD", "gatekeeperd")
        let module = try benchedTool("GATEKEEPER_PAM_MODULE", "pam_gatekeeper.so")
        ThrowawayState.prepare()
        defer { ThrowawayState.removeAll() }

        // The daemon: a users-file stack in a directory of this run's.
        let directory = "\(ThrowawayState.scratch)/\(ThrowawayState.prefix)daemon-\(getpid())"
        guard mkdir(directory, 0o755) == 0, mkdir(directory + "/pam.d", 0o755) == 0 else {
            throw ProcessBench.Skipped.failed("\(directory) cannot be made")
        }
        ThrowawayState.onRemoval { _ = try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/socket"
        let lines = "auth required \(module) socket=\(socket)\naccount required \(module) socket=\(socket)\n"
        let unix = try SudoPeer()
        let peer = try SudoPeer(tag: "d", pamLines: lines + "session required pam_unix.so\n")
        // The same kind of hash pam_unix checks: the one chpasswd wrote to /etc/shadow.
        guard let hash = shadowHash(of: peer.name) else { throw ProcessBench.Skipped.failed("no shadow entry") }
        let cheapPassword = "cheap-\(getpid())"
        let cheap = try shell(["/usr/bin/mkpasswd", "-m", "sha-512", "-R", "1000", cheapPassword])
        // One account per client (logins of one account at once are each counted until answered, as the lockout
        // counts them, and would lock it): the same yescrypt hash, and a cheap one.
        let users = (0..<64).map { "gkclient\($0):\(hash)\ngkcheap\($0):\(cheap)\n" }.joined()
        try ThrowawayState.create(directory + "/users", "\(peer.name):\(hash)\n" + users, mode: 0o600)
        try ThrowawayState.create(
            directory + "/pam.d/default", "delay 0\nrequired file users=\(directory)/users\n", mode: 0o644)
        let daemon = try startDaemon(daemonPath, socket: socket, directory: directory, maxLogins: 128)

        // Whole processes, alternately.
        let runs = smoke ? 3 : 21
        let commands = [
            ProcessBench.Command([peer.sudo, "-S", "-k", "/bin/true"], input: unix.password + "\n", as: unix.user),
            ProcessBench.Command([peer.sudo, "-S", "-k", "/bin/true"], input: peer.password + "\n", as: peer.user),
            ProcessBench.Command(
                ["/usr/bin/pamtester", unix.service, unix.name, "authenticate", "acct_mgmt"],
                input: unix.password + "\n"),
            ProcessBench.Command(
                ["/usr/bin/pamtester", peer.service, peer.name, "authenticate", "acct_mgmt"],
                input: peer.password + "\n"),
        ]
        for command in commands { _ = try ProcessBench.measure(command) }
        var samples = Array(repeating: [ProcessBench.Run](), count: commands.count)
        let report = "\(directory)/peak"
        for _ in 0..<runs {
            for (slot, command) in commands.enumerated() {
                var run = try ProcessBench.measure(command)
                let descriptor = open(report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                if let user = command.user { _ = fchown(descriptor, user.uid, user.gid) }
                close(descriptor)
                _ = try ProcessBench.measure(command.timed(into: report))
                run.peakKiB =
                    Int(
                        try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(
                            in: .whitespacesAndNewlines)) ?? 0
                samples[slot].append(run)
            }
        }
        let medians = samples.map(ProcessBench.median)

        // 64 clients at once, through the socket and in process, on the yescrypt hash.
        let clients = 64
        let loginsEach = smoke ? 1 : 6
        let inProcess = try await inProcessRate(
            directory: directory, user: "gkclient", password: peer.password, clients: clients, each: loginsEach)
        let (daemonRate, latencies) = try socketRate(
            socket, user: "gkclient", password: peer.password, clients: clients, each: loginsEach)

        // Resident memory, idle and after many logins.
        let idle = residentKiB(daemon)
        let cheapLogins = smoke ? 200 : 10_000
        _ = try socketRate(socket, user: "gkcheap", password: cheapPassword, clients: 16, each: cheapLogins / 16)
        let after = residentKiB(daemon)

        // A login whose client goes away at its question, ended: one login at a time, so the next is admitted
        // only once it has.
        let single = try startDaemon(
            daemonPath, socket: directory + "/single", directory: directory, maxLogins: 1)
        var cancels: [Double] = []
        /// A client whose login waits at its question: the one login the daemon admits.
        func admitted() throws -> Client {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let client = try Client(directory + "/single")
                client.send(.request(DaemonRequest(.authenticate, service: "sudo", user: peer.name)))
                if case .question = try client.receive() { return client }
            }
            throw ProcessBench.Skipped.failed("gatekeeperd admitted no login in 10 s")
        }
        for _ in 0..<(smoke ? 3 : 50) {
            let client = try admitted()
            let gone = ContinuousClock.now
            client.close()
            let next = try admitted()
            cancels.append(nanoseconds(gone.duration(to: .now)) / 1e6)
            next.close()
        }
        kill(single, SIGTERM)
        kill(daemon, SIGTERM)
        return Figures(
            sudoUnix: medians[0], sudoModule: medians[1], pamtesterUnix: medians[2], pamtesterModule: medians[3],
            runs: runs, clients: clients, loginsEach: loginsEach, inProcessPerSecond: inProcess,
            daemonPerSecond: daemonRate, p50Milliseconds: percentile(latencies, 0.5),
            p99Milliseconds: percentile(latencies, 0.99), idleKiB: idle, afterKiB: after, cheapLogins: cheapLogins,
            cancelMilliseconds: cancels.sorted())
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// gatekeeperd in the foreground on `socket`, stopped when the run's state is removed; waits until it serves.
    static func startDaemon(_ path: String, socket: String, directory: String, maxLogins: Int) throws -> pid_t {
        let arguments = [
            path, "--foreground", "--socket", socket, "--config-dir", directory + "/pam.d", "--state-dir",
            directory + "/state", "--max-logins", String(maxLogins),
        ]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        guard withCleanSignals({ posix_spawn(&pid, path, &actions, &$0, argv, environ) }) == 0 else {
            throw ProcessBench.Skipped.failed("gatekeeperd did not start")
        }
        let started = pid
        ThrowawayState.onRemoval {
            kill(started, SIGKILL)
            var status: Int32 = 0
            waitpid(started, &status, 0)
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? Client(socket)) == nil {
            guard ContinuousClock.now < deadline else { throw ProcessBench.Skipped.failed("gatekeeperd did not serve") }
            usleep(10_000)
        }
        return pid
    }

    /// Logins a second of `clients` tasks at once, each signing in its own account (`user` and its number) `each`
    /// times through the daemon's
    /// stack built in this process (the same file, the same HostLogin a service of the daemon is).
    static func inProcessRate(directory: String, user: String, password: String, clients: Int, each: Int)
        async throws -> Double
    {
        let loaded = try ConfigurationFile.read(directory + "/pam.d/default", registry: BuiltInBackends.registry)
        let host = try HostLogin(
            provider: try loaded.stack.makeChain(registry: BuiltInBackends.registry), stack: loaded.stack,
            settings: HostSettings(loaded.settings, stateDirectory: directory + "/state-in-process"),
            context: .init(tool: "gatekeeper-bench", remembersLogins: false, maxAttempts: 1, readsGroups: false),
            report: { _ in })
        let start = ContinuousClock.now
        let failures = await withTaskGroup(of: Int.self) { group in
            for index in 0..<clients {
                guard
                    let credentials = try? Credentials(
                        username: "\(user)\(index)", password: Secret(copying: password.utf8))
                else { return clients * each }
                group.addTask {
                    var failed = 0
                    for _ in 0..<each {
                        let gatekeeper = host.gatekeeper(origin: LoginOrigin(service: "sudo"))
                        if (try? await gatekeeper.signIn(credentials)) == nil { failed += 1 }
                    }
                    return failed
                }
            }
            return await group.reduce(0, +)
        }
        let seconds = nanoseconds(start.duration(to: .now)) / 1e9
        guard failures == 0 else { throw ProcessBench.Skipped.failed("in-process logins failed") }
        return Double(clients * each) / seconds
    }

    /// Logins a second of `clients` threads at once, each signing in its own account (`user` and its number)
    /// `each` times through the socket
    /// as the module does; and every login's latency (milliseconds, sorted).
    static func socketRate(_ socket: String, user: String, password: String, clients: Int, each: Int) throws -> (
        Double, [Double]
    ) {
        // Threads of their own, as 64 sudo processes would be: Dispatch would run as many as there are cores.
        let tally = Mutex<(latencies: [Double], failures: Int)>(([], 0))
        let finished = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        for index in 0..<clients {
            Thread {
                var mine: [Double] = []
                var failed = 0
                for _ in 0..<each {
                    let begun = ContinuousClock.now
                    if login(socket, user: "\(user)\(index)", password: password) != .success { failed += 1 }
                    mine.append(nanoseconds(begun.duration(to: .now)) / 1e6)
                }
                tally.withLock {
                    $0.latencies += mine
                    $0.failures += failed
                }
                finished.signal()
            }.start()
        }
        for _ in 0..<clients { finished.wait() }
        let seconds = nanoseconds(start.duration(to: .now)) / 1e9
        let (latencies, failures) = tally.withLock { ($0.latencies.sorted(), $0.failures) }
        guard failures == 0 else { throw ProcessBench.Skipped.failed("\(failures) logins through gatekeeperd failed") }
        return (Double(clients * each) / seconds, latencies)
    }

    /// One login through the socket, as the module makes it: the request, the password to its question.
    static func login(_ socket: String, user: String, password: String) -> PAMResult? {
        guard let client = try? Client(socket) else { return nil }
        client.send(.request(DaemonRequest(.authenticate, service: "sudo", user: user)))
        while let message = try? client.receive() {
            if case .question = message { client.send(.answer(Secret(copying: password.utf8))) }
            if case .result(let code, _) = message { return code }
        }
        return nil
    }

    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func shadowHash(of user: String) -> String? {
        let shadow = (try? String(contentsOfFile: "/etc/shadow", encoding: .utf8)) ?? ""
        for line in shadow.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            if fields.count > 1, fields[0] == user { return String(fields[1]) }
        }
        return nil
    }

    static func shell(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The module's side of the socket.
    final class Client {
        let descriptor: Int32

        init(_ path: String) throws {
            descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else {
                Glibc.close(descriptor)
                throw ProcessBench.Skipped.failed("cannot connect to \(path)")
            }
        }

        private var closed = false
        func close() {
            if !closed { Glibc.close(descriptor) }
            closed = true
        }
        deinit { close() }

        func send(_ message: DaemonMessage) {
            let frame = message.frame()
            _ = frame.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// The next message other than a keepalive; `nil` once the daemon closed the connection.
        func receive() throws -> DaemonMessage? {
            while true {
                guard let header = read(4) else { return nil }
                guard let payload = read(try DaemonMessage.frameLength(header)) else { return nil }
                let message = try DaemonMessage.parse(payload)
                if message != .keepalive { return message }
            }
        }

        private func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let got = bytes.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + filled, count - filled, 0) }
                if got <= 0 { return nil }
                filled += got
            }
            return bytes
        }
    }
}

func daemonTable(_ result: Result<DaemonBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else {
        if case .failure(let reason) = result { return "gatekeeperd and pam_gatekeeper.so: skipped, \(reason)\n" }
        return ""
    }
    let (unix, module) = (figures.sudoUnix, figures.sudoModule)
    let sudoWall = module.seconds / unix.seconds
    let sudoGrowth = Double(module.peakKiB - unix.peakKiB) / 1024
    let testerWall = figures.pamtesterModule.seconds / figures.pamtesterUnix.seconds
    let throughput = figures.daemonPerSecond / figures.inProcessPerSecond
    let cancel = figures.cancelMilliseconds
    return """
        sudo -S -k through pam_unix (yescrypt), wall / peak   \(fixed(unix.seconds * 1000)) ms / \(unix.peakKiB) KiB
        sudo -S -k through pam_gatekeeper.so, wall / peak     \(fixed(module.seconds * 1000)) ms / \(module.peakKiB) KiB
        ratio sudo through the module / through pam_unix      \(fixed(sudoWall))         \(Goals.atMost("sudo through pam_gatekeeper.so / through pam_unix, wall", sudoWall, 1.05))
        sudo's peak memory, module over pam_unix (MiB)        \(fixed(sudoGrowth))         \(Goals.atMost("sudo's peak memory through pam_gatekeeper.so over pam_unix (MiB)", sudoGrowth, 0.30))
        pamtester through pam_unix / the module, wall         \(fixed(figures.pamtesterUnix.seconds * 1000)) ms / \(fixed(figures.pamtesterModule.seconds * 1000)) ms
        ratio pamtester through the module / pam_unix         \(fixed(testerWall))         \(Goals.atMost("pamtester through pam_gatekeeper.so / through pam_unix, wall", testerWall, 1.10))
        \(figures.clients) clients at once, logins/s in process             \(fixed(figures.inProcessPerSecond, 1))
        \(figures.clients) clients at once, logins/s through gatekeeperd     \(fixed(figures.daemonPerSecond, 1))
        ratio through the daemon / in process                 \(fixed(throughput))         \(Goals.atLeast("64 clients: logins a second through gatekeeperd / in process", throughput, 0.80))
        a login through gatekeeperd at that load, p50 / p99   \(fixed(figures.p50Milliseconds, 1)) ms / \(fixed(figures.p99Milliseconds, 1)) ms
        gatekeeperd resident, idle / after \(figures.cheapLogins) logins       \(figures.idleKiB) KiB / \(figures.afterKiB) KiB
        a client gone at its question: the login ended, p50 / max  \(fixed(DaemonBench.percentile(cancel, 0.5), 2)) ms / \(fixed(cancel.last ?? 0, 2)) ms   \(Goals.atMost("a client gone at its question: gatekeeperd ends the login, max (ms)", cancel.last ?? 0, 100, digits: 2))

        """
}

func daemonJSON(_ result: Result<DaemonBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    func run(_ name: String, _ run: ProcessBench.Run) -> String {
        "\"\(name)_ms\":\(fixed(run.seconds * 1000)),\"\(name)_peak_kib\":\(run.peakKiB)"
    }
    return """
        {"runs":\(figures.runs),\(run("sudo_pam_unix", figures.sudoUnix)),\(run("sudo_module", figures.sudoModule)),\
        \(run("pamtester_pam_unix", figures.pamtesterUnix)),\(run("pamtester_module", figures.pamtesterModule)),\
        "sudo_wall_ratio":\(fixed(figures.sudoModule.seconds / figures.sudoUnix.seconds)),"goal_sudo_wall_ratio":1.05,\
        "sudo_peak_growth_mib":\(fixed(Double(figures.sudoModule.peakKiB - figures.sudoUnix.peakKiB) / 1024)),"goal_sudo_peak_growth_mib":0.30,\
        "pamtester_wall_ratio":\(fixed(figures.pamtesterModule.seconds / figures.pamtesterUnix.seconds)),"goal_pamtester_wall_ratio":1.10,\
        "clients":\(figures.clients),"logins_each":\(figures.loginsEach),\
        "in_process_per_second":\(fixed(figures.inProcessPerSecond, 1)),"daemon_per_second":\(fixed(figures.daemonPerSecond, 1)),\
        "throughput_ratio":\(fixed(figures.daemonPerSecond / figures.inProcessPerSecond)),"goal_throughput_ratio":0.80,\
        "p50_ms":\(fixed(figures.p50Milliseconds, 1)),"p99_ms":\(fixed(figures.p99Milliseconds, 1)),\
        "idle_kib":\(figures.idleKiB),"after_logins_kib":\(figures.afterKiB),"logins":\(figures.cheapLogins),\
        "cancel_p50_ms":\(fixed(DaemonBench.percentile(figures.cancelMilliseconds, 0.5))),\
        "cancel_max_ms":\(fixed(figures.cancelMilliseconds.last ?? 0)),"goal_cancel_max_ms":100}
        """
}
