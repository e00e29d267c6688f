import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whole processes, as an admin meets them: `gatekeeper-run --provider pam` against `pamtester` on the
/// same pam_matrix service in /etc/pam.d (wall time and peak resident memory, medians of interleaved
/// runs), and `gatekeeper-run --help` against `/bin/true`, a C program that does nothing. Peak memory
/// is GNU time's `%M` (the child's own maximum resident set).
struct ProcessBench {
    struct Run {
        var seconds: Double
        var peakKiB: Int
    }

    struct Figures {
        var pamtester: Run
        var gatekeeperLogin: Run
        var nothing: Run
        var help: Run
        var runs: Int
    }

    /// Why the figures could not be taken, when they could not.
    enum Skipped: Error, CustomStringConvertible {
        case notRoot, missing(String)

        var description: String {
            switch self {
            case .notRoot: "needs root, to place a pam_matrix service in /etc/pam.d for pamtester"
            case .missing(let what): "\(what) is not installed"
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
        guard FileManager.default.fileExists(atPath: "/usr/bin/pamtester") else { throw Skipped.missing("pamtester") }
        guard FileManager.default.fileExists(atPath: "/usr/bin/time") else { throw Skipped.missing("GNU time") }
        // The tool as it is installed (`make bench` builds it with the Swift runtime linked in statically,
        // as `make` does for the tools), or the one beside this benchmark.
        let gatekeeperRun =
            ProcessInfo.processInfo.environment["GATEKEEPER_RUN"]
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("gatekeeper-run").path
        guard FileManager.default.fileExists(atPath: gatekeeperRun) else {
            throw Skipped.missing("gatekeeper-run beside gatekeeper-bench (make bench builds it)")
        }

        let service = "gatekeeper-bench-\(getpid())"
        let passdb = privateTemporaryDirectory.appendingPathComponent("\(service).passdb").path
        let serviceFile = "/etc/pam.d/" + service
        try "root:secret:\(service)\n".write(toFile: passdb, atomically: true, encoding: .utf8)
        try "auth required \(matrix) passdb=\(passdb)\naccount required \(matrix) passdb=\(passdb)\n"
            .write(toFile: serviceFile, atomically: true, encoding: .utf8)
        defer {
            unlink(serviceFile)
            unlink(passdb)
        }

        let pamtester = ["/usr/bin/pamtester", service, "root", "authenticate", "acct_mgmt"]
        let login = [
            gatekeeperRun, "--provider", "pam", "--service", service, "--user", "root", "--password-stdin", "--",
            "/bin/true",
        ]
        let nothing = ["/bin/true"]
        let help = [gatekeeperRun, "--help"]
        // A first run of each loads the files into the page cache.
        for command in [pamtester, login, nothing, help] { _ = try measure(command, input: "secret\n") }
        var samples: [[Run]] = [[], [], [], []]
        let report = privateTemporaryDirectory.appendingPathComponent("\(service).peak").path
        defer { unlink(report) }
        for _ in 0..<runs {
            for (slot, command) in [pamtester, login, nothing, help].enumerated() {
                var run = try measure(command, input: "secret\n")
                // A child's ru_maxrss counts the memory of the process that spawned it (this one holds a
                // million-user file by now): the peak is taken by GNU time, a small process, instead.
                _ = try measure(["/usr/bin/time", "-f", "%M", "-o", report] + command, input: "secret\n")
                run.peakKiB =
                    Int(
                        try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(
                            in: .whitespacesAndNewlines)) ?? 0
                samples[slot].append(run)
            }
        }
        return Figures(
            pamtester: median(samples[0]),
            gatekeeperLogin: median(samples[1]),
            nothing: median(samples[2]),
            help: median(samples[3]),
            runs: runs
        )
    }

    /// Medians of wall time and of peak memory, each on its own.
    private static func median(_ runs: [Run]) -> Run {
        let seconds = runs.map(\.seconds).sorted()
        let peaks = runs.map(\.peakKiB).sorted()
        return Run(seconds: seconds[seconds.count / 2], peakKiB: peaks[peaks.count / 2])
    }

    /// `spawnTimed`, stopping the benchmark when the command fails.
    private static func measure(_ command: [String], input: String) throws -> Run {
        let run = try spawnTimed(command, input: input)
        guard run.status == 0 else { fatalError("\(command.joined(separator: " ")) failed with status \(run.status)") }
        return Run(seconds: run.seconds, peakKiB: run.peakKiB)
    }
}

/// Starts `command` with `input` on its standard input, its output discarded and no controlling terminal
/// (so programs read a password from standard input), and waits for it; returns its wall time, its wait
/// status and `ru_maxrss` (which includes this process's own memory).
func spawnTimed(_ command: [String], input: String) throws -> (seconds: Double, status: Int32, peakKiB: Int) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
    posix_spawn_file_actions_addclose(&actions, ends[1])
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID
    let argv = command.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let start = ContinuousClock.now
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, command[0], &actions, &attributes, argv, environ)
    close(ends[0])
    guard spawned == 0 else {
        close(ends[1])
        throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT)
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
    let (tester, login) = (figures.pamtester, figures.gatekeeperLogin)
    return """
        pamtester login, wall / peak memory             \(fixed(tester.seconds * 1000)) ms / \(tester.peakKiB) KiB
        gatekeeper-run --provider pam, wall / peak      \(fixed(login.seconds * 1000)) ms / \(login.peakKiB) KiB
        ratio gatekeeper-run / pamtester, wall          \(fixed(login.seconds / tester.seconds))         \(Goals.atMost("gatekeeper-run --provider pam / pamtester, wall", login.seconds / tester.seconds, 1.10))
        ratio gatekeeper-run / pamtester, peak memory   \(fixed(Double(login.peakKiB) / Double(tester.peakKiB)))         \(Goals.atMost("gatekeeper-run --provider pam / pamtester, peak memory", Double(login.peakKiB) / Double(tester.peakKiB), 1.30))
        /bin/true, wall / peak memory                   \(fixed(figures.nothing.seconds * 1000)) ms / \(figures.nothing.peakKiB) KiB
        gatekeeper-run --help, wall / peak memory       \(fixed(figures.help.seconds * 1000)) ms / \(figures.help.peakKiB) KiB

        """
}

func processJSON(_ result: Result<ProcessBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    let (tester, login) = (figures.pamtester, figures.gatekeeperLogin)
    return """
        {"runs":\(figures.runs),"pamtester_ms":\(fixed(tester.seconds * 1000)),"pamtester_peak_kib":\(tester.peakKiB),\
        "gatekeeper_run_ms":\(fixed(login.seconds * 1000)),"gatekeeper_run_peak_kib":\(login.peakKiB),\
        "wall_ratio":\(fixed(login.seconds / tester.seconds)),"goal_wall_ratio":1.10,\
        "peak_ratio":\(fixed(Double(login.peakKiB) / Double(tester.peakKiB))),"goal_peak_ratio":1.30,\
        "true_ms":\(fixed(figures.nothing.seconds * 1000)),"true_peak_kib":\(figures.nothing.peakKiB),\
        "help_ms":\(fixed(figures.help.seconds * 1000)),"help_peak_kib":\(figures.help.peakKiB)}
        """
}
