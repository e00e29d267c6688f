import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the command and the terminal are left with: the signal state a shell would give, and a
/// terminal with echo back on whatever signal ends a prompt.
@Suite(.timeLimit(.minutes(1)))
struct SignalAndTerminalTests {
    /// The `SigBlk` and `SigIgn` lines a command sees in /proc/self/status.
    private static let signalLines = ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]

    /// The blocked and ignored signals in `output` of ``signalLines``, without glibc's own signals 32
    /// and 33: no program can set those through libc, and `posix_spawn` from a threaded parent (this
    /// test runner) leaves them ignored in every child.
    private static func signalState(_ output: String) -> [String: UInt64] {
        var state: [String: UInt64] = [:]
        for line in output.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let mask = UInt64(parts[1].trimmingCharacters(in: .whitespaces), radix: 16)
            else { continue }
            state[String(parts[0])] = mask & ~(UInt64(0b11) << 31)
        }
        return state
    }

    /// What the same command shows when started directly, as a shell would start it.
    private func baseline() throws -> [String: UInt64] {
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), Self.signalLines, input: "")
        #expect(result.status == 0)
        return Self.signalState(result.stdout)
    }

    @Test func theCommandGetsTheSignalStateAShellWouldGiveIt() throws {
        let result = try run(
            gatekeeperRun,
            mock + ["--user", "alice", "--password-stdin", "--delay", "0", "--"] + Self.signalLines,
            input: "wonderland\n"
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.signalState(result.stdout) == (try baseline()))
        #expect(Self.signalState(result.stdout) == ["SigBlk": 0, "SigIgn": 0])
    }

    /// At a terminal, Ctrl-C handling and the terminal's signal handlers are in place during the login;
    /// none of it reaches the command.
    @Test(.timeLimit(.minutes(1)))
    func atATerminalTooTheCommandGetsAShellsSignalState() throws {
        let session = try TerminalSession(gatekeeperRun, mock + ["--delay", "0", "--"] + Self.signalLines)
        try session.waitFor("Username: ")
        session.type("alice\r")
        try session.waitFor("Password: ")
        session.type("wonderland\r")
        #expect(session.finish() == 0)
        let lines = session.output.components(separatedBy: "\r\n").filter { $0.hasPrefix("Sig") }
        #expect(Self.signalState(lines.joined(separator: "\n")) == ["SigBlk": 0, "SigIgn": 0])
    }

    /// A service manager's SIGTERM stops the command at once (it was blocked before, and `timeout 2
    /// gatekeeper-run … -- sleep 10` took ten seconds).
    @Test(.timeLimit(.minutes(1)))
    func sigtermStopsTheCommand() throws {
        let process = try Spawned(
            gatekeeperRun, mock + ["--user", "alice", "--password-stdin", "--delay", "0", "--", "sleep", "30"])
        process.write("wonderland\n")
        // The login is over once the process has become `sleep`.
        let deadline = ContinuousClock.now + .seconds(20)
        var command = ""
        while ContinuousClock.now < deadline {
            command = (try? String(contentsOfFile: "/proc/\(process.pid)/comm", encoding: .utf8)) ?? ""
            if command == "sleep\n" { break }
            usleep(10_000)
        }
        #expect(command == "sleep\n")
        kill(process.pid, SIGTERM)
        let started = ContinuousClock.now
        let result = process.finish()
        #expect(result.status == 128 + SIGTERM)
        #expect(ContinuousClock.now - started < .seconds(20), "the command outlived SIGTERM")
    }

    /// A host tool must name its backend: without `--provider`, nothing runs (the demo backend's
    /// published accounts would otherwise get in).
    @Test func thereIsNoDefaultBackend() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-run-\(UUID())")
        let result = try run(
            gatekeeperRun, ["--user", "alice", "--password-stdin", "--", "touch", marker.path], input: "wonderland\n")
        #expect(result.status == 64)
        #expect(result.stderr.contains("--provider"))
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(try run(gatekeeperRun, ["--help"], input: "").stdout.contains("--provider NAME, required"))
    }

    /// A users file that cannot be read makes the backend unavailable (69), not a usage error (64).
    @Test func anUnreadableUsersFileIsUnavailable() throws {
        let result = try run(
            gatekeeperRun,
            ["--provider", "file", "--users", "/nonexistent/users", "--user", "a", "--password-stdin", "--", "true"],
            input: "x\n"
        )
        #expect(result.status == 69, "\(result.stderr)")
    }

    /// SIGTERM or SIGHUP at a password prompt leaves the terminal as it was (echo, line editing and
    /// signals on), and the process still dies by that signal.
    @Test(.timeLimit(.minutes(1)), arguments: [SIGTERM, SIGHUP])
    func aSignalAtThePasswordPromptRestoresTheTerminal(_ signal: Int32) throws {
        let session = try TerminalSession(gatekeeperRun, mock + ["--user", "alice", "--", "true"])
        try session.waitFor("Password: ")
        #expect(session.localModes & tcflag_t(ECHO) == 0)  // The prompt really turned echo off.
        session.send(signal)
        #expect(session.finish() == 128 + signal)
        // As a new terminal starts: echo, line editing and signal keys on.
        let usual = tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        #expect(session.localModes & usual == usual)
    }

    /// `--password-stdin` on a terminal reads the password unechoed; Ctrl-C, or Ctrl-D on an empty line,
    /// cancels (130) at once, as at any prompt: no "enter a password", no fail delay, nothing run.
    @Test(.timeLimit(.minutes(1)), arguments: ["\u{3}", "\u{4}"])
    func cancellingThePasswordFromStandardInputOnATerminal(_ key: String) throws {
        let session = try TerminalSession(
            gatekeeperRun, mock + ["--user", "alice", "--password-stdin", "--", "sh", "-c", "echo RAN"])
        let start = ContinuousClock.now
        while session.localModes & tcflag_t(ECHO) != 0 {
            guard ContinuousClock.now - start < .seconds(20) else {
                Issue.record("the password was not read with echo off")
                return
            }
            usleep(10_000)
        }
        session.type(key)
        #expect(session.finish() == 130, "\(session.output)")
        #expect(!session.output.contains("RAN") && !session.output.contains("Enter a password"), "\(session.output)")
        let usual = tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        #expect(session.localModes & usual == usual)
    }
}

