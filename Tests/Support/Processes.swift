// Running the package's executables from tests, as a script or a person at a terminal would.
public import Foundation
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// An executable built next to the test bundle (or named by the environment variable `NAME_PATH`, with
/// `-` as `_` and in capitals, e.g. `GATEKEEPER_RUN_PATH`).
public func builtExecutable(_ name: String) -> URL {
    let variable = name.uppercased().replacingOccurrences(of: "-", with: "_") + "_PATH"
    if let path = ProcessInfo.processInfo.environment[variable] { return URL(fileURLWithPath: path) }
    let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return bundle.deletingLastPathComponent().appendingPathComponent(name)
}

/// Runs `command` with `/bin/sh`, feeding it `input`; returns its status and its output (standard
/// output and standard error together). Spawned and reaped here, not through Foundation's `Process`,
/// whose `waitUntilExit` can miss a child's exit under load and wait for ever.
@discardableResult
public func shell(_ command: String, input: String = "") throws -> (status: Int32, output: String) {
    let process = try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", command], mergingStandardError: true)
    process.write(input)
    let result = process.finish()
    return (result.status, result.stdout)
}

/// How a process ended and what it wrote.
public struct RunResult: Sendable {
    /// The exit status, or 128 + the signal number if a signal ended the process.
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `executable` with `arguments`, feeding it `input`, and waits for it to end.
public func run(_ executable: URL, _ arguments: [String], input: String, environment: [String: String] = [:]) throws
    -> RunResult
{
    let process = try Spawned(executable, arguments, environment: environment)
    process.write(input)
    return process.finish()
}

/// Runs `executable` with standard input read from the file at `inputFile` (as `< FILE`).
public func run(_ executable: URL, _ arguments: [String], inputFile: String) throws -> RunResult {
    try Spawned(executable, arguments, standardInput: inputFile).finish()
}

/// Runs `executable` feeding it raw bytes.
public func run(_ executable: URL, _ arguments: [String], bytes: [UInt8]) throws -> RunResult {
    let process = try Spawned(executable, arguments)
    process.write(bytes)
    return process.finish()
}

/// A running process in a session of its own, so it has no controlling terminal and reads its prompts
/// from standard input, as in a script or CI, with its output captured in files.
public final class Spawned {
    public let pid: pid_t
    private var input: Int32
    private let directory: URL

    /// - Parameter mergingStandardError: Send standard error to standard output's file, as `2>&1`.
    public init(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String] = [:],
        mergingStandardError: Bool = false,
        standardInput: String? = nil,
        standardInputDescriptor: Int32? = nil
    ) throws {
        // A process that exits before reading all its input must not take the test runner down with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        directory = URL(fileURLWithPath: temporaryDirectory("gatekeeper-test"))
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        input = ends[1]
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[0]) }
        let (stdoutPath, stderrPath) = (Self.path("stdout", in: directory), Self.path("stderr", in: directory))
        pid = try spawn(
            executable,
            arguments,
            environment: environment,
            setUp: { actions in
                if let standardInputDescriptor {
                    posix_spawn_file_actions_adddup2(&actions, standardInputDescriptor, 0)
                } else if let standardInput {
                    posix_spawn_file_actions_addopen(&actions, 0, standardInput, O_RDONLY, 0)
                } else {
                    posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
                }
                posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                if mergingStandardError {
                    posix_spawn_file_actions_adddup2(&actions, 1, 2)
                } else {
                    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                }
            }
        )
    }

    private static func path(_ name: String, in directory: URL) -> String {
        directory.appendingPathComponent(name).path
    }

    private func path(_ name: String) -> String {
        Self.path(name, in: directory)
    }

    /// Writes to the process's standard input.
    public func write(_ text: String) {
        write(Array(text.utf8))
    }

    public func write(_ bytes: [UInt8]) {
        writeAll(input, bytes)  // Stops early if the process closed its input: it has what it wanted.
    }

    /// Sends Ctrl-C's signal.
    public func interrupt() {
        kill(pid, SIGINT)
    }

    /// Sends `signal` to the process.
    public func send(_ signal: Int32) {
        kill(pid, signal)
    }

    public var stdout: String { (try? String(contentsOfFile: path("stdout"), encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: path("stderr"), encoding: .utf8)) ?? "" }

    /// Waits until standard error contains `text`, 20 seconds at most. A process that ends meanwhile has
    /// had its last word: its error output is read once more, and its status kept for ``finish()``.
    public func waitForStderr(containing text: String) throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !stderr.contains(text) {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut(text: text, output: stderr) }
            var status: Int32 = 0
            if exitStatus == nil, waitpid(pid, &status, WNOHANG) == pid {
                let signal = status & 0x7F
                exitStatus = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
            }
            if exitStatus != nil {
                if stderr.contains(text) { return }
                throw POSIXError(.ECHILD)
            }
            usleep(10_000)
        }
    }

    /// The status of a process that ended while ``waitForStderr(containing:)`` waited.
    private var exitStatus: Int32?

    /// How many bytes written to the process's standard input it has not read yet.
    public var unreadInput: Int { unreadBytes(input) }

    /// Closes standard input, waits for the process to end, and collects what it wrote. A process still
    /// running after `timeout` is killed, with its session (everything it started), and answers -1 with
    /// a line saying so on its standard error: a hung tool fails its test, never hangs the run.
    public func finish(timeout: Duration = .seconds(120)) -> RunResult {
        close(input)
        input = -1
        let status = exitStatus ?? waitForExit(pid, deadline: ContinuousClock.now + timeout)
        var errors = stderr
        if status == nil {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            _ = waitForExit(pid)
            errors += "\n[killed: still running after \(timeout)]\n"
        }
        let result = RunResult(status: status ?? -1, stdout: stdout, stderr: errors)
        try? FileManager.default.removeItem(at: directory)
        return result
    }
}

