import Foundation
import TestSupport
import Testing

/// The REPL on a pseudo-terminal, as a person uses it.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TerminalREPLTests {
    @Test func thePasswordIsNeverEchoed() throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "0.2"])
        let banner = try repl.waitFor("]› ").count
        repl.type("courses\r")
        try repl.waitFor("Username: ")
        repl.type("alice\r")
        try repl.waitFor("Password: ")
        repl.type("wonderland\r")
        let screen = String(try repl.waitFor("Courses for Alice Liddell").dropFirst(banner))
        #expect(screen.contains("alice"))
        #expect(!screen.contains("wonderland"))
        repl.type("quit\r")
        #expect(repl.finish() == 0)
    }

    /// Ctrl-C while the provider works cancels at once and falls back, long before the delay ends.
    @Test func ctrlCWhileCheckingCancelsAndFallsBack() throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "60"])
        try repl.waitFor("]› ")
        repl.type("contact\r")
        try repl.waitFor("Registrar")
        try repl.logIn("profile", "alice", "wonderland")
        let interrupted = ContinuousClock.now
        repl.type("\u{3}")
        // Well within the 60 s delay: the wait gives up after 20 s.
        try repl.waitFor("Login cancelled. Back to contact.", timeout: .seconds(20))
        let elapsed = interrupted.duration(to: .now)
        #expect(elapsed < .seconds(20))
        let offset = repl.output.count
        repl.type("whoami\r")
        try repl.waitFor("Not signed in.", after: offset)
        repl.type("quit\r")
        #expect(repl.finish() == 0)
    }

    @Test(arguments: [("Ctrl-C", "\u{3}"), ("Ctrl-D", "\u{4}")])
    func ctrlCAndCtrlDAtAPromptCancel(_ name: String, _ key: String) throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "0"])
        try repl.waitFor("]› ")
        repl.type("contact\r")
        try repl.waitFor("Registrar")
        repl.type("courses\r")
        try repl.waitFor("Username: ")
        repl.type(key)
        try repl.waitFor("Login cancelled. Back to contact.")
        repl.type("admin\r")
        try repl.waitFor("Username: ", after: repl.output.count - 12)
        repl.type("bob\r")
        try repl.waitFor("Password: ")
        repl.type(key)
        try repl.waitFor("Login cancelled. Back to contact.", after: repl.output.count - 60)
        repl.type("quit\r")
        #expect(repl.finish() == 0, "\(name)")
    }

    @Test func colourOnATerminalUnlessNoColour() throws {
        let coloured = try TerminalSession(gatekeeperREPL, ["--delay", "0"], environment: ["NO_COLOR": ""])
        #expect(try coloured.waitFor("]› ").contains("\u{1B}[1;36mhome\u{1B}[0m"))
        coloured.type("\u{4}")
        #expect(coloured.finish() == 0)
        let plain = try TerminalSession(gatekeeperREPL, ["--delay", "0"], environment: ["NO_COLOR": "1"])
        let screen = try plain.waitFor("]› ")
        #expect(screen.contains("[home]› "))
        #expect(!screen.contains("\u{1B}[1"))
        plain.type("quit\r")
        #expect(plain.finish() == 0)
    }

    @Test func historyAndTabCompletion() throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "0"], environment: ["NO_COLOR": "1"])
        try repl.waitFor("]› ")
        repl.type("whoami\r")
        try repl.waitFor("Not signed in.")
        var offset = repl.output.count
        repl.type("\u{1B}[A\r")  // Up, Enter: whoami again
        try repl.waitFor("Not signed in.", after: offset)
        offset = repl.output.count
        repl.type("cont\t\r")  // completes to "contact"
        try repl.waitFor("Registrar", after: offset)
        offset = repl.output.count
        repl.type("open ad\t\r")  // completes the tab name after "open"
        try repl.waitFor("Username: ", after: offset)
        repl.type("\u{3}")
        try repl.waitFor("Login cancelled.", after: offset)
        repl.type("quit\r")
        #expect(repl.finish() == 0)
    }

    @Test func ctrlCAtTheCommandPromptClearsTheLineAndCtrlDQuits() throws {
        let repl = try TerminalSession(gatekeeperREPL, ["--delay", "0"], environment: ["NO_COLOR": "1"])
        try repl.waitFor("]› ")
        repl.type("logou\u{3}")
        repl.type("whoami\r")
        let answered = try repl.waitFor("Not signed in.")
        // Ctrl-D only once the next prompt is up: typed while the command runs (the terminal in cooked
        // mode), the line discipline takes it as end-of-file for a read nobody makes, and it is lost.
        let end = answered.range(of: "Not signed in.")!.upperBound
        try repl.waitFor("]› ", after: answered.distance(from: answered.startIndex, to: end))
        repl.type("\u{4}")
        #expect(repl.finish() == 0)
        #expect(repl.output.contains("Bye."))
        #expect(!repl.output.contains("Signed out."))
    }
}

