import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a hostile users file or a signal can do to the REPL's terminal: nothing.
@Suite(.timeLimit(.minutes(1)))
struct REPLSafetyTests {
    /// SIGTERM while the spinner runs (echo is off then, and the command line is in raw mode underneath)
    /// leaves the terminal as it was before the REPL started, and the REPL dies by SIGTERM.
    @Test(.timeLimit(.minutes(1)))
    func sigtermDuringTheSpinnerRestoresTheTerminal() throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "60"])
        try repl.waitFor("]› ")
        try repl.logIn("login", "alice", "wonderland")
        #expect(repl.localModes & tcflag_t(ECHO) == 0)  // The spinner hides typed keys.
        repl.send(SIGTERM)
        #expect(repl.finish() == 128 + SIGTERM)
        // As a new terminal starts: echo, line editing and signal keys on.
        let usual = tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        #expect(repl.localModes & usual == usual)
    }

    /// A display name and groups with terminal escape sequences, written into the file by hand, are
    /// shown escaped: they cannot retitle the window or clear the screen.
    @Test func namesFromAUsersFileCannotRewriteTheTerminal() throws {
        let directory = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-repl-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("users").path
        // bob / builder, bcrypt (htpasswd -nbB bob builder).
        let hash = "$2y$05$979LHktMLEEEN8Oo4VlI3eGfVhUCOzuHM77lB5jmN9pAsy03saWeG"
        let line = "bob:\(hash):staff,\u{1B}[2J:\u{1B}]0;owned\u{7}Bob\u{202E}\n"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(line.utf8)))
        chmod(file, 0o600)
        let result = try run(
            gatekeeperREPL, ["--provider", "file", "--users", file, "--state-dir", directory.path],
            input: "profile\nbob\nbuilder\nwhoami\n")
        #expect(result.stdout.contains("User:      bob"), "\(result.stdout)")
        #expect(result.stdout.contains("\\u{1B}]0;owned\\u{7}Bob\\u{202E}"))
        #expect(result.stdout.contains("\\u{1B}[2J"))
        #expect(!result.stdout.contains("\u{1B}"))
        #expect(!result.stdout.contains("\u{7}"))
        #expect(!result.stdout.contains("\u{202E}"))
    }
}

/// The REPL over a stack from a configuration file: who answered, and why.
struct StackedREPLTests {
    @Test func whyShowsWhichEntryAnsweredAndStatusTheAdmittingOne() throws {
        let state = ScratchDirectory("gatekeeper-repl-state")
        let path = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-\(UUID()).conf").path
        try """
        [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  debug result=user_unknown
        required  mock delay=0

        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        defer { unlink(path) }
        let result = try run(
            gatekeeperREPL, ["--config", path, "--state-dir", state.path],
            input: "why\nlogin\nbob\nbuilder\nwhy\nstatus\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("No login yet."))
        #expect(
            result.stdout.contains(
                "debug: user_unknown -> ignore\n2. required mock: success -> ok\nidentity: 2:mock\nresult: success"))
        #expect(result.stdout.contains("Signed in as bob via mock."))
        #expect(
            result.stdout.contains(
                "Stack: 1. [success=done authinfo_unavail=ignore user_unknown=ignore default=die] debug · 2. required mock"
            ))
    }
}

/// `why` after a cancelled login says so, and where, before the trace of the login before it.
struct CancelledLoginWhyTests {
    /// A stack whose mock entry waits `delay` seconds, in a configuration file only root may change.
    static func configuration(delay: String) throws -> String {
        let path = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-\(UUID()).conf").path
        try """
        [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  debug result=user_unknown
        required  mock delay=\(delay)

        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    @Test func aLoginCancelledAtTheUserNameIsSaidToBeSo() throws {
        let state = ScratchDirectory("gatekeeper-repl-state")
        let path = try Self.configuration(delay: "0")
        defer { unlink(path) }
        // Signed in as bob; then a login cancelled by an empty user name; then one that signs alice in.
        let result = try run(
            gatekeeperREPL, ["--config", path, "--state-dir", state.path],
            input: "login\nbob\nbuilder\nlogout\nlogin\n\nwhy\nlogin\nalice\nwonderland\nwhy\n")
        #expect(result.status == 0, "\(result.stderr)")
        let trace = "2. required mock: success -> ok\nidentity: 2:mock\nresult: success"
        #expect(
            result.stdout.contains(
                "The last login was cancelled at “Username: ”, with an empty answer; nothing was decided.\nThe login before it:\n"
            ),
            "\(result.stdout)")
        #expect(result.stdout.components(separatedBy: trace).count - 1 == 2, "\(result.stdout)")
        // The login after it ended otherwise: its own trace, with no word of the cancellation.
        #expect(result.stdout.components(separatedBy: "was cancelled").count - 1 == 1)
    }

    /// A login cancelled after the stack refused an attempt (an empty user name at the second asking):
    /// `why` shows that attempt's decision as the cancelled login's, not as the login before it.
    @Test func aLoginCancelledAfterAnAnsweredAttemptShowsThatAnswer() throws {
        let state = ScratchDirectory("gatekeeper-repl-state")
        let path = try Self.configuration(delay: "0")
        defer { unlink(path) }
        let result = try run(
            gatekeeperREPL, ["--config", path, "--state-dir", state.path],
            input: "login\nbob\nguess\n\nwhy\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "The last login was cancelled at “Username: ”, with an empty answer, after the stack answered:\n"
                    + "1. [success=done authinfo_unavail=ignore user_unknown=ignore default=die] debug: user_unknown -> ignore\n"
            ), "\(result.stdout)")
        #expect(result.stdout.contains("2. required mock: auth_err -> bad\nresult: auth_err"), "\(result.stdout)")
        #expect(!result.stdout.contains("The login before it"), "\(result.stdout)")
    }

