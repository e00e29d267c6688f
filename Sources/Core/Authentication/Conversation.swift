/// How a provider asks the person things, as a PAM conversation does.
///
/// A terminal, a scripted test, or a fixed pair of credentials can each be the other side. A provider may
/// ask any number of questions (a password, then a one-time code) and show any number of messages.
///
/// Answers that the person refuses to give end the login: implementations throw ``AuthError/cancelled``
/// when the person cancels (Ctrl-C, Ctrl-D, an empty answer where that means "go back") and when the
/// task is cancelled. They must not throw other errors for a well-formed answer; validation of the
/// answers is the gatekeeper's job.
public protocol Conversation: Sendable {
    /// Asks a question whose answer may be shown as it is typed (a user name, a code from a text message).
    /// - Throws: ``AuthError/cancelled`` when the person declines to answer.
    func ask(_ prompt: String) async throws(AuthError) -> String

    /// Asks a question whose answer must not be shown (a password).
    /// - Throws: ``AuthError/cancelled`` when the person declines to answer.
    func askSecret(_ prompt: String) async throws(AuthError) -> Secret

    /// Shows a message that needs no answer. Never fails the conversation.
    func show(_ message: String, as kind: MessageKind) async

    /// Asks for the user name at the start of a login; the ``Gatekeeper`` asks it this way, and never
    /// through ``ask(_:)``, so a conversation that knows the name already (a `--user` option) answers
    /// this one question and still asks the person everything else. By default it is ``ask(_:)``.
    /// - Throws: ``AuthError/cancelled`` when the person declines to answer.
    func askUsername(_ prompt: String) async throws(AuthError) -> String

    /// Whether a message reaches the person only together with the next question: sshd's
    /// keyboard-interactive login relays PAM's messages that way. A backend that shows something and then
    /// waits without asking anything — a device login showing its code — calls ``pause(_:)`` after the
    /// message where this is true, or the person would never see it. By default `false`.
    var messagesWaitForAQuestion: Bool { get }

    /// Asks the person to press Enter. What they type is not kept and is no credential: it is never handed
    /// to a backend, and a login's ledger does not count it as a guess. By default ``ask(_:)``, its answer
    /// dropped.
    /// - Throws: ``AuthError/cancelled`` when the person declines to answer.
    func pause(_ prompt: String) async throws(AuthError)

    /// Whether a person answers: `false` for a conversation that replays answers given beforehand
    /// (``CredentialsConversation``), which cannot answer what nobody foresaw, such as the new password a
    /// login found expired needs. By default `true`.
    var isInteractive: Bool { get }
}

extension Conversation {
    public func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await ask(prompt)
    }

    public var messagesWaitForAQuestion: Bool { false }

    public var isInteractive: Bool { true }

    public func pause(_ prompt: String) async throws(AuthError) {
        _ = try await ask(prompt)
    }
}

/// The kind of a message shown during a conversation.
public enum MessageKind: Hashable, Sendable {
    /// Informational text (PAM's `PAM_TEXT_INFO`).
    case info
    /// An error the person should see (PAM's `PAM_ERROR_MSG`); the login may still go on.
    case error
}

/// A conversation that answers with fixed credentials: the user name when the login asks for it, the
/// password to a hidden prompt. It is how ``Gatekeeper/signIn(_:)`` talks to a provider.
///
/// Any other question — a visible prompt from the provider (a one-time code), a second hidden one (a new
/// password) — cannot be answered from fixed credentials and gets ``AuthError/cancelled``, so a provider
/// is never handed the user name or the password as the answer to a question it did not ask.
public struct CredentialsConversation: Conversation {
    private let credentials: Credentials
    private let answeredSecret = Flag()

    public init(_ credentials: Credentials) {
        self.credentials = credentials
    }

    public func askUsername(_ prompt: String) async throws(AuthError) -> String {
        credentials.username
    }

    public func ask(_ prompt: String) async throws(AuthError) -> String {
        throw .cancelled
    }

    public func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        guard answeredSecret.setOnce() else { throw .cancelled }
        return credentials.password
    }

    public func show(_ message: String, as kind: MessageKind) async {}

    public var isInteractive: Bool { false }
}
