import Authentication
import AuthenticationTesting
import GatekeeperSupport
import TestSupport
import Testing

/// How a stack's trace reaches whoever asks: with the outcome (``AuthProvider/authenticateWithTrace(_:)``),
/// and from the gatekeeper to the caller whose login it was (``Gatekeeper/authorizeWithTrace(_:conversation:)``,
/// ``RequiresAuthentication/runWithTrace(through:conversation:)``), never through a side channel that
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
        let bob = try expectAuthenticated(answer.outcome, "bob was not admitted: \(answer.outcome)")
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

    /// A provider that is no stack answers no trace, and a gatekeeper in front of it answers none.
    @Test func aProviderThatIsNoStackAnswersNoTrace() async throws {
        let provider = accountsProvider()
        let answer = try await provider.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        #expect(answer.trace == nil)
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let login = await gatekeeper.authorizeWithTrace(
            .signedIn, conversation: ScriptedConversation(.text("bob"), .secret("builder")))
        #expect(login.outcome.map(\.username) == .success("bob"))
        #expect(login.trace == nil)
    }

    /// Each login answers with its own trace: the caller's, whatever another gatekeeper in front of the same
    /// stack (a service with a gatekeeper per connection) did meanwhile; a dismissed login with the trace
    /// of why; a session that lets the action run at once with none.
    @Test func eachLoginAnswersWithItsOwnTrace() async throws {
        let stack = ProviderChain([.init(.required, accountsProvider())])
        let first = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 1, failDelay: .zero))
        let second = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 1, failDelay: .zero))
        let action = RequiresAuthentication(.signedIn) { identity in identity.username }
        let admitted = try await action.runWithTrace(
            through: first, conversation: ScriptedConversation(.text("alice"), .secret("wonderland")))
        let refused = try await action.runWithTrace(
            through: second, conversation: ScriptedConversation(.text("bob"), .secret("guess")))
        #expect(admitted.outcome.output == "alice")
        #expect(admitted.trace?.description == "1. required stub: success -> ok\nidentity: 1:stub\nresult: success")
        guard case .dismissed(let reason) = refused.outcome else {
            Issue.record("bob's wrong password let the action run")
            return
        }
        #expect(reason.code == .invalidCredentials)
        #expect(refused.trace?.description == "1. required stub: auth_err -> bad\nresult: auth_err")
        // Signed in: the action runs without a login, and no stack answered anything.
        let again = try await action.runWithTrace(through: first, conversation: ScriptedConversation())
        #expect(again.outcome.output == "alice")
        #expect(again.trace == nil)
        // A login that needed two attempts answers with the trace of the one that decided.
        let patient = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 2, failDelay: .zero))
        let second_try = await patient.authorizeWithTrace(
            .signedIn,
            conversation: ScriptedConversation(.text("bob"), .secret("guess"), .text("bob"), .secret("builder")))
        #expect(second_try.outcome.map(\.username) == .success("bob"))
        #expect(second_try.trace?.result == .success)
        // Signed in as bob, an action for admins is refused without a login: the refusal has no trace.
        let forAdmins = await patient.authorizeWithTrace(.member(of: "admin"), conversation: ScriptedConversation())
        #expect(forAdmins.outcome.map(\.username) == .failure(.notAuthorized(requirement: "member of admin")))
        #expect(forAdmins.trace == nil)
    }

    /// A password change answers with the change's trace; one whose login failed, with the login's.
    @Test func aPasswordChangeAnswersWithItsTrace() async throws {
        let stack = ProviderChain([.init(.required, accountsProvider())])
        let gatekeeper = Gatekeeper(provider: stack, configuration: .init(maxAttempts: 1, failDelay: .zero))
        let refusedLogin = await gatekeeper.changePasswordWithTrace(
            conversation: ScriptedConversation(.text("bob"), .secret("guess")))
        #expect(refusedLogin.trace?.result == .authenticationError)
        if case .success = refusedLogin.outcome { Issue.record("a wrong password changed a password") }
        try await gatekeeper.signIn(try credentials("bob", "builder"))
        let change = await gatekeeper.changePasswordWithTrace(
            conversation: ScriptedConversation(.secret("builder"), .secret("new-builder-9"), .secret("new-builder-9")))
        #expect(change.trace != nil)
        #expect(change.trace?.description.contains("required stub") == true)
    }

    /// A login cancelled after the stack answered an attempt (Ctrl-C during the fail delay) answers
    /// `cancelled` with that attempt's trace: `--explain` shows what the stack decided.
    @Test func aLoginCancelledAfterTheStackAnsweredKeepsItsTrace() async throws {
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([.init(.required, accountsProvider())]),
            configuration: .init(maxAttempts: 1, failDelay: .seconds(60)), audit: audit)
        let login = Task {
            await gatekeeper.authorizeWithTrace(
                .signedIn, conversation: ScriptedConversation(.text("bob"), .secret("guess")))
        }
        // The stack's decision is audited once the trace is the login's: the fail delay has begun.
        #expect(await eventually { audit.events.contains { $0.kind == .stackDecision } })
        login.cancel()
        let answer = await login.value
        #expect(answer.outcome.map(\.username) == .failure(.cancelled))
        #expect(answer.trace?.description == "1. required stub: auth_err -> bad\nresult: auth_err")
    }

    /// A login abandoned while its backend works, whose backend answers only after a later login has
    /// ended: the abandoned caller hears `cancelled` with no trace, the later one its own.
    @Test func aLateAnswerOfAnAbandonedLoginIsNobodysTrace() async throws {
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
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([.init(.sufficient, accountsProvider()), .init(.required, slow)]),
            configuration: .init(maxAttempts: 1, failDelay: .zero))
        let abandoned = Task {
            await gatekeeper.signInWithTrace(conversation: ScriptedConversation(.text("late"), .secret("guess")))
        }
        for await _ in entered { break }
        abandoned.cancel()
        let cancelled = await abandoned.value
        #expect(cancelled.outcome.map(\.username) == .failure(.cancelled))
        #expect(cancelled.trace == nil)
        let later = await gatekeeper.signInWithTrace(
            conversation: ScriptedConversation(.text("alice"), .secret("wonderland")))
        #expect(later.trace?.identityEntry == "1:stub")
        gate.withLock { gate in
            gate?.resume()
            gate = nil
        }
    }
}
