import Authentication
import GatekeeperSupport
import Glibc
import TestSupport
import Testing

@testable import TerminalLogin

/// A pipe for feeding a conversation's input and reading its output. Each end is closed once: a descriptor
/// closed twice may by then be another thread's (the next test's), and closing it would end that one.
final class Pipe: Sendable {
    let read: Int32
    let write: Int32
    private let writeClosed = Locked(false)

    init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        read = ends[0]
        write = ends[1]
    }

    func send(_ text: String) { writeAll(write, Array(text.utf8)) }

    /// The end of input, as a person's Ctrl-D or a closed pipe gives it.
    func closeWrite() {
        let first = writeClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { Glibc.close(write) }
    }

    func close() {
        Glibc.close(read)
        closeWrite()
    }
}

/// Reads whatever is waiting on `descriptor` without blocking, as text.
func drain(_ descriptor: Int32) -> String {
    String(decoding: readAvailable(descriptor), as: UTF8.self)
}

/// Waits, without holding a thread of the cooperative pool, until `descriptor` has shown `text`.
/// Returns everything read meanwhile.
@discardableResult
func waitFor(_ text: String, on descriptor: Int32) async throws -> String {
    var seen = ""
    let deadline = ContinuousClock.now + .seconds(20)
    while !seen.contains(text) {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(text: text, output: seen) }
        seen += drain(descriptor)
        try await Task.sleep(for: .milliseconds(5))
    }
    return seen
}

@Suite(.timeLimit(.minutes(1)))
struct PlainInputTests {
    @Test func readsOneLineAtATime() async throws {
        let input = Pipe()
        let output = Pipe()
        defer { input.close(); output.close() }
        let conversation = TerminalConversation(input: input.read, output: output.write)
        #expect(!conversation.isTerminal)
        input.send("alice\r\nsecret\nrest")
        #expect(try await conversation.ask("Username: ") == "alice")
        let password = try await conversation.askSecret("Password: ")
        #expect(password == Secret(copying: "secret".utf8))
        input.closeWrite()
        // The last line needs no newline; after it, end of input cancels.
        #expect(try await conversation.ask("More: ") == "rest")
        await #expect(throws: AuthError.cancelled) { try await conversation.ask("Again: ") }
        #expect(drain(output.read) == "Username: \nPassword: \nMore: \nAgain: \n")
    }

    /// Prompts and messages may come from a PAM module or a helper program: anything that could
    /// rewrite the terminal is escaped; line breaks stay.
    @Test func escapesPromptsAndMessagesFromProviders() async throws {
        let input = Pipe()
        let output = Pipe()
        defer { input.close(); output.close() }
        let conversation = TerminalConversation(input: input.read, output: output.write)
        input.send("123456\n")
        await conversation.show("Hello\u{1B}[2J\nworld\u{202E}", as: .info)
        #expect(try await conversation.ask("Code\u{7}: ") == "123456")
        #expect(drain(output.read) == "Hello\\u{1B}[2J\nworld\\u{202E}\nCode\\u{7}: \n")
    }

    @Test func cutsOverlongLinesWithoutLosingTheNextOne() async throws {
        let input = Pipe()
        let output = Pipe()
        defer { input.close(); output.close() }
        let conversation = TerminalConversation(input: input.read, output: output.write)
        let long = String(repeating: "y", count: 100_000)
        let writer = Task.detached { input.send(long + "\nnext\n") }
        let first = try await conversation.askSecret("")
        #expect(first.count == TerminalConversation.maxAnswerBytes + 1)
        #expect(try await conversation.ask("") == "next")
        await writer.value
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledTaskStopsWaitingForInput() async throws {
        let input = Pipe()
        let output = Pipe()
        defer { input.close(); output.close() }
        let conversation = TerminalConversation(input: input.read, output: output.write)
        let question = Task { try await conversation.askSecret("Password: ") }
        try await waitFor("Password: ", on: output.read)
        question.cancel()
        await #expect(throws: AuthError.cancelled) { try await question.value }
    }
}

extension PlainInputTests {
    /// Half a line was typed when the task was cancelled: the answer is `cancelled`, not the half line.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledTaskGetsNoPartialAnswer() async throws {
        let input = Pipe()
        let output = Pipe()
        defer { input.close(); output.close() }
        let conversation = TerminalConversation(input: input.read, output: output.write)
        input.send("hunt")
        let question = Task { try await conversation.askSecret("Password: ") }
        try await waitFor("Password: ", on: output.read)
        // The half line is in the reader's hands once the pipe holds nothing more.
        #expect(await eventually { unreadBytes(input.write) == 0 })
        question.cancel()
        await #expect(throws: AuthError.cancelled) { try await question.value }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct PseudoTerminalTests {
    /// A pseudo-terminal: the conversation gets the terminal side, the test plays the person's keyboard.
    final class PTY {
        let controller: Int32
        let terminal: Int32

        init() throws {
            var controller: Int32 = -1
            var terminal: Int32 = -1
            guard openpty(&controller, &terminal, nil, nil, nil) == 0 else { throw AuthError.cancelled }
            self.controller = controller
            self.terminal = terminal
        }

        func type(_ text: String) { writeAll(controller, Array(text.utf8)) }

        var echoIsOn: Bool {
            var settings = termios()
            tcgetattr(terminal, &settings)
            return settings.c_lflag & tcflag_t(ECHO) != 0
        }

        deinit {
            close(controller)
            close(terminal)
        }
    }

    @Test func passwordsAreNotEchoedAndTheTerminalIsRestored() async throws {
        let pty = try PTY()
        let conversation = TerminalConversation(input: pty.terminal, output: pty.terminal)
        #expect(conversation.isTerminal)
        #expect(pty.echoIsOn)
        let answer = Task { try await conversation.askSecret("Password: ") }
        try await waitFor("Password: ", on: pty.controller)
        pty.type("hunter2\r")
        #expect(try await answer.value == Secret(copying: "hunter2".utf8))
        let screen = try await waitFor("\r\n", on: pty.controller)
        #expect(!screen.contains("hunter2"))
        #expect(pty.echoIsOn)
    }

    @Test func visibleAnswersAreEchoed() async throws {
        let pty = try PTY()
        let conversation = TerminalConversation(input: pty.terminal, output: pty.terminal)
        let answer = Task { try await conversation.ask("Username: ") }
        try await waitFor("Username: ", on: pty.controller)
        pty.type("alice\r")
        #expect(try await answer.value == "alice")
        try await waitFor("alice", on: pty.controller)
    }

    @Test(arguments: ["\u{3}", "\u{4}"])
    func ctrlCAndCtrlDCancelAndRestoreTheTerminal(_ key: String) async throws {
        let pty = try PTY()
        let conversation = TerminalConversation(input: pty.terminal, output: pty.terminal)
        let answer = Task { try await conversation.askSecret("Password: ") }
        try await waitFor("Password: ", on: pty.controller)
        pty.type(key)
        await #expect(throws: AuthError.cancelled) { try await answer.value }
        #expect(pty.echoIsOn)
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledTaskRestoresTheTerminal() async throws {
        let pty = try PTY()
        let conversation = TerminalConversation(input: pty.terminal, output: pty.terminal)
        let answer = Task { try await conversation.askSecret("Password: ") }
        try await waitFor("Password: ", on: pty.controller)
        answer.cancel()
        await #expect(throws: AuthError.cancelled) { try await answer.value }
        #expect(pty.echoIsOn)
    }
}
