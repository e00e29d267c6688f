import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the built `gatekeeper-run` binary, as a person or a script would.
struct GatekeeperRunTests {
    @Test func theDemoAccountRunsTheCommandAndKeepsItsStatus() throws {
        let result = try run(
            [
                "--user", "alice", "--password-stdin", "--delay", "0", "--", "sh", "-c",
                "echo \"$GATEKEEPER_USER/$GATEKEEPER_PROVIDER\"; exit 3",
            ],
            input: "wonderland\n"
        )
        #expect(result.status == 3)
        #expect(result.stdout == "alice/mock\n")
    }

    @Test func theDefaultDelayIsOneRoundTrip() throws {
        let result = try run(["--user", "bob", "--password-stdin", "--", "true"], input: "builder\n")
        #expect(result.status == 0)
    }

    @Test func aWrongPasswordDoesNotRunTheCommand() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-run-\(UUID())")
        let result = try run(
            ["--user", "alice", "--password-stdin", "--delay", "0", "--", "touch", marker.path],
            input: "not-wonderland\n"
        )
        #expect(result.status == 77)
        #expect(result.stderr.contains("The user name or password is incorrect."))
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(!result.stderr.contains("not-wonderland"))
    }

    @Test func anEmptyUserNameCancels() throws {
        let result = try run(["--user", "", "--password-stdin", "--", "echo", "ran"], input: "wonderland\n")
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
    }

    struct Outcome: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let options: [String]
        let password: String
        let status: Int32
    }

    static let outcomes = [
        Outcome(
            testDescription: "colon in the user name", options: ["--user", "a:b"], password: "wonderland\n", status: 65),
        Outcome(testDescription: "empty password", options: ["--user", "alice"], password: "\n", status: 65),
        Outcome(testDescription: "no input at all", options: ["--user", "alice"], password: "", status: 65),
        Outcome(
            testDescription: "5000-byte password",
            options: ["--user", "alice"],
            password: String(repeating: "x", count: 5000) + "\n",
            status: 65
        ),
        Outcome(testDescription: "not activated", options: ["--user", "carol"], password: "carol-2026\n", status: 77),
        Outcome(testDescription: "locked", options: ["--user", "dave"], password: "dave-2026\n", status: 77),
        Outcome(
            testDescription: "not in the group",
            options: ["--user", "bob", "--group", "admin"],
            password: "builder\n",
            status: 77
        ),
        Outcome(
            testDescription: "in the group",
            options: ["--user", "alice", "--group", "admin"],
            password: "wonderland\n",
            status: 0
        ),
    ]

    @Test(arguments: outcomes)
    func mapsEveryOutcomeToItsStatus(_ outcome: Outcome) throws {
        let result = try run(
            outcome.options + ["--password-stdin", "--delay", "0", "--", "true"], input: outcome.password)
        #expect(result.status == outcome.status, "\(result.stderr)")
        let password = outcome.password.trimmingCharacters(in: .newlines)
        if !password.isEmpty {
            #expect(!result.stderr.contains(password))
        }
    }

    @Test(arguments: [
        [String](),
        ["--bogus", "--", "true"],
        ["--user"],
        ["--provider", "nope", "--", "true"],
        ["--delay", "soon", "--", "true"],
        ["--delay", "-1", "--", "true"],
        ["--provider", "mock", "--provider", "mock", "--", "true"],
    ])
    func refusesBadCommandLines(_ arguments: [String]) throws {
        let result = try run(arguments, input: "")
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("gatekeeper-run: "))
    }

    @Test func helpListsProvidersAndStatuses() throws {
        let result = try run(["--help"], input: "")
        #expect(result.status == 0)
        #expect(result.stdout.contains("--delay SECONDS"))
        #expect(result.stdout.contains("130 login cancelled"))
    }

    @Test func reportsAMissingCommand() throws {
        let result = try run(
            ["--user", "alice", "--password-stdin", "--delay", "0", "--", "/nonexistent/command"],
            input: "wonderland\n"
        )
        #expect(result.status == 127)
    }

    /// Without a terminal, prompts are answered line by line from standard input, with retries.
    @Test func promptsCanBeScripted() throws {
        let result = try run(["--delay", "0", "--", "echo", "ran"], input: "alice\nwrong\nalice\nwonderland\n")
        #expect(result.status == 0)
        #expect(result.stdout == "ran\n")
        #expect(result.stderr.contains("Username: \nPassword: \nThe user name or password is incorrect.\n"))
        #expect(!result.stderr.contains("wonderland"))
    }

    @Test func endOfInputAtAPromptCancels() throws {
        let result = try run(["--delay", "0", "--", "echo", "ran"], input: "alice\n")
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
    }

    /// Ctrl-C while the provider works (a one-hour delay here) cancels the login instead of waiting.
    @Test(.timeLimit(.minutes(1)))
    func anInterruptDuringTheDelayCancels() throws {
        let process = try Spawned(["--delay", "3600", "--", "echo", "ran"])
        process.write("alice\n")
        try process.waitForStderr(containing: "Password: ")
        process.write("wonderland\n")
        // Give the login time to reach the provider's delay, then interrupt.
        usleep(200_000)
        process.interrupt()
        let result = process.finish()
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("The login was cancelled."))
    }
}

