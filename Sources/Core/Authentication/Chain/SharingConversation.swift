import GatekeeperSupport

/// A conversation that asks each hidden question once: the answer is kept for this login only (a
/// `Secret`, wiped when the login ends) and given again to a later entry asking the same prompt.
final class SharingConversation: Conversation {
    private let base: any Conversation
    private let answers = Locked<[String: Secret]>([:])

    init(_ base: any Conversation) { self.base = base }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        try await base.ask(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if let known = answers.withLock({ $0[prompt] }) { return known }
        let answer = try await base.askSecret(prompt)
        answers.withLock { $0[prompt] = answer }
        return answer
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }
    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }
    func pause(_ prompt: String) async throws(AuthError) { try await base.pause(prompt) }
}
