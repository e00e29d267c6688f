import Authentication
import Synchronization
import TerminalLogin

/// Answers the user name from `--user` and the password from standard input when given; asks the
/// prompter otherwise.
final class RunConversation: Conversation {
    let user: String?
    let prompter: TerminalConversation
    private let readsPasswordFromPrompter: Bool
    private let password: Mutex<Secret?>

    init(user: String?, password: Secret?, prompter: TerminalConversation) {
        self.user = user
        self.readsPasswordFromPrompter = password == nil
        self.password = Mutex(password)
        self.prompter = prompter
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        if let user { return user }
        return try await prompter.ask(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if readsPasswordFromPrompter { return try await prompter.askSecret(prompt) }
        // One line of standard input answers one question; a second (a one-time code) cannot be answered.
        guard let secret = password.withLock({ $0.take() }) else { throw .cancelled }
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await prompter.show(message, as: kind)
    }
}
