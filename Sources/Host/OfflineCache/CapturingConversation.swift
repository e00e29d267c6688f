import Authentication
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// Passes every question on, keeping the first hidden answer (the password) for the cache.
final class CapturingConversation: Conversation, Sendable {
    let base: any Conversation
    private let captured = Locked<Secret?>(nil)

    init(_ base: any Conversation) { self.base = base }

    var password: Secret? { captured.withLock { $0 } }

    func ask(_ prompt: String) async throws(AuthError) -> String { try await base.ask(prompt) }
    func askUsername(_ prompt: String) async throws(AuthError) -> String { try await base.askUsername(prompt) }
    func show(_ message: String, as kind: MessageKind) async { await base.show(message, as: kind) }
    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }
    func pause(_ prompt: String) async throws(AuthError) { try await base.pause(prompt) }

    /// The first password asked, unless a new one is set during the login (an expired password changed
    /// at the prompt): then the new one, the one that signs in from now on.
    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        captured.withLock { if $0 == nil || prompt == PasswordPrompt.new { $0 = secret } }
        return secret
    }
}
