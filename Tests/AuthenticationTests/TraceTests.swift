import Authentication
import AuthenticationTesting
import GatekeeperSupport
import TestSupport
import Testing

/// How a stack's trace reaches whoever asks: with the outcome (``AuthProvider/authenticateWithTrace(_:)``),
/// and from the gatekeeper that ran the login (``Gatekeeper/latestTrace``), never from a side channel that
/// another login could overwrite.
@Suite(.timeLimit(.minutes(1)))
struct TraceTests {
    /// A stack used as an ordinary entry of another (not a substack, which runs in place) answers with
    /// its own trace, shown inside its entry; its refused credential is the outer stack's too.
    @Test func aNestedStacksTraceIsShownInsideItsEntry() async throws {
        let inner = ProviderChain(
            name: "inner",
            [
                .init(.sufficient, StubAuthProvider(name: "first") { _ throws(AuthError) in .notMine }),
                .init(.required, accountsProvider()),
            ])
        let outer = ProviderChain([.init(.required, inner)])
        let answer = try await outer.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        guard case .authenticated(let bob) = answer.outcome else {
            Issue.record("bob was not admitted: \(answer.outcome)")
            return
        }
        #expect(bob.provider == "stub")
        let trace = try #require(answer.trace)
        #expect(
            trace.description == """
                1. required inner: success -> ok
                  1. sufficient first: user_unknown -> ignore
                  2. required stub: success -> ok
                identity: 1:inner
                result: success
                """)
        #expect(!trace.refusedCredential)
        let wrong = try await outer.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("guess"))))
        #expect(wrong.outcome == .rejected(.wrongCredentials))
        #expect(wrong.trace?.steps.map(\.result) == [.authenticationError])
        #expect(wrong.trace?.steps.first?.nested.map(\.result) == [.userUnknown, .authenticationError])
        #expect(wrong.trace?.refusedCredential == true)
    }

    /// A provider that is no stack answers no trace, and a gatekeeper in front of it keeps none.
    @Test func aProviderThatIsNoStackAnswersNoTrace() async throws {
        let provider = accountsProvider()
        let answer = try await provider.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        #expect(answer.trace == nil)
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        try await gatekeeper.signIn(try credentials("bob", "builder"))
        #expect(gatekeeper.latestTrace == nil)
    }

    /// Two gatekeepers in front of one stack (a service with a gatekeeper per connection) each keep the
    /// trace of their own latest login, whatever the other did since.
    @Test func eachGatekeeperKeepsTheTraceOfItsOwnLogins() async throws {
        let stack = ProviderChain([.init(.required, accountsProvider())])
        let first = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 1, failDelay: .zero))
        let second = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 1, failDelay: .zero))
        #expect(first.latestTrace == nil)
        try await first.signIn(try credentials("alice", "wonderland"))
        await #expect(throws: AuthError.invalidCredentials) {
            try await second.signIn(try credentials("bob", "guess"))
        }
        #expect(first.latestTrace?.description == "1. required stub: success -> ok\nidentity: 1:stub\nresult: success")
        #expect(second.latestTrace?.description == "1. required stub: auth_err -> bad\nresult: auth_err")
        // A later login of the first replaces its own trace.
        await #expect(throws: AuthError.invalidCredentials) {
            try await first.signIn(try credentials("alice", "guess"))
        }
        #expect(first.latestTrace?.result == .authenticationError)
    }

    /// A login abandoned while its backend works, whose backend answers only after a later login has
    /// ended: the later login's trace stays the latest.
    @Test func aLateAnswerOfAnAbandonedLoginReplacesNoLaterTrace() async throws {
        let gate = Locked<CheckedContinuation<Void, Never>?>(nil)
        let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        // Deaf to cancellation once it has the password, as a C library blocked in a call is.
        let slow = StubAuthProvider(name: "slow") { request throws(AuthError) in
            guard request.username == "late" else { return .notMine }
            _ = try await request.conversation.askSecret("Password: ")
            await withCheckedContinuation { continuation in
                gate.withLock { $0 = continuation }
                enteredContinuation.yield()
            }
            return .rejected(.wrongCredentials)
        }
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([.init(.sufficient, accountsProvider()), .init(.required, slow)]),
            configuration: .init(maxAttempts: 1, failDelay: .zero), audit: audit)
        let abandoned = Task { try await gatekeeper.signIn(try credentials("late", "guess")) }
        for await _ in entered { break }
        abandoned.cancel()
        await #expect(throws: AuthError.cancelled) { try await abandoned.value }
        try await gatekeeper.signIn(try credentials("alice", "wonderland"))
        let later = try #require(gatekeeper.latestTrace)
        #expect(later.identityEntry == "1:stub")
        gate.withLock { gate in
            gate?.resume()
            gate = nil
        }
        // The abandoned login's stack answers, and the gatekeeper audits its decision after taking its
        // trace: once that record is there, the trace has been offered.
        let landed = await eventually {
            audit.events.contains { $0.kind == .stackDecision && $0.detail?.contains("slow: auth_err") == true }
        }
        #expect(landed)
        #expect(gatekeeper.latestTrace == later)
    }
}