/// A process on a pseudo-terminal it has as its controlling terminal, as when a person runs it: the test
/// types on the keyboard side and reads the screen.
public final class TerminalSession {
    public let pid: pid_t
    /// The terminal's device path (`/dev/pts/N`).
    public let terminalName: String
    private let controller: Int32
    private var screen: [UInt8] = []

    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
        signal(SIGPIPE, SIG_IGN)
        var controller: Int32 = -1
        var terminal: Int32 = -1
        var size = winsize(ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0)
        guard openpty(&controller, &terminal, nil, nil, &size) == 0 else { throw POSIXError(.ENXIO) }
        self.controller = controller
        defer { close(terminal) }
        guard let name = ttyname(terminal).map({ String(cString: $0) }) else { throw POSIXError(.ENOTTY) }
        terminalName = name
        // In a new session, opening the terminal makes it the controlling one: /dev/tty works and Ctrl-C
        // in cooked mode sends SIGINT.
        pid = try spawn(
            executable,
            arguments,
            environment: ["TERM": "xterm"].merging(environment) { $1 },
            setUp: { actions in
                posix_spawn_file_actions_addopen(&actions, 0, name, O_RDWR, 0)
                posix_spawn_file_actions_adddup2(&actions, 0, 1)
                posix_spawn_file_actions_adddup2(&actions, 0, 2)
            }
        )
    }

    /// Types `text` (use "\r" for Enter, "\u{3}" for Ctrl-C, "\u{4}" for Ctrl-D).
    public func type(_ text: String) {
        writeAll(controller, Array(text.utf8))
    }

    /// Everything the program has written so far.
    public var output: String {
        drain()
        return String(decoding: screen, as: UTF8.self)
    }

    /// Waits up to `timeout` for the output to contain `text` after the first `after` characters; returns
    /// the output. Throws if the text does not appear in time.
    @discardableResult
    public func waitFor(_ text: String, after offset: Int = 0, timeout: Duration = .seconds(20)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let current = output
            if String(current.dropFirst(offset)).contains(text) { return current }
            usleep(10_000)
        }
        throw WaitTimedOut(text: text, output: output)
    }

    /// Sends `signal` to the process.
    public func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// The terminal's local modes (`c_lflag`: ECHO, ICANON, ISIG …) as they are now.
    public var localModes: tcflag_t {
        var settings = termios()
        tcgetattr(controller, &settings)
        return settings.c_lflag
    }

    /// Waits for the process to end and returns its status, reading its output meanwhile (so a program
    /// writing more than the terminal holds cannot block). A program still running after `timeout` is
    /// killed and -1 returned: a test fails, never hangs the run.
    public func finish(timeout: Duration = .seconds(30)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            drain()
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                drain()
                let signal = status & 0x7F
                return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
            }
            if reaped < 0 && errno != EINTR { return -1 }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        _ = waitForExit(pid)
        drain()
        return -1
    }

    private func drain() {
        screen += readAvailable(controller)
    }

    deinit {
        kill(pid, SIGKILL)
        _ = waitForExit(pid)
        close(controller)
    }
}

/// Reads whatever is waiting on `descriptor` without blocking.
public func readAvailable(_ descriptor: Int32) -> [UInt8] {
    var collected: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    while poll(&poller, 1, 0) > 0 {
        let count = read(descriptor, &buffer, buffer.count)
        if count <= 0 { break }
        collected += buffer[..<count]
    }
    return collected
}

public struct WaitTimedOut: Error, CustomStringConvertible {
    public let text: String
    public let output: String

    public init(text: String, output: String) {
        self.text = text
        self.output = output
    }

    public var description: String { "\(text.debugDescription) did not appear; the screen shows:\n\(output)" }
}

private func spawn(
    _ executable: URL,
    _ arguments: [String],
    environment: [String: String],
    setUp: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    setUp(&actions)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // As a shell starts a command: an empty signal mask and every signal at its default (the test
    // runner's threads block signals, and a child would inherit that).
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    // POSIX_SPAWN_SETSID (glibc): a new session, without a controlling terminal until it opens one.
    posix_spawnattr_setflags(&attributes, Int16(0x80 | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let argv = ([executable.path] + isolated(executable, arguments)).map { strdup($0) } + [nil]
    let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var child: pid_t = 0
    let result = posix_spawn(&child, executable.path, &actions, &attributes, argv, envp)
    guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT) }
    return child
}

