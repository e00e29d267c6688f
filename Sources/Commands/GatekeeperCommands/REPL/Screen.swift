import Authentication
import GatekeeperSupport
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where the REPL writes: the terminal with colour and a spinner, or a plain transcript for scripts.
final class Screen: Sendable {
    let console: TerminalConversation
    /// Whether a person is at a terminal: colour (unless `NO_COLOR`), spinner, line editing.
    let interactive: Bool
    let colour: Bool
    /// The running spinner, and a generation that stops a spinner's late frame from drawing after it was
    /// stopped.
    private let spinner = Locked<(task: Task<Void, Never>?, generation: Int, terminal: termios?)>((nil, 0, nil))

    init(console: TerminalConversation, environment: [String: String]) {
        self.console = console
        interactive = console.isTerminal
        let noColour = !(environment["NO_COLOR"] ?? "").isEmpty || environment["TERM"] == "dumb"
        colour = interactive && !noColour
    }

    enum Style: String {
        case tab = "1;36"
        case user = "32"
        case error = "31"
        case dim = "2"
        case heading = "1"
    }

    func styled(_ text: String, _ style: Style) -> String {
        colour ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// Writes lines of text.
    func say(_ text: String) {
        stopSpinner()
        console.write(text.isEmpty ? "\n" : text + "\n")
    }

    /// Writes an error line; the text (which may quote a provider's reason) is escaped before styling.
    func error(_ text: String) {
        say(styled(shown(text), .error))
    }

    /// Shows a spinner until ``stopSpinner()``; only on a terminal.
    func startSpinner(_ label: String) {
        guard interactive else { return }
        stopSpinner()
        let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
        spinner.withLock { state in
            // Keys typed while the provider works would be echoed over the spinner; hide them (Ctrl-C
            // still interrupts, as the terminal stays in its usual mode otherwise). Echo comes back
            // when the spinner stops, or if SIGTERM or SIGHUP ends the REPL meanwhile.
            state.terminal = TerminalRestoration.change({ $0.c_lflag &= ~tcflag_t(ECHO) }, on: console.input)
            let generation = state.generation
            state.task = Task { [self] in
                var index = 0
                while !Task.isCancelled {
                    let drawn = spinner.withLock { state in
                        guard state.generation == generation else { return false }
                        console.write("\r\(frames[index % frames.count]) \(label) (Ctrl-C cancels)")
                        return true
                    }
                    guard drawn else { return }
                    index += 1
                    try? await Task.sleep(for: .milliseconds(80))
                }
            }
        }
    }

    func stopSpinner() {
        spinner.withLock { state in
            guard let task = state.task else { return }
            task.cancel()
            state.task = nil
            state.generation += 1
            if let settings = state.terminal.take() { TerminalRestoration.restore(settings, on: console.input) }
            console.write("\r\u{1B}[K")
        }
    }
}

/// The login as the REPL presents it: the terminal's prompts, errors in colour, and a spinner while the
/// provider works on the answers.
struct LoginConversation: Conversation {
    let screen: Screen
    /// Where the login in progress stands, in words (`at “Password: ”`), for `why` after a cancellation.
    let progress = Locked<String?>(nil)

    func ask(_ prompt: String) async throws(AuthError) -> String {
        screen.stopSpinner()
        let asked = shown("“\(prompt)”")
        progress.withLock { $0 = "at \(asked)" }
        let answer = try await screen.console.ask(prompt)
        // An empty user name cancels the login: it ends at its question.
        progress.withLock { $0 = answer.isEmpty ? "at \(asked), with an empty answer" : "after the answer to \(asked)" }
        return answer
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        screen.stopSpinner()
        let asked = shown("“\(prompt)”")
        progress.withLock { $0 = "at \(asked)" }
        let secret = try await screen.console.askSecret(prompt)
        progress.withLock { $0 = "while the provider checked the answer to \(asked)" }
        screen.startSpinner("Checking")
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        kind == .error ? screen.error(message) : screen.say(shown(message))
    }
}