/// A stack from a configuration file, with the trace of the login.
@Suite(.timeLimit(.minutes(1)))
struct ConfiguredStackTests {
    private func configuration(_ text: String, mode: mode_t = 0o600) throws -> String {
        let path = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-\(UUID()).conf").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    static let stack = """
        # nobody in the first entry; everybody else in the mock
        [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  debug result=user_unknown
        required  mock delay=0

        """

    @Test func runsTheStackOfAFileAndExplainsIt() throws {
        let path = try configuration(Self.stack)
        defer { unlink(path) }
        let result = try run(
            gatekeeperRun, ["--config", path, "--explain", "--user", "bob", "--password-stdin", "--", "true"],
            input: "builder\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "debug: user_unknown -> ignore\n2. required mock: success -> ok\nidentity: 2:mock\nresult: success"))
        let wrong = try run(
            gatekeeperRun, ["--config", path, "--explain", "--user", "bob", "--password-stdin", "--", "true"],
            input: "nope\n")
        #expect(wrong.status == 77)
        #expect(wrong.stderr.contains("2. required mock: auth_err -> bad\nresult: auth_err"))
    }

    /// `audit required`: with no destination that can take the record (a JSON log that is a directory, a
    /// syslog socket that does not exist), the login is refused with 69 and the command never runs; the
    /// same file without the line runs it.
    @Test func aRequiredAuditThatCannotBeWrittenRunsNothing() throws {
        let state = temporaryDirectory("gatekeeper-audit-required")
        defer { try? FileManager.default.removeItem(atPath: state) }
        try FileManager.default.createDirectory(atPath: state + "/log", withIntermediateDirectories: false)
        let settings = "delay 0\naudit json path=\(state)/log\naudit syslog socket=\(state)/no-socket\n"
        let marker = state + "/ran"
        for required in [true, false] {
            let path = try configuration(settings + (required ? "audit required\n" : "") + "required mock delay=0\n")
            defer { unlink(path) }
            let result = try run(
                gatekeeperRun,
                ["--config", path, "--state-dir", state, "--user", "bob", "--password-stdin", "--", "touch", marker],
                input: "builder\n")
            if required {
                #expect(result.status == 69, "\(result.stderr)")
                #expect(result.stderr.contains("the audit trail cannot record this login"), "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: marker))
            } else {
                #expect(result.status == 0, "\(result.stderr)")
                #expect(FileManager.default.fileExists(atPath: marker))
            }
        }
    }

    /// A configuration, or a file it includes, in a directory others may write — where another file could
    /// take the checked one's place — is refused as a plugin there would be: a plain world-writable
    /// directory, and a sticky one like /tmp.
    @Test func aFileInADirectoryOthersMayWriteIsRefused() throws {
        let shared = temporaryDirectory("gatekeeper-shared")
        chmod(shared, 0o777)
        let sticky = temporaryDirectory("gatekeeper-sticky")
        chmod(sticky, 0o1777)
        defer {
            for directory in [shared, sticky] { try? FileManager.default.removeItem(atPath: directory) }
        }
        for directory in [shared, sticky, "/tmp"] {
            let path = directory + "/gatekeeper-\(UUID()).conf"
            try Self.stack.write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, 0o600)
            defer { unlink(path) }
            let refused = try run(
                gatekeeperRun, ["--config", path, "--user", "bob", "--password-stdin", "--", "true"], input: "builder\n"
            )
            #expect(refused.status == 69, "\(directory): \(refused.stderr)")
            #expect(refused.stderr.contains("may be written by group or others"), "\(refused.stderr)")
            // Included from a trusted file, it is refused just the same.
            let including = try configuration("include \(path)\n")
            defer { unlink(including) }
            let included = try run(gatekeeperRun, ["--check-config", including], input: "")
            #expect(included.status != 0 && included.stderr.contains("may be written by group or others"))
        }
        // The same file in a private directory is used.
        let path = try configuration(Self.stack)
        defer { unlink(path) }
        let admitted = try run(
            gatekeeperRun, ["--config", path, "--user", "bob", "--password-stdin", "--", "true"], input: "builder\n")
        #expect(admitted.status == 0, "\(admitted.stderr)")
    }

    @Test func anUnsafeOrBrokenFileIsRefusedAndNothingRuns() throws {
        let open = try configuration(Self.stack, mode: 0o666)
        defer { unlink(open) }
        let unsafe = try run(
            gatekeeperRun, ["--config", open, "--user", "bob", "--password-stdin", "--", "true"], input: "builder\n")
        #expect(unsafe.status == 69)
        #expect(unsafe.stderr.contains("may be written by group or others"))
        let broken = try configuration("required mock delay=0\nrequird debug\n")
        defer { unlink(broken) }
        let refused = try run(
            gatekeeperRun, ["--config", broken, "--user", "bob", "--password-stdin", "--", "true"], input: "builder\n")
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("\(broken):2:1: requird: unknown control"))
        let both = try run(gatekeeperRun, ["--config", broken, "--provider", "mock", "--", "true"], input: "")
        #expect(both.status == 64)
    }
}

/// `--check-config`: the resolved stack, and warnings about stacks an admin would not want. Performed in
/// this process, as the tool performs it (one run of the tool itself shows a relative name read as it is).
@Suite(.timeLimit(.minutes(1)))
struct CheckConfigTests {
    private func check(_ text: String) throws -> Performed {
        let path = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-\(UUID()).conf").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        defer { unlink(path) }
        return performRun(["--check-config", path])
    }

    @Test func printsTheStackAndWarnsAboutStacksThatCheckNobody() throws {
        let result = try check("sufficient debug result=success\nrequired mock delay=0\n")
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                sufficient debug result=success  # 1: [success=done new_authtok_reqd=done default=ignore]
                required mock delay=0  # 2: [success=ok new_authtok_reqd=ok ignore=ignore default=bad]

                """)
        #expect(result.stderr.contains("warning: the stack can succeed before any required or requisite entry runs"))
        #expect(result.stderr.contains("warning: the stack can succeed without any entry that checks a password"))
    }

