import Authentication
import GatekeeperSupport
import TerminalLogin

/// Answers the login's user-name question from `--user` and the password from standard input when
/// given; asks the person everything else.
///
/// `--user` answers only the user-name question (``Conversation/askUsername(_:)``): a provider's own
/// visible prompt (a one-time code, a PIN) is asked of the person. With `--password-stdin`, the one line
/// of standard input answers one hidden question; any further question cannot be answered by a script
/// and ends the login, saying which question it was.
final class RunConversation: Conversation {
    let user: String?
    let prompter: TerminalConversation
    private let readsFromPrompter: Bool
    private let password: Locked<Secret?>

    init(user: String?, password: Secret?, prompter: TerminalConversation) {
        self.user = user
        self.readsFromPrompter = password == nil
        self.password = Locked(password)
        self.prompter = prompter
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        if let user { return user }
        return try await prompter.ask(prompt)
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        guard readsFromPrompter else { throw await unanswerable(prompt) }
        return try await prompter.ask(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if readsFromPrompter { return try await prompter.askSecret(prompt) }
        guard let secret = password.withLock({ $0.take() }) else { throw await unanswerable(prompt) }
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await prompter.show(message, as: kind)
    }

    /// Says which question `--password-stdin` cannot answer; the login then ends as cancelled.
    private func unanswerable(_ prompt: String) async -> AuthError {
        let question = prompt.trimmingSuffix { $0 == " " || $0 == ":" }
        await prompter.show(
            "gatekeeper-run: the login asks \"\(question)\", which --password-stdin cannot answer.", as: .error)
        return .cancelled
    }
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, predicate(last) { text.removeLast() }
        return text
    }
}
