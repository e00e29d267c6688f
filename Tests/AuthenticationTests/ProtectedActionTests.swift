import AuthenticationTesting
import GatekeeperSupport
import Synchronization
import TestSupport
import Testing

@testable import Authentication

@Suite(.timeLimit(.minutes(1)))
struct ProtectedActionTests {
    @Test func runsTheContentAfterALogin() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        let dismissed = Counter()
        let courses = RequiresAuthentication(.signedIn) { _ in
            dismissed.increment()
        } content: { identity in
            "courses for \(identity.username)"
        }
        let conversation = ScriptedConversation(.text("alice"), .secret("wonderland"))
        let access = try await courses.run(through: gatekeeper, conversation: conversation)
        #expect(access.output == "courses for alice")
        #expect(dismissed.count == 0)
        // Signed in now: the next run asks nothing.
        let silent = ScriptedConversation()
        #expect(try await courses.run(through: gatekeeper, conversation: silent).output == "courses for alice")
        #expect(silent.events.isEmpty)
    }

    static let dismissals: [(String, [ScriptedConversation.Answer], AuthError)] = [
        ("cancel at the user name", [.cancel], .cancelled),
        ("empty user name", [.text("")], .cancelled),
        ("cancel at the password", [.text("alice"), .cancel], .cancelled),
        (
            "three wrong passwords",
            [.text("alice"), .secret("a"), .text("alice"), .secret("b"), .text("alice"), .secret("c")],
            .invalidCredentials
        ),
        (
            "not in the group", [.text("bob"), .secret("builder")],
            .notAuthorized(requirement: "membership of \"admin\"")
        ),
    ]

    @Test(arguments: dismissals)
    func dismissalNeverRunsTheContentAndNotifiesOnce(
        _ name: String,
        _ answers: [ScriptedConversation.Answer],
        _ expected: AuthError
    ) async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        let ran = Counter()
        let dismissed = Locked<[AuthError]>([])
        let admin = RequiresAuthentication(.member(of: "admin")) { reason in
            dismissed.update { $0.append(reason) }
        } content: { _ in
            ran.increment()
        }
        let access = try await admin.run(through: gatekeeper, conversation: ScriptedConversation(answers: answers))
        guard case .dismissed(let reason) = access else {
            Issue.record("\(name): expected dismissed, got \(access)")
            return
        }
        #expect(reason == expected)
        #expect(ran.count == 0)
        #expect(dismissed.value == [expected])
        #expect(gatekeeper.state != .authenticating)
    }

    @Test func theModifierFormProtectsAnExistingAction() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        let ran = Counter()
        let deploy = gatekeeper.requiresAuthentication(
            .member(of: "admin"),
            conversation: ScriptedConversation(.text("alice"), .secret("wonderland"))
        ) { identity in
            ran.increment()
            return identity.username
        }
        #expect(try await deploy().output == "alice")
        await gatekeeper.signOut()
        let refused = gatekeeper.requiresAuthentication(conversation: ScriptedConversation(.cancel)) { _ in
            ran.increment()
        }
        guard case .dismissed(.cancelled) = try await refused() else {
            Issue.record("expected a dismissal")
            return
        }
        #expect(ran.count == 1)
    }

    @Test func contentErrorsReachTheCaller() async throws {
        struct Boom: Error {}
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        let failing = RequiresAuthentication { _ in throw Boom() }
        await #expect(throws: Boom.self) {
            try await failing.run(through: gatekeeper, conversation: ScriptedConversation())
        }
    }

    @Test func concurrentActionsShareOneLogin() async throws {
        let provider = BlockingProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(.text("alice"), .secret("pw"))
        let ran = Counter()
        let action = RequiresAuthentication { _ in ran.increment() }
        async let first = action.run(through: gatekeeper, conversation: conversation)
        async let second = action.run(through: gatekeeper, conversation: conversation)
        for await _ in provider.started.stream { break }
        provider.release()
        _ = try await (first, second)
        #expect(ran.count == 2)
        #expect(conversation.questionCount == 2)  // one user name, one password
        #expect(gatekeeper.identity?.username == "alice")
    }

    @Test func manyConcurrentActionsShareOneLogin() async throws {
        let provider = StubAuthProvider(accounts: ["alice": ("wonderland", [])])
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(.text("alice"), .secret("wonderland"))
        let action = RequiresAuthentication { identity in identity.username }
        try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<50 {
                group.addTask { try await action.run(through: gatekeeper, conversation: conversation).output }
            }
            for try await output in group { #expect(output == "alice") }
        }
        #expect(provider.authenticationCount == 1)
        #expect(conversation.questionCount == 2)
    }

    /// The window `manyConcurrentActionsShareOneLogin` once fell into under ThreadSanitizer's scheduling: an
    /// action finds no session, and before it joins a login, the login in flight lands. It must use that
    /// session, not start a second login and ask the person again.
    @Test func anActionThatFoundNoSessionUsesOneThatLandedMeanwhile() async throws {
        let provider = StubAuthProvider(accounts: ["alice": ("wonderland", [])])
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        // The action's check: no session yet.
        #expect(gatekeeper.identityIfAdmitted(.signedIn) == nil)
        // Meanwhile another action's login lands.
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        // The first action now joins a login: it gets the session, and nobody is asked anything.
        let silent = ScriptedConversation()
        let identity = try await gatekeeper.login(conversation: silent, attempts: 3, joinExisting: true).outcome.get()
        #expect(identity.username == "alice")
        #expect(silent.questionCount == 0)
        #expect(provider.authenticationCount == 1)
    }

    @Test func idleTimeoutAsksAgain() async throws {
        let clock = ManualClock()
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: accountsProvider(),
            configuration: .init(idleTimeout: .seconds(60), absoluteTimeout: nil, failDelay: .zero),
            audit: audit,
            now: clock.now
        )
        let conversation = ScriptedConversation(.text("alice"), .secret("wonderland"))
        let action = RequiresAuthentication { identity in identity.username }
        #expect(try await action.run(through: gatekeeper, conversation: conversation).output == "alice")
        // Use within the idle timeout keeps the session alive well past the first minute.
        for _ in 0..<5 {
            clock.advance(by: .seconds(59))
            #expect(try await action.run(through: gatekeeper, conversation: conversation).output == "alice")
        }
        #expect(conversation.questionCount == 2)
        clock.advance(by: .seconds(60))
        #expect(gatekeeper.state == .signedOut)
        conversation.append(.text("bob"), .secret("builder"))
        #expect(try await action.run(through: gatekeeper, conversation: conversation).output == "bob")
        #expect(conversation.questionCount == 4)
        #expect(audit.events.map(\.kind).contains(.sessionExpired))
    }

    @Test func absoluteTimeoutEndsABusySession() async throws {
        let clock = ManualClock()
        let gatekeeper = Gatekeeper(
            provider: accountsProvider(),
            configuration: .init(idleTimeout: .seconds(60), absoluteTimeout: .seconds(100), failDelay: .zero),
            now: clock.now
        )
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        guard case .signedIn(_, let expires?) = gatekeeper.state else {
            Issue.record("expected an expiry")
            return
        }
        #expect(expires == clock.instant + .seconds(60))
        let conversation = ScriptedConversation(.cancel)
        let action = RequiresAuthentication { _ in }
        clock.advance(by: .seconds(50))
        #expect(try await action.run(through: gatekeeper, conversation: conversation).output != nil)
        clock.advance(by: .seconds(50))
        guard case .dismissed(.cancelled) = try await action.run(through: gatekeeper, conversation: conversation) else {
            Issue.record("the session outlived its absolute timeout")
            return
        }
        #expect(conversation.questionCount == 1)
    }

    @Test func sessionsWithoutTimeoutsLastUntilSignedOut() async throws {
        let clock = ManualClock()
        let gatekeeper = Gatekeeper(
            provider: accountsProvider(),
            configuration: .init(idleTimeout: nil, absoluteTimeout: nil, failDelay: .zero),
            now: clock.now
        )
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        clock.advance(by: .seconds(10 * 365 * 24 * 60 * 60))
        #expect(gatekeeper.state == .signedIn(try #require(gatekeeper.identity), expires: nil))
        let silent = ScriptedConversation()
        #expect(
            try await RequiresAuthentication { $0.username }.run(through: gatekeeper, conversation: silent).output
                == "alice")
        await gatekeeper.signOut()
        #expect(gatekeeper.identity == nil)
    }

    @Test func signingOutMakesTheNextActionAsk() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        await gatekeeper.signOut()
        let conversation = ScriptedConversation(.cancel)
        let access = try await RequiresAuthentication { _ in }.run(through: gatekeeper, conversation: conversation)
        guard case .dismissed(.cancelled) = access else {
            Issue.record("ran without a session")
            return
        }
        #expect(conversation.questionCount == 1)
    }

    @Test func signingOutDuringALoginCancelsIt() async throws {
        let provider = BlockingProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let ran = Counter()
        let pending = Task {
            try await RequiresAuthentication { _ in ran.increment() }
                .run(through: gatekeeper, conversation: ScriptedConversation(.text("alice"), .secret("pw")))
        }
        for await _ in provider.started.stream { break }
        #expect(gatekeeper.state == .authenticating)
        await gatekeeper.signOut()
        guard case .dismissed(.cancelled) = try await pending.value else {
            Issue.record("the login survived a sign-out")
            return
        }
        #expect(gatekeeper.state == .signedOut)
        provider.release()
        for await _ in provider.finished.stream { break }
        #expect(ran.count == 0)
        // The late result of the abandoned login does not open a session.
        #expect(await eventually { provider.signOutCount > 0 })
        #expect(gatekeeper.state == .signedOut)
    }

    /// The provider is stuck (as in a C call that ignores cancellation); cancelling the task still
    /// returns at once, leaves the state signed out, and discards the late result.
    @Test func cancellingTheTaskReturnsWhileTheProviderIsStuck() async throws {
        let provider = BlockingProvider()
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero), audit: audit)
        let dismissed = Counter()
        let ran = Counter()
        let action = RequiresAuthentication(.signedIn) { _ in
            dismissed.increment()
        } content: { _ in
            ran.increment()
        }
        let pending = Task {
            try await action.run(through: gatekeeper, conversation: ScriptedConversation(.text("a"), .secret("p")))
        }
        for await _ in provider.started.stream { break }
        pending.cancel()
        guard case .dismissed(.cancelled) = try await pending.value else {
            Issue.record("expected a dismissal")
            return
        }
        #expect(gatekeeper.state == .signedOut)
        #expect(dismissed.count == 1)
        // The attempt began; cancelled, it counts as no failure.
        #expect(audit.events.map(\.kind) == [.attempt, .signInCancelled])
        provider.release()
        #expect(await eventually { provider.signOutCount > 0 })
        #expect(gatekeeper.state == .signedOut)
        #expect(ran.count == 0)
    }

    /// One of two waiters is cancelled: the login goes on for the other.
    @Test func aCancelledWaiterDoesNotCancelTheSharedLogin() async throws {
        let provider = BlockingProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(.text("alice"), .secret("pw"))
        let action = RequiresAuthentication { identity in identity.username }
        let first = Task { try await action.run(through: gatekeeper, conversation: conversation) }
        for await _ in provider.started.stream { break }
        let second = Task { try await action.run(through: gatekeeper, conversation: conversation) }
        #expect(await eventually { gatekeeper.core.withLock { $0.login.waiters.count } == 2 })
        first.cancel()
        guard case .dismissed(.cancelled) = try await first.value else {
            Issue.record("the cancelled waiter was not dismissed")
            return
        }
        #expect(gatekeeper.state == .authenticating)
        provider.release()
        #expect(try await second.value.output == "alice")
    }

    /// Many tasks run protected actions while others sign in and out. Content must only ever run with an
    /// identity the provider issued, meeting the requirement, from a session that was not already signed
    /// out when the action began.
    @Test func stress() async throws {
        let serial = Atomic<Int>(0)
        let provider = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            let number = serial.add(1, ordering: .relaxed).newValue
            let groups: Set<String> = request.username == "alice" ? ["admin"] : []
            return .authenticated(
                Identity(
                    username: request.username, groups: groups, provider: "stress", attributes: ["serial": "\(number)"])
            )
        }
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(lockout: nil, failDelay: .zero))
        let endedSessions = Locked<Set<String>>([])
        let violations = Locked<[String]>([])
        let runs = Counter()

        let protectedRun: @Sendable (Requirement, String) async throws -> Void = { requirement, user in
            let endedBefore = endedSessions.value
            let action = RequiresAuthentication(requirement) { _ in
            } content: { identity in
                runs.increment()
                let serialText = identity.attributes["serial"] ?? "none"
                guard let number = Int(serialText), number <= serial.load(ordering: .relaxed) else {
                    violations.update { $0.append("unissued identity \(serialText)") }
                    return
                }
                if endedBefore.contains(serialText) {
                    violations.update { $0.append("session \(serialText) ran after it was signed out") }
                }
                if !requirement.isSatisfied(by: identity) {
                    violations.update { $0.append("\(identity.username) ran an admin action") }
                }
            }
            _ = try await action.run(
                through: gatekeeper, conversation: ScriptedConversation(.text(user), .secret("pw")))
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for round in 0..<100 {
                        let user = (worker + round).isMultiple(of: 3) ? "bob" : "alice"
                        try await protectedRun(round.isMultiple(of: 2) ? .signedIn : .member(of: "admin"), user)
                    }
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    for round in 0..<100 {
                        if round.isMultiple(of: 2) {
                            let ended = gatekeeper.identity?.attributes["serial"]
                            await gatekeeper.signOut()
                            if let ended { endedSessions.update { _ = $0.insert(ended) } }
                        } else {
                            _ = try? await gatekeeper.signIn(credentials("bob", "pw"))
                        }
                        await Task.yield()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(violations.value == [])
        #expect(runs.count > 0)
        #expect(gatekeeper.state != .authenticating)
    }
}