    /// A stack of a thousand entries — the most a file may hold — is analysed whole, not sampled: a
    /// thousand requisite entries succeed only when every one answers success or ignore, a combination
    /// random answers never hit (200,000 samples said "every login fails"; the check took 233 s).
    @Test func aThousandEntriesAreAnalysedWhole() throws {
        let result = try check(String(repeating: "requisite debug result=success\n", count: 1_000))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("every login fails"), "\(result.stderr)")
        #expect(result.stderr.contains("can succeed without any entry that checks a password"))
        // And one whose every path fails is still called so.
        let failing = try check(
            String(repeating: "requisite debug result=success\n", count: 999) + "[default=die] debug\n")
        #expect(failing.stderr.contains("no combination of answers makes this stack succeed"), "\(failing.stderr)")
    }

    /// A `-name` backend not installed here is no error: --check-config says the entry answers
    /// module_unknown, and prints it with its dash.
    @Test func aDashedBackendNotInstalledIsNoted() throws {
        let result = try check("required -nowhere option=1\nrequired mock delay=0\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("required -nowhere option=1  # 1"), "\(result.stdout)")
        #expect(result.stderr.contains(":1:1: -nowhere is not installed here: the entry answers module_unknown"))
    }

    /// What --check-config prints is the file normalised: checked again, it prints itself.
    @Test func printsAFileThatReadsAsTheSameStack() throws {
        let first = try check(
            """
            lockout   deny=3 dir=/var/lib/gatekeeper/faillock
            delay 1.5s
            session absolute=480m idle=900
            [ default = die success=ok  user_unknown=ignore ] mock delay=0.25 # who is it
            optional debug result=cred_err
            """)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stdout == """
                session idle=15m absolute=8h
                lockout deny=3 interval=15m unlock=10m root_unlock=10m dir=/var/lib/gatekeeper/faillock
                delay 1500ms
                [success=ok user_unknown=ignore default=die] mock delay=0.25  # 1
                optional debug result=cred_err  # 2: [success=ok new_authtok_reqd=ok default=ignore]

                """)
        let again = try check(first.stdout)
        #expect(again.stdout == first.stdout)
    }

    /// A configuration named relatively is read as the file it names, wherever the tool was started: its
    /// substacks and files are named absolutely in what --check-config prints, which reads the same
    /// anywhere.
    @Test func aRelativelyNamedFilePrintsAbsoluteNames() throws {
        let directory = temporaryDirectory("gatekeeper-relative")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
        try "required mock delay=0\nsubstack other.conf\n".write(
            toFile: directory + "/sub/main.conf", atomically: false, encoding: .utf8)
        try "optional debug\n".write(toFile: directory + "/sub/other.conf", atomically: false, encoding: .utf8)
        let printed = try shell("cd '\(directory)' && '\(gatekeeperRun.path)' --check-config sub/main.conf 2>/dev/null")
        #expect(printed.status == 0, "\(printed.output)")
        #expect(printed.output.contains("\nsubstack \(directory)/sub/other.conf\n"), "\(printed.output)")
        let copy = directory + "/copy.conf"
        try printed.output.write(toFile: copy, atomically: false, encoding: .utf8)
        chmod(copy, 0o600)
        #expect(try check(String(contentsOfFile: copy, encoding: .utf8)).stdout == printed.output)
    }

    /// A jump past the end loads, as in libpam, and --check-config says where it is and what it does.
    @Test func warnsAboutAJumpPastTheEnd() throws {
        let result = try check("[success=3 default=bad] mock delay=0\nrequired mock delay=0\n")
        #expect(result.status == 0)
        #expect(
            result.stderr.contains(
                ":1:1: entry 1 jumps 3 past the end of its stack (1 entries follow): as libpam, the login fails when that jump is taken"
            ), "\(result.stderr)")
    }

    @Test func aSoundStackHasNoWarningAndAHopelessOneSaysSo() throws {
        let sound = try check("requisite mock delay=0\n[success=ok default=bad] mock\n")
        #expect(sound.status == 0 && sound.stderr.isEmpty, "\(sound.stderr)")
        // An entry that can end the stack with success before the required one runs is worth knowing.
        let early = try check("[success=done user_unknown=ignore default=die] mock delay=0\nrequired mock\n")
        #expect(early.stderr.contains("can succeed before any required or requisite entry runs"))
        #expect(!early.stderr.contains("checks a password"))
        let hopeless = try check("[default=die] mock\n")
        #expect(hopeless.status == 0)
        #expect(hopeless.stderr.contains("no combination of answers makes this stack succeed"))
        let broken = try check("required nothing\n")
        #expect(broken.status == 1)
        #expect(broken.stderr.contains(":1:10: nothing: unknown provider"))
    }
}
