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
        repl.type("profile\r")
        try repl.waitFor("Username: ")
        repl.type("alice\r")
        try repl.waitFor("Password: ")
        repl.type("wonderland\r")
        try repl.waitFor("Checking")
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