/// gatekeeper-run keeps failed and remembered logins across runs; each run a test starts gets a state
/// directory of its own (so one test's failures or logins never reach another), unless the test names one
/// to see that state carried from run to run.
private func isolated(_ executable: URL, _ arguments: [String]) -> [String] {
    guard executable.lastPathComponent == "gatekeeper-run", !arguments.contains(where: { $0.hasPrefix("--state-dir") })
    else { return arguments }
    return ["--state-dir", temporaryDirectory("gatekeeper-run-state")] + arguments
}

/// A new empty directory under the system's temporary directory, private to this user.
public func temporaryDirectory(_ prefix: String) -> String {
    var template = Array("\(trustedBase)/\(prefix).XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer in
        String(cString: mkdtemp(buffer.baseAddress!)!)
    }
}

private func waitForExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        if errno != EINTR { return -1 }
    }
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
}

/// The exit status of `pid` if it ends before `deadline` (128 + the signal for one a signal ended, -1 if
/// it cannot be waited for); `nil` if it is still running then.
private func waitForExit(_ pid: pid_t, deadline: ContinuousClock.Instant) -> Int32? {
    var status: Int32 = 0
    while true {
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid {
            let signal = status & 0x7F
            return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        }
        if reaped < 0 && errno != EINTR { return -1 }
        guard ContinuousClock.now < deadline else { return nil }
        usleep(2_000)
    }
}

/// Where test files go: one directory for this test process under a base no one else can write, up to `/`
/// — so configuration files, plugins and helpers put there pass the tools' directory rule — readable by
/// others (tests run tools as nobody), and removed with everything in it when the process exits, however
/// many fixtures, state directories and helpers' files the tests left in it.
public let trustedBase: String = {
    var template = Array("\(privateScratchBase)/gatekeeper-tests.XXXXXX".utf8CString)
    let base = template.withUnsafeMutableBufferPointer { buffer in String(cString: mkdtemp(buffer.baseAddress!)!) }
    chmod(base, 0o755)
    runBase.withLock { $0 = base }
    // Registered before any fixture's own handler (they make their directories here first), so it runs
    // after them: servers are told to stop before their directories go.
    atexit {
        guard let base = runBase.withLock({ $0 }), getpid() == runOwner else { return }
        for _ in 0..<3 {
            try? FileManager.default.removeItem(atPath: base)
            guard FileManager.default.fileExists(atPath: base) else { return }
            usleep(200_000)  // A server stopping may still write into its directory.
        }
    }
    return base
}()

/// The per-process base, for the exit handler (which can capture nothing), and the process that made it
/// (a forked child must not remove it).
private let runBase = Locked<String?>(nil)
private let runOwner = getpid()

/// A private directory for a test, removed with everything in it when the value is released (at the end of
/// the test that made it).
public final class ScratchDirectory: Sendable {
    public let path: String

    public init(_ prefix: String) {
        path = temporaryDirectory(prefix)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Removes a system account a test made: its processes first (a `sudo` or `su` the test ran as it may still
/// be ending, and `userdel` refuses an account in use), then the account, trying for up to 2 s. Answers why
/// it could not be removed — an account left on the host is the test's failure — or `nil`.
public func removeAccount(_ user: String) -> String? {
    guard (try? shell("id -u '\(user)' >/dev/null 2>&1"))?.status == 0 else { return nil }
    var said = "did not run"
    for _ in 0..<20 {
        _ = try? shell("pkill -KILL -u '\(user)'")
        guard let removed = try? shell("userdel '\(user)' 2>&1") else { continue }
        if removed.status == 0 { return nil }
        said = removed.output
        usleep(100_000)
    }
    return "userdel \(user): \(said)"
}

/// A uid for an account a test adds that no other suite's account has. Suites run side by side, each in its
/// own copy of the host's account files (Tests/Runner/private-host.sh), where useradd would hand each the same
/// next free uid; but they share one process table, where `userdel`'s check for an account's processes and
/// ``removeAccount(_:)``'s `pkill -u` go by uid. Drawn from 2,000,000 up: above any host's own accounts.
public func uniqueUID() -> UInt32 {
    UInt32.random(in: 2_000_000...2_999_999)
}

/// Lets the user `uid` read `path` through an access ACL, as `setfacl -m u:UID:r` does (written as the
/// `system.posix_acl_access` attribute, so no `acl` package is needed): the owner keeps read and write, its
/// group and others nothing, and the mode then reads `-rw-r-----`. Whether the file system took it.
public func grantReadThroughACL(_ path: String, toUID uid: UInt32) throws -> Bool {
    let script = """
        import os, struct, sys
        entries = [(0x01, 6, 0xFFFFFFFF), (0x02, 4, int(sys.argv[2])), (0x04, 0, 0xFFFFFFFF),
                   (0x10, 4, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
        value = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)
        os.setxattr(sys.argv[1], "system.posix_acl_access", value)
        """
    let result = try run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, path, String(uid)], input: "")
    return result.status == 0
}
