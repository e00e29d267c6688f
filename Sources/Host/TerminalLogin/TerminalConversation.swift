public import Authentication
import BlockingPools
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A ``Conversation`` on a terminal, or on plain standard input when there is none.
///
/// On a terminal, each answer is read with the terminal in raw mode: hidden prompts echo nothing,
/// Backspace and Ctrl-U edit the line, and **Ctrl-C** or **Ctrl-D** on an empty line cancel the login
/// (``AuthError/cancelled``). The terminal's settings are restored on every path, including cancellation.
///
/// Without a terminal (a pipe, a file), answers are read one line at a time, with no echo games, and
/// end of input cancels. Reads run on a thread of their own, never on Swift's cooperative pool, and
/// stop as soon as the task is cancelled.
public final class TerminalConversation: Conversation {
    /// The descriptor answers are read from.
    public let input: Int32
    /// The descriptor prompts and messages are written to.
    public let output: Int32
    /// Whether `input` is a terminal (raw-mode reading and editing) rather than a pipe or file.
    public let isTerminal: Bool
    private let ownsDescriptors: Bool
    /// The conversation's reads, one at a time, each on a thread of this pool (none kept between reads:
    /// a person types far slower than a thread starts).
    private let reader = BlockingPool(name: "gatekeeper.terminal", maxThreads: 1, maxIdle: 0)

    /// The longest answer kept; longer lines are consumed but cut here, so validation refuses them.
    static let maxAnswerBytes = 16 * 1024

    /// The most of one line read without a terminal, an overlong answer's rest included.
    static let maxLineBytes = 256 * 1024

    /// A conversation reading from `input` and writing to `output` (standard input and standard error by
    /// default, so standard output stays free for the program's own results).
    public init(input: Int32 = 0, output: Int32 = 2) {
        self.input = input
        self.output = output
        self.isTerminal = isatty(input) == 1
        self.ownsDescriptors = false
    }

    private init(terminal descriptor: Int32) {
        self.input = descriptor
        self.output = descriptor
        self.isTerminal = true
        self.ownsDescriptors = true
    }

    /// A conversation on the process's controlling terminal (`/dev/tty`), if it has one; it works even
    /// when standard input and output are redirected.
    public static func controllingTerminal() -> TerminalConversation? {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        guard isatty(descriptor) == 1 else {
            close(descriptor)
            return nil
        }
        return TerminalConversation(terminal: descriptor)
    }

    deinit {
        if ownsDescriptors { close(input) }
    }

    /// The first line of standard input as a password (`--password-stdin`), without a prompt (on a
    /// terminal, not echoed); empty when there is none, so validation reports it as missing; `nil` when the
    /// person cancelled (Ctrl-C, or Ctrl-D on an empty line, on a terminal).
    ///
    /// Read on the calling thread, which it blocks until the line ends: for a tool's start, before it
    /// watches signals or starts anything a read would have to be cancelled for. Read on a Dispatch queue's
    /// thread, as prompts once were (its start and the hop), the line took 0.86 ms of a
    /// `gatekeeper-run --password-stdin` login instead of 0.12 ms (medians of 30 runs, 2-core VM).
    public static func passwordFromStandardInput() -> Secret? {
        let conversation = TerminalConversation(input: 0, output: 2)
        let result = conversation.readLine(
            prompt: "", editor: LineEditor(echo: false, limit: maxAnswerBytes), cancelledBy: -1)
        switch result {
        case .line(let password):
            return password
        case .interrupted, .cancelled:
            if conversation.isTerminal { conversation.write("\n") }
            return nil
        case .endOfInput:
            guard conversation.isTerminal else { return Secret(copying: []) }
            conversation.write("\n")
            return nil
        }
    }

    /// Asks `prompt` (escaped: prompts may come from a PAM module) and reads a visible answer.
    public func ask(_ prompt: String) async throws(AuthError) -> String {
        let answer = try await readAnswer(prompt: prompt, echo: true)
        return answer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Asks `prompt` (escaped) and reads an answer with echo off.
    public func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        try await readAnswer(prompt: prompt, echo: false)
    }

