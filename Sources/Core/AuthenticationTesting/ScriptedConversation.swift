public import Authentication
import GatekeeperSupport

/// A conversation that answers from a script, and records what it was asked and shown.
///
/// ```swift
/// let conversation = ScriptedConversation(.text("alice"), .secret("wonderland"))
/// ```
/// When the script runs out, the next question is answered with ``AuthError/cancelled``, as a person
/// pressing Ctrl-D would.
public final class ScriptedConversation: Conversation {
    /// One scripted answer.
    public enum Answer: Sendable {
        /// Answer a visible or hidden question with this text.
        case text(String)
        /// Answer with these bytes (for invalid UTF-8 or binary input).
        case bytes([UInt8])
        /// Decline: the question throws ``AuthError/cancelled``.
        case cancel
        /// Never answer until the task is cancelled, then throw ``AuthError/cancelled``.
        case hang
        /// Throw this error.
        case fail(AuthError)

        /// Answer a hidden question with this password.
        public static func secret(_ text: String) -> Answer { .text(text) }
    }

    /// Something that happened in the conversation. Answers are not recorded.
    public enum Event: Hashable, Sendable {
        case asked(String)
        case askedSecret(String)
        case shown(String, MessageKind)
    }

    private let state: Locked<(answers: [Answer], events: [Event])>
    private let hangStarted = AsyncStream<Void>.makeStream()

    public init(_ answers: Answer...) {
        state = Locked((answers, []))
    }

    public init(answers: [Answer]) {
        state = Locked((answers, []))
    }

    /// Everything asked and shown so far, in order.
    public var events: [Event] { state.withLock { $0.events } }

    /// How many questions (visible and hidden) were asked.
    public var questionCount: Int {
        events.count { event in
            switch event {
            case .asked, .askedSecret: true
            case .shown: false
            }
        }
    }

    /// The messages shown, in order.
    public var messages: [String] {
        events.compactMap { event in
            if case .shown(let text, _) = event { text } else { nil }
        }
    }

    /// Adds answers at the end of the script.
    public func append(_ answers: Answer...) {
        state.withLock { $0.answers += answers }
    }

    /// Returns once the conversation is hanging on a `.hang` answer.
    public func waitUntilHanging() async {
        for await _ in hangStarted.stream { return }
    }

    public func ask(_ prompt: String) async throws(AuthError) -> String {
        let bytes = try await next(.asked(prompt))
        return String(decoding: bytes, as: UTF8.self)
    }

    public func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        var bytes = try await next(.askedSecret(prompt))
        return Secret(wiping: &bytes)
    }

    public func show(_ message: String, as kind: MessageKind) async {
        state.withLock { $0.events.append(.shown(message, kind)) }
    }

    private func next(_ event: Event) async throws(AuthError) -> [UInt8] {
        if Task.isCancelled { throw .cancelled }
        let answer = state.withLock { state -> Answer in
            state.events.append(event)
            return state.answers.isEmpty ? .cancel : state.answers.removeFirst()
        }
        switch answer {
        case .text(let text): return Array(text.utf8)
        case .bytes(let bytes): return bytes
        case .cancel: throw .cancelled
        case .fail(let error): throw error
        case .hang:
            hangStarted.continuation.yield()
            // Sleeps until cancelled; a sleep that ends without cancellation is a test that forgot to cancel.
            try? await Task.sleep(for: .seconds(24 * 60 * 60))
            throw .cancelled
        }
    }
}