// MARK: - Running the binary

struct RunResult {
    /// The exit status, or 128 + the signal number if a signal ended the process.
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `gatekeeper-run` with `arguments`, feeding it `input`, and waits for it to end.
func run(_ arguments: [String], input: String) throws -> RunResult {
    let process = try Spawned(arguments)
    process.write(input)
    return process.finish()
}

/// A running `gatekeeper-run` in a session of its own (so it has no controlling terminal and reads its
/// prompts from standard input, as in a script or CI), with output captured in files.
final class Spawned {
    let pid: pid_t
    private var input: Int32
    private let stdoutPath: String
    private let stderrPath: String

    init(_ arguments: [String]) throws {
        // A process that exits before reading all its input must not take the test runner down with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-run-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutPath = directory.appendingPathComponent("stdout").path
        stderrPath = directory.appendingPathComponent("stderr").path

        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        input = ends[1]
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc): a new session without a controlling terminal.
        posix_spawnattr_setflags(&attributes, 0x80)

        let argv = ([gatekeeperRun.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, gatekeeperRun.path, &actions, &attributes, argv, environ)
        close(ends[0])
        guard spawned == 0 else {
            close(input)
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT)
        }
        pid = child
    }

    /// Writes to the process's standard input.
    func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            guard written > 0 else { return }  // The process closed its input; it has what it wanted.
            bytes = bytes.dropFirst(written)
        }
    }

    /// Sends Ctrl-C's signal.
    func interrupt() {
        kill(pid, SIGINT)
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits until standard error contains `text`.
    func waitForStderr(containing text: String) throws {
        while !stderr.contains(text) {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { throw POSIXError(.ECHILD) }
            usleep(10_000)
        }
    }

    /// Closes standard input, waits for the process to end, and collects what it wrote.
    func finish() -> RunResult {
        close(input)
        input = -1
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F
        let code = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        let stdout = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
        let result = RunResult(status: code, stdout: stdout, stderr: stderr)
        try? FileManager.default.removeItem(atPath: (stdoutPath as NSString).deletingLastPathComponent)
        return result
    }
}

/// The `gatekeeper-run` built next to this test bundle (or named by `GATEKEEPER_RUN`).
let gatekeeperRun: URL = {
    if let path = ProcessInfo.processInfo.environment["GATEKEEPER_RUN"] { return URL(fileURLWithPath: path) }
    let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return bundle.deletingLastPathComponent().appendingPathComponent("gatekeeper-run")
}()