    /// Shows `message` with anything unprintable escaped: messages may come from a PAM module or a
    /// helper program, and must not rewrite the terminal.
    public func show(_ message: String, as kind: MessageKind) async {
        write(TextSafety.escaped(message, keepingLineBreaks: true) + "\n")
    }

    /// Writes `text` to the output as it is.
    public func write(_ text: String) {
        writeAll(output, Array(text.utf8))
    }

    /// Reads a command line: on a terminal with editing, history (Up/Down) and completion (Tab); elsewhere
    /// one plain line. The line is added to `history` when it is not empty.
    /// - Returns: the line, or why there is none (Ctrl-C, or Ctrl-D / end of input).
    public func readCommand(
        _ prompt: String,
        history: CommandHistory,
        completer: (@Sendable (String) -> [String])? = nil
    ) async -> CommandInput {
        var editor = LineEditor(echo: true, limit: Self.maxAnswerBytes)
        editor.history = history.lines
        editor.completer = completer
        switch await read(prompt: prompt, editor: editor) {
        case .line(let bytes):
            let line = bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            history.add(line)
            return .line(line)
        case .interrupted:
            return .interrupted
        case .endOfInput, .cancelled:
            return .endOfInput
        }
    }

    private func readAnswer(prompt: String, echo: Bool) async throws(AuthError) -> Secret {
        let prompt = TextSafety.escaped(prompt, keepingLineBreaks: true)
        guard
            case .line(let answer) = await read(
                prompt: prompt, editor: LineEditor(echo: echo, limit: Self.maxAnswerBytes))
        else { throw .cancelled }
        return answer
    }

    /// Reads on the conversation's own thread, one read at a time. Unlike other blocking work (hashing,
    /// PAM), which is left to finish in the background when its caller is cancelled, a read is
    /// interrupted (the wake-up pipe) and awaited: a read left running would swallow the next answer
    /// typed, and the terminal's settings must be back before the caller goes on.
    private func read(prompt: String, editor: LineEditor) async -> ReadResult {
        if Task.isCancelled { return .cancelled }
        let wakeup = WakeupPipe()
        let result = await withTaskCancellationHandler {
            await reader.runToTheEnd { [self] in
                readLine(prompt: prompt, editor: editor, cancelledBy: wakeup?.readEnd ?? -1)
            }
        } onCancel: {
            wakeup?.signal()
        }
        // A cancelled task gets no answer, even a line that was (partly) read as it was cancelled; the
        // line is a Secret, so its one buffer is zeroed when it is dropped here.
        var answer = result
        if Task.isCancelled, case .line = result { answer = .cancelled }
        // On a terminal the editor ends a submitted line; otherwise the prompt's line is ended here, and
        // without a terminal (no echo) a transcript then reads one prompt per line.
        let submitted = if case .line = answer { true } else { false }
        if isTerminal ? !submitted : !prompt.isEmpty { write("\n") }
        return answer
    }

    private enum ReadResult {
        /// The line read, held where it is wiped when released, whatever it turns out to be.
        case line(Secret)
        case interrupted
        case endOfInput
        /// The task was cancelled.
        case cancelled
    }

