import CPAMBaseline
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Whole processes, as an admin meets them, each pair run alternately (medians of wall time and of peak
/// resident memory):
/// - `gatekeeper-run --provider pam` against `sudo -S -k true` on the same throwaway PAM service
///   (pam_unix in process for both, a throwaway user's yescrypt password): what an admin would use instead;
/// - `gatekeeper-run --provider pam` against `pamtester` on a pam_matrix service (the fixed cost of a login);
/// - `gatekeeper-run --help` against a Swift program that prints one line, linked the same way (the floor
///   of any Swift tool), and `/bin/true` (the floor of any process);
/// - on both PAM services, the floor of any Swift tool that guards a command with PAM: a Swift program
///   making pamtester's libpam calls in process and executing the command, nothing else
///   (Benchmarks/gatekeeper-bench-floor).
/// Peak memory is GNU time's `%M` (the child's own maximum resident set).
struct ProcessBench {
    struct Run {
        var seconds: Double
        var peakKiB: Int
    }

    struct Figures {
        var sudo: Run
        var gatekeeperSudo: Run
        var floorSudo: Run
        var pamtester: Run
        var gatekeeperLogin: Run
        var floorLogin: Run
        var nothing: Run
        var hello: Run
        var help: Run
        var runs: Int
    }

    /// Why the figures could not be taken, when they could not.
    enum Skipped: Error, CustomStringConvertible {
        case notRoot, missing(String), failed(String)

        var description: String {
            switch self {
            case .notRoot: "needs root, to place PAM services in /etc/pam.d and a throwaway user for sudo"
            case .missing(let what): "\(what) is not installed"
            case .failed(let what): what
            }
        }
    }

    static func run(runs: Int = smoke ? 3 : 21) throws -> Figures {
        guard geteuid() == 0 else { throw Skipped.notRoot }
        // Programs that do not read their input (/bin/true, --help) must not end the benchmark by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let candidates = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/pam_wrapper/pam_matrix.so" }
        guard let matrix = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw Skipped.missing("pam_matrix.so (libpam-wrapper)")
        }
        for (tool, package) in [
            ("/usr/bin/pamtester", "pamtester"), ("/usr/bin/time", "GNU time"), ("/usr/bin/sudo", "sudo"),
            ("/usr/sbin/useradd", "useradd (passwd)"), ("/usr/sbin/chpasswd", "chpasswd (passwd)"),
        ] where !FileManager.default.fileExists(atPath: tool) {
            throw Skipped.missing(package)
        }
        let gatekeeperRun = try benchedTool("GATEKEEPER_RUN", "gatekeeper-run")
        let hello = try benchedTool("GATEKEEPER_HELLO", "gatekeeper-bench-hello")
        let floor = try benchedTool("GATEKEEPER_FLOOR", "gatekeeper-bench-floor")

        ThrowawayState.prepare()
        defer { ThrowawayState.removeAll() }
        // The root login below counts in root's default lockout directory: made by this run, it goes with it.
        if !FileManager.default.fileExists(atPath: "/var/lib/gatekeeper") {
            ThrowawayState.onRemoval { try? FileManager.default.removeItem(atPath: "/var/lib/gatekeeper") }
        }
        let service = "\(ThrowawayState.prefix)\(getpid())"
        let passdb = "\(ThrowawayState.scratch)/\(service).passdb"
        let serviceFile = "/etc/pam.d/" + service
        try ThrowawayState.create(passdb, "root:secret:\(service)\n", mode: 0o600)
        try ThrowawayState.create(
            serviceFile, "auth required \(matrix) passdb=\(passdb)\naccount required \(matrix) passdb=\(passdb)\n",
            mode: 0o644)
        let peer = try SudoPeer()

        let sudo = Command([peer.sudo, "-S", "-k", "/bin/true"], input: peer.password + "\n", as: peer.user)
        let gatekeeperSudo = Command(
            [
                gatekeeperRun, "--provider", "pam", "--service", peer.service, "--user", peer.name,
                "--password-stdin", "--", "/bin/true",
            ], input: peer.password + "\n")
        let floorSudo = Command([floor, peer.service, peer.name, "/bin/true"], input: peer.password + "\n")
        let pamtester = Command(["/usr/bin/pamtester", service, "root", "authenticate", "acct_mgmt"])
        let floorLogin = Command([floor, service, "root", "/bin/true"])
        let login = Command([
            gatekeeperRun, "--provider", "pam", "--service", service, "--user", "root", "--password-stdin", "--",
            "/bin/true",
        ])
        let commands = [
            sudo, gatekeeperSudo, floorSudo, pamtester, login, floorLogin, Command(["/bin/true"]), Command([hello]),
            Command([gatekeeperRun, "--help"]),
        ]
        // A first run of each loads the files into the page cache.
        for command in commands { _ = try measure(command) }
        var samples = Array(repeating: [Run](), count: commands.count)
        let report = "\(ThrowawayState.scratch)/\(service).peak"
        ThrowawayState.onRemoval { unlink(report) }
        for _ in 0..<runs {
            for (slot, command) in commands.enumerated() {
                var run = try measure(command)
                // A child's ru_maxrss counts the memory of the process that spawned it (this one holds a
                // million-user file by now): the peak is taken by GNU time, a small process, instead.
                // GNU time runs as the command's user, and must be able to write its report.
                let descriptor = open(report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                if let user = command.user { _ = fchown(descriptor, user.uid, user.gid) }
                close(descriptor)
                _ = try measure(command.timed(into: report))
                run.peakKiB =
                    Int(
                        try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(
                            in: .whitespacesAndNewlines)) ?? 0
                samples[slot].append(run)
            }
        }
        let medians = samples.map(median)
        return Figures(
            sudo: medians[0], gatekeeperSudo: medians[1], floorSudo: medians[2], pamtester: medians[3],
            gatekeeperLogin: medians[4], floorLogin: medians[5], nothing: medians[6], hello: medians[7],
            help: medians[8], runs: runs)
    }

    /// A command line, its standard input, and the user it runs as (the invoker's when `nil`).
    struct Command {
        var arguments: [String]
        var input = "secret\n"
        var user: (uid: uid_t, gid: gid_t)?

        init(_ arguments: [String], input: String = "secret\n", as user: (uid: uid_t, gid: gid_t)? = nil) {
            self.arguments = arguments
            self.input = input
            self.user = user
        }

        /// The same under GNU time, which writes the command's peak memory (KiB) to `report`.
        func timed(into report: String) -> Command {
            Command(["/usr/bin/time", "-f", "%M", "-o", report] + arguments, input: input, as: user)
        }
    }

    /// Medians of wall time and of peak memory, each on its own.
    static func median(_ runs: [Run]) -> Run {
        let seconds = runs.map(\.seconds).sorted()
        let peaks = runs.map(\.peakKiB).sorted()
        return Run(seconds: seconds[seconds.count / 2], peakKiB: peaks[peaks.count / 2])
    }

    /// Runs `command` and times it; a command that fails stops the measurement (and what it set up is removed).
    static func measure(_ command: Command) throws -> Run {
        let run = try spawnTimed(command.arguments, input: command.input, as: command.user)
        guard run.status == 0 else {
            throw Skipped.failed("\(command.arguments.joined(separator: " ")) failed with status \(run.status)")
        }
        return Run(seconds: run.seconds, peakKiB: run.peakKiB)
    }
}

/// What the whole-process figures put on the system as root — PAM services, a pam_matrix passdb, a user
/// and a sudoers rule — each named after this run's process id and removed when the run ends: on any
/// path of the run, on SIGINT and SIGTERM, and, for a run killed otherwise, by the next run (whatever
/// such a name holds whose process is gone).
enum ThrowawayState {
    static let prefix = "gatekeeper-bench-"
    static let sudoPrefix = "gatekeeper-bench-sudo-"
    static let userPrefix = "gkbench"
    /// The user's comment (GECOS) field: a leftover user is removed only if it has it, so no account of
    /// someone else's that happens to be named like one is ever touched.
    static let userComment = "gatekeeper-bench throwaway user"
    static let scratch = privateTemporaryDirectory.path
    private static let removals = Mutex<[@Sendable () -> Void]>([])
    private static let watching = Mutex<[any DispatchSourceSignal]>([])

    /// Removes what dead runs left, and has SIGINT and SIGTERM remove this run's state before it ends.
    static func prepare() {
        removeLeftovers()
        watching.withLock { sources in
            guard sources.isEmpty else { return }
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    removeAll()
                    exit(128 + number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// Runs `removal` when the state is removed (in reverse order of registration).
    static func onRemoval(_ removal: @escaping @Sendable () -> Void) {
        removals.withLock { $0.append(removal) }
    }

    static func removeAll() {
        let pending = removals.withLock { removals in
            defer { removals.removeAll() }
            return removals
        }
        for removal in pending.reversed() { removal() }
    }

    /// Creates `path` with `text`, never over an existing file or through a link, with `mode`, and
    /// registers its removal.
    static func create(_ path: String, _ text: String, mode: mode_t) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw ProcessBench.Skipped.failed("\(path) cannot be made: errno \(errno)") }
        onRemoval { unlink(path) }
        let written = text.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
        fchmod(descriptor, mode)
        close(descriptor)
        guard written == text.utf8.count else { throw ProcessBench.Skipped.failed("\(path) was not written") }
    }

    /// Whether the run `id` names has ended — no such process, or a zombie nobody has reaped yet — or is
    /// this process (nothing of this run exists yet).
    private static func gone(_ id: Int32) -> Bool {
        guard id != getpid() else { return true }
        guard let stat = try? String(contentsOfFile: "/proc/\(id)/stat", encoding: .utf8) else { return true }
        // "pid (command) state …": the command may hold anything but the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].dropFirst().trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// The output files of ``Running`` processes of a run that is gone (`PREFIXrunning-PID-N.out` and `.err`):
    /// a run killed before it finished its processes.
    private static func runningLeftovers() -> [(String, Int32)] {
        let start = prefix + "running-"
        return ((try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []).compactMap { file in
            guard file.hasPrefix(start), file.hasSuffix(".out") || file.hasSuffix(".err"),
                let id = Int32(file.dropFirst(start.count).prefix { $0 != "-" }), id > 0, gone(id)
            else { return nil }
            return ("\(scratch)/\(file)", id)
        }
    }

    private static func removeLeftovers() {
        func ids(in directory: String, after prefix: String, suffix: String = "") -> [(String, Int32)] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { file in
                // A daemon peer's names carry a `d` before the run's id.
                guard file.hasPrefix(prefix), file.hasSuffix(suffix),
                    let id = Int32(file.dropFirst(prefix.count).dropLast(suffix.count).drop(while: { $0 == "d" })),
                    id > 0, gone(id)
                else { return nil }
                return ("\(directory)/\(file)", id)
            }
        }
        for (path, _) in ids(in: "/etc/sudoers.d", after: sudoPrefix) + ids(in: "/etc/pam.d", after: sudoPrefix)
            + ids(in: "/etc/pam.d", after: prefix) + ids(in: scratch, after: prefix, suffix: ".passdb")
            + ids(in: scratch, after: prefix, suffix: ".peak") + runningLeftovers()
        {
            unlink(path)
        }
        let users = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? ""
        for line in users.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count > 4, fields[0].hasPrefix(userPrefix), fields[4] == userComment,
                let id = Int32(fields[0].dropFirst(userPrefix.count).drop(while: { $0 == "d" })), id > 0, gone(id)
            else { continue }
            let name = fields[0]
            SudoPeer.removeUser(String(name))
        }
    }
}

/// What sudo is measured with, made for one run and removed after it (``ThrowawayState``): a user of its
/// own with a random yescrypt password (chpasswd, as passwd would set it), a PAM service of pam_unix lines
/// only, and a sudoers rule that lets that user run /bin/true, asking the password through that service
/// (sudo's `pam_service`).
struct SudoPeer {
    let name: String
    let service: String
    let password: String
    let user: (uid: uid_t, gid: gid_t)
    let sudo = "/usr/bin/sudo"

    /// - Parameters:
    ///   - tag: Told apart from another peer of the same run (`d` for the daemon's: `gkbenchd1234`).
    ///   - pamLines: The service's lines, pam_unix's when `nil`.
    init(tag: String = "", pamLines: String? = nil) throws {
        let id = getpid()
        name = "\(ThrowawayState.userPrefix)\(tag)\(id)"
        service = "\(ThrowawayState.sudoPrefix)\(tag)\(id)"
        let sudoers = "/etc/sudoers.d/\(ThrowawayState.sudoPrefix)\(tag)\(id)"
        // SystemRandomNumberGenerator: the kernel's (getrandom).
        password = (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let name = self.name
        ThrowawayState.onRemoval { Self.removeUser(name) }
        guard
            Self.runs([
                "/usr/sbin/useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--comment",
                ThrowawayState.userComment, name,
            ])
        else { throw ProcessBench.Skipped.failed("useradd \(name) failed") }
        guard Self.runs(["/usr/sbin/chpasswd"], input: "\(name):\(password)\n"), let entry = getpwnam(name) else {
            throw ProcessBench.Skipped.failed("chpasswd for \(name) failed")
        }
        user = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        try ThrowawayState.create(
            "/etc/pam.d/\(service)",
            pamLines ?? "auth required pam_unix.so\naccount required pam_unix.so\nsession required pam_unix.so\n",
            mode: 0o644)
        try ThrowawayState.create(
            sudoers, "Defaults:\(name) pam_service=\(service), !lecture\n\(name) ALL=(root) /bin/true\n", mode: 0o440)
        guard Self.runs(["/usr/sbin/visudo", "-c", "-q", "-f", sudoers]) else {
            throw ProcessBench.Skipped.failed("the sudoers rule \(sudoers) was not accepted")
        }
    }

    /// The user and what sudo and gatekeeper-run may have kept of it: sudo's timestamp, a failed login's tally.
    static func removeUser(_ name: String) {
        unlink("/run/sudo/ts/\(name)")
        unlink("/var/lib/gatekeeper/faillock/\(name)")
        // Forced: a sudo of the user still running (a run stopped by a signal mid-measurement) would keep it.
        runs(["/usr/sbin/userdel", "--force", name])
    }

    @discardableResult
    private static func runs(_ command: [String], input: String = "") -> Bool {
        (try? spawnTimed(command, input: input).status) == 0
    }
}

/// Starts `command` with `input` on its standard input, its output discarded and no controlling terminal
/// (so programs read a password from standard input), as `user` when given, and waits for it; returns its
/// wall time, its wait status and `ru_maxrss` (which includes this process's own memory).
func spawnTimed(_ command: [String], input: String, as user: (uid: uid_t, gid: gid_t)? = nil) throws -> (
    seconds: Double, status: Int32, peakKiB: Int
) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
    // Neither end reaches the command but as its standard input (dup2 clears the flag on descriptor 0).
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    let argv = command.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let start = ContinuousClock.now
    let pid = gatekeeper_spawn_as(user.map { Int($0.uid) } ?? -1, user.map { Int($0.gid) } ?? -1, argv, ends[0])
    close(ends[0])
    guard pid > 0 else {
        close(ends[1])
        throw POSIXError(.EAGAIN)
    }
    _ = input.withCString { write(ends[1], $0, strlen($0)) }
    close(ends[1])
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    return (nanoseconds(start.duration(to: .now)) / 1e9, status, usage.ru_maxrss)
}

func processTable(_ result: Result<ProcessBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else {
        if case .failure(let reason) = result { return "whole processes: skipped, \(reason)\n" }
        return ""
    }
    let (sudo, ours) = (figures.sudo, figures.gatekeeperSudo)
    let (tester, login) = (figures.pamtester, figures.gatekeeperLogin)
    let (hello, help) = (figures.hello, figures.help)
    let (floorSudo, floorLogin) = (figures.floorSudo, figures.floorLogin)
    func ratio(_ a: ProcessBench.Run, _ b: ProcessBench.Run) -> (wall: Double, peak: Double) {
        (a.seconds / b.seconds, Double(a.peakKiB) / Double(b.peakKiB))
    }
    let (sudoWall, sudoPeak) = ratio(ours, sudo)
    let (testerWall, testerPeak) = ratio(login, tester)
    let (helpWall, helpPeak) = ratio(help, hello)
    return """
        sudo -S -k /bin/true (pam_unix), wall / peak    \(fixed(sudo.seconds * 1000)) ms / \(sudo.peakKiB) KiB
        gatekeeper-run, same service, wall / peak       \(fixed(ours.seconds * 1000)) ms / \(ours.peakKiB) KiB
        ratio gatekeeper-run / sudo, wall               \(fixed(sudoWall))         \(Goals.atMost("gatekeeper-run / sudo, same PAM service, wall", sudoWall, 1.00))
        ratio gatekeeper-run / sudo, peak memory        \(fixed(sudoPeak))         \(Goals.atMost("gatekeeper-run / sudo, same PAM service, peak memory", sudoPeak, 1.00))
          the floor: Swift, libpam's calls and exec     \(fixed(floorSudo.seconds * 1000)) ms / \(floorSudo.peakKiB) KiB, \(fixed(floorSudo.seconds / sudo.seconds)) / \(fixed(Double(floorSudo.peakKiB) / Double(sudo.peakKiB))) × sudo
        pamtester login (pam_matrix), wall / peak       \(fixed(tester.seconds * 1000)) ms / \(tester.peakKiB) KiB
        gatekeeper-run --provider pam, wall / peak      \(fixed(login.seconds * 1000)) ms / \(login.peakKiB) KiB
        ratio gatekeeper-run / pamtester, wall          \(fixed(testerWall))         \(Goals.atMost("gatekeeper-run --provider pam / pamtester, wall", testerWall, 2.00))
        ratio gatekeeper-run / pamtester, peak memory   \(fixed(testerPeak))         \(Goals.atMost("gatekeeper-run --provider pam / pamtester, peak memory", testerPeak, 2.00))
          the floor: Swift, libpam's calls and exec     \(fixed(floorLogin.seconds * 1000)) ms / \(floorLogin.peakKiB) KiB, \(fixed(floorLogin.seconds / tester.seconds)) / \(fixed(Double(floorLogin.peakKiB) / Double(tester.peakKiB))) × pamtester
        /bin/true, wall / peak memory                   \(fixed(figures.nothing.seconds * 1000)) ms / \(figures.nothing.peakKiB) KiB
        a Swift program printing a line, wall / peak    \(fixed(hello.seconds * 1000)) ms / \(hello.peakKiB) KiB
        gatekeeper-run --help, wall / peak memory       \(fixed(help.seconds * 1000)) ms / \(help.peakKiB) KiB
        ratio --help / that program, wall               \(fixed(helpWall))         \(Goals.atMost("gatekeeper-run --help / a Swift program printing a line, wall", helpWall, 1.20))
        ratio --help / that program, peak memory        \(fixed(helpPeak))         \(Goals.atMost("gatekeeper-run --help / a Swift program printing a line, peak memory", helpPeak, 1.20))

        """
}

func processJSON(_ result: Result<ProcessBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    func run(_ name: String, _ run: ProcessBench.Run) -> String {
        "\"\(name)_ms\":\(fixed(run.seconds * 1000)),\"\(name)_peak_kib\":\(run.peakKiB)"
    }
    return """
        {"runs":\(figures.runs),\(run("sudo", figures.sudo)),\(run("gatekeeper_run_sudo_service", figures.gatekeeperSudo)),\
        "sudo_wall_ratio":\(fixed(figures.gatekeeperSudo.seconds / figures.sudo.seconds)),"goal_sudo_wall_ratio":1.00,\
        "sudo_peak_ratio":\(fixed(Double(figures.gatekeeperSudo.peakKiB) / Double(figures.sudo.peakKiB))),"goal_sudo_peak_ratio":1.00,\
        \(run("floor_sudo_service", figures.floorSudo)),\(run("floor_matrix_service", figures.floorLogin)),\
        \(run("pamtester", figures.pamtester)),\(run("gatekeeper_run", figures.gatekeeperLogin)),\
        "wall_ratio":\(fixed(figures.gatekeeperLogin.seconds / figures.pamtester.seconds)),"goal_wall_ratio":2.00,\
        "peak_ratio":\(fixed(Double(figures.gatekeeperLogin.peakKiB) / Double(figures.pamtester.peakKiB))),"goal_peak_ratio":2.00,\
        \(run("true", figures.nothing)),\(run("swift_hello", figures.hello)),\(run("help", figures.help)),\
        "help_wall_ratio":\(fixed(figures.help.seconds / figures.hello.seconds)),"goal_help_ratio":1.20,\
        "help_peak_ratio":\(fixed(Double(figures.help.peakKiB) / Double(figures.hello.peakKiB)))}
        """
}

/// A program the benchmark runs: the one `variable` names (`make bench` passes the tools as they are
/// installed, built with the Swift runtime linked in statically, as `make` does), or `name` beside this
/// benchmark.
func benchedTool(_ variable: String, _ name: String) throws -> String {
    let path =
        ProcessInfo.processInfo.environment[variable]
        ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent(name).path
    guard FileManager.default.fileExists(atPath: path) else {
        throw ProcessBench.Skipped.missing("\(name) beside gatekeeper-bench (make bench builds it)")
    }
    return path
}
