import GatekeeperSupport

/// Checks every password the provider asks for before the provider sees it, and presents each answer to
/// the attempt's ledger entry (``LedgerAttempt/present()``) before handing it over.
struct ValidatingConversation: Conversation {
    let base: any Conversation
    let attempt: LedgerAttempt?

    init(_ base: any Conversation, attempt: LedgerAttempt? = nil) {
        self.base = base
        self.attempt = attempt
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        attempt?.asking()
        let answer = try await base.ask(prompt)
        try await attempt?.present()
        return answer
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        attempt?.asking()
        let secret = try await base.askSecret(prompt)
        try Credentials.validatePassword(secret)
        try await attempt?.present()
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }

    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }

    /// Not a presentation: nothing the person types here reaches a backend.
    func pause(_ prompt: String) async throws(AuthError) {
        try await base.pause(prompt)
    }
}