/// The REPL in a shell with job control (bash in tmux), as a person runs it: Ctrl-Z stops it like any
/// terminal program, the shell gets a working terminal, and `fg` brings the REPL back in raw mode with
/// its prompt drawn again.
@Suite(
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "needs tmux (make test installs it)"))
struct JobControlREPLTests {
    /// The test's own tmux server, on a socket in its scratch directory: nothing in /tmp/tmux-UID (tmux's
    /// default), and no other tmux server of the host is spoken to.
    let scratch = ScratchDirectory("gatekeeper-tmux")

    /// Runs tmux on the test's socket with `arguments`; its standard output.
    @discardableResult
    func tmux(_ arguments: [String]) throws -> String {
        try run(URL(fileURLWithPath: "/usr/bin/tmux"), ["-S", scratch.path + "/tmux.socket"] + arguments, input: "")
            .stdout
    }

    /// Waits until the pane shows `text` (more often than `count` times before), up to ten seconds; tmux
    /// drops the blanks at the ends of lines.
    @discardableResult
    func waitForPane(_ session: String, _ text: String, moreThan count: Int = 0) throws -> String {
        var pane = ""
        for _ in 0..<200 {
            pane = try tmux(["capture-pane", "-p", "-t", session])
            if pane.components(separatedBy: text).count - 1 > count { return pane }
            usleep(50_000)
        }
        Issue.record("the pane never showed \(text): \(pane)")
        return pane
    }

    @Test func ctrlZStopsTheREPLAndFgBringsItBack() throws {
        let session = "gatekeeper-test-\(getpid())"
        try tmux([
            "new-session", "-d", "-s", session, "-x", "150", "-y", "40",
            "env -i TERM=xterm PS1='shell$ ' bash --norc --noprofile",
        ])
        defer { _ = try? tmux(["kill-server"]) }
        _ = try waitForPane(session, "shell$")
        try tmux(["send-keys", "-t", session, "\(gatekeeperREPL.path) --delay 0", "Enter"])
        _ = try waitForPane(session, "]›")
        try tmux(["send-keys", "-t", session, "he"])
        try tmux(["send-keys", "-t", session, "C-z"])
        _ = try waitForPane(session, "Stopped")
        // The shell has its terminal back, echo and line editing on.
        try tmux(["send-keys", "-t", session, "echo back-in-the-shell", "Enter"])
        _ = try waitForPane(session, "back-in-the-shell", moreThan: 1)
        try tmux(["send-keys", "-t", session, "fg", "Enter"])
        // The REPL draws its prompt and the half-typed line again, and reads keys one by one (raw mode).
        _ = try waitForPane(session, "]› he", moreThan: 1)
        try tmux(["send-keys", "-t", session, "lp", "Enter"])
        let pane = try waitForPane(session, "why ")
        #expect(pane.contains("which provider of the stack answered"))
        try tmux(["send-keys", "-t", session, "quit", "Enter"])
        _ = try waitForPane(session, "shell$", moreThan: 2)
    }
}