    /// Shows `prompt`, then blocks until a line is read, the person cancels, or `cancelFD` becomes readable.
    /// On a terminal the prompt appears only once raw mode is on, so nothing typed after it is echoed
    /// or turned into a signal.
    private func readLine(prompt: String, editor: LineEditor, cancelledBy cancelFD: Int32) -> ReadResult {
        // Raw mode, put back on every path, and by the signal handlers if SIGTERM or SIGHUP ends the
        // process at the prompt.
        let rawMode = { (raw: inout termios) in
            raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
            raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
        }
        guard isTerminal, var saved = TerminalRestoration.change(rawMode, on: input) else {
            write(prompt)
            return readPlainLine(cancelledBy: cancelFD)
        }
        defer { TerminalRestoration.restore(saved, on: input) }
        write(prompt)

        var editor = editor
        editor.prompt = Array(prompt.utf8)
        while true {
            guard let byte = readByte(cancelledBy: cancelFD) else {
                editor.wipe()
                return .cancelled
            }
            let (action, display) = editor.feed(byte)
            if !display.isEmpty { writeAll(output, display) }
            switch action {
            case .continue:
                continue
            case .interrupt:
                editor.wipe()
                return .interrupted
            case .endOfInput:
                return .endOfInput
            case .suspend:
                // Ctrl-Z, which raw mode turned into a byte: the terminal as it was, the job stopped as
                // the terminal would have stopped it, and raw mode and the line back once it continues.
                TerminalRestoration.restore(saved, on: input)
                writeAll(output, Array("\r\n".utf8))
                kill(0, SIGTSTP)
                guard let again = TerminalRestoration.change(rawMode, on: input) else { return .cancelled }
                saved = again
                writeAll(output, editor.drawnAgain())
            case .submit:
                writeAll(output, Array("\r\n".utf8))
                var line = editor.take()
                return .line(Secret(wiping: &line))
            }
        }
    }

    /// Reads one `\n`-terminated line, one byte at a time so nothing past the line is consumed. A line
    /// longer than any answer may be is kept one byte past the limit (so it is refused as too long) and
    /// read on to its end, so the next line is the next answer; but never past ``maxLineBytes``, or an
    /// endless input (`/dev/zero`) would be read for ever.
    private func readPlainLine(cancelledBy cancelFD: Int32) -> ReadResult {
        // Room for the longest answer up front: a growing array would leave copies of the password in
        // the buffers it outgrew.
        var line: [UInt8] = []
        line.reserveCapacity(Self.maxAnswerBytes + 1)
        defer { Secret.wipe(&line) }
        var consumed = 0
        while true {
            guard let byte = readByte(cancelledBy: cancelFD) else {
                if line.isEmpty { return .endOfInput }
                break  // End of input ends the last line.
            }
            if byte == UInt8(ascii: "\n") { break }
            if line.count <= Self.maxAnswerBytes { line.append(byte) }
            consumed += 1
            if consumed > Self.maxLineBytes { break }
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return .line(Secret(copying: line))
    }

    /// One byte from the input, or `nil` at end of input, on error, or when `cancelFD` is signalled.
    private func readByte(cancelledBy cancelFD: Int32) -> UInt8? {
        var descriptors = [
            pollfd(fd: input, events: Int16(POLLIN), revents: 0),
            pollfd(fd: cancelFD, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if descriptors[1].revents != 0 { return nil }
            var byte: UInt8 = 0
            let count = Glibc.read(input, &byte, 1)
            if count == 1 { return byte }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            return nil
        }
    }
}

/// What ``TerminalConversation/readCommand(_:history:completer:)`` read.
public enum CommandInput: Hashable, Sendable {
    /// A line was entered.
    case line(String)
    /// Ctrl-C at the prompt.
    case interrupted
    /// Ctrl-D on an empty line, or the end of the input.
    case endOfInput
}

/// The lines entered at a command prompt, for Up and Down. Consecutive repeats and empty lines are not
/// kept, and only the newest `capacity` lines are.
public final class CommandHistory: Sendable {
    private let storage = Locked<[String]>([])
    private let capacity: Int

    public init(capacity: Int = 500) {
        self.capacity = capacity
    }

    /// The lines, oldest first.
    public var lines: [String] { storage.withLock { $0 } }

    func add(_ line: String) {
        guard !line.allSatisfy(\.isWhitespace) else { return }
        storage.withLock { lines in
            guard lines.last != line else { return }
            lines.append(line)
            if lines.count > capacity { lines.removeFirst(lines.count - capacity) }
        }
    }
}

/// A pipe whose read end becomes readable when a blocked read should stop.
final class WakeupPipe: Sendable {
    let readEnd: Int32
    private let writeEnd: Int32

    /// `nil` when the process is out of descriptors; the read then cannot be interrupted early.
    init?() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    func signal() {
        var byte: UInt8 = 1
        _ = Glibc.write(writeEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