    @Test func aLoginCancelledWhileTheProviderChecksIsSaidToBeSo() throws {
        let state = ScratchDirectory("gatekeeper-repl-state")
        let path = try Self.configuration(delay: "60")
        defer { unlink(path) }
        let repl = try TerminalSession(gatekeeperREPL, ["--config", path, "--state-dir", state.path])
        try repl.waitFor("]› ")
        try repl.logIn("login", "alice", "wonderland")
        repl.type("\u{3}")
        try repl.waitFor("Login cancelled.", timeout: .seconds(20))
        let offset = repl.output.count
        repl.type("why\r")
        try repl.waitFor("No login before it.", after: offset)
        #expect(
            repl.output.contains(
                "The last login was cancelled while the provider checked the answer to “Password: ”; nothing was decided."
            ))
        repl.type("quit\r")
        #expect(repl.finish() == 0)
    }
}

/// The shipped fallback tour: the users file over the mock backend.
struct FallbackTourTests {
    @Test func eachUserIsAnsweredByTheRightEntryAndAnUnusableFileIsPassedOver() throws {
        let state = ScratchDirectory("gatekeeper-repl-state")
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Examples/stacks").standardized
        let directory = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-tour-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The configuration names its users file relative to the repository; here it is beside it.
        let text = try String(contentsOf: source.appendingPathComponent("fallback-tour.conf"), encoding: .utf8)
            .replacingOccurrences(of: "users=users", with: "users=\(directory.path)/users")
            .replacingOccurrences(of: "delay=0.5", with: "delay=0")
        let configuration = directory.appendingPathComponent("tour.conf").path
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
        let users = directory.appendingPathComponent("users").path
        try FileManager.default.copyItem(atPath: source.appendingPathComponent("users").path, toPath: users)
        chmod(configuration, 0o600)
        chmod(users, 0o600)

        let first = try run(
            gatekeeperREPL, ["--config", configuration, "--state-dir", state.path],
            input: "login\nerin\nerin-2026\nwhy\nlogin\nbob\nbuilder\nwhy\n")
        #expect(first.stdout.contains("Signed in as Erin Example (erin)."), "\(first.stdout)")
        #expect(first.stdout.contains("file: success -> done\nidentity: 1:file\nresult: success"))
        #expect(first.stdout.contains("file: user_unknown -> ignore\n2. required mock: success -> ok"))

        // While the REPL runs, others may now write the file: it is refused, the entry answers
        // authinfo_unavail, and the mock still admits bob.
        let repl = try Spawned(gatekeeperREPL, ["--config", configuration, "--state-dir", state.path])
        #expect(eventually { repl.stdout.contains("Type 'help'.") })
        chmod(users, 0o666)
        repl.write("login\nbob\nbuilder\nwhy\n")
        let second = repl.finish()
        #expect(
            second.stdout.contains("file: authinfo_unavail -> ignore\n2. required mock: success -> ok"),
            "\(second.stdout)")
    }
}
