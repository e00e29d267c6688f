import Authentication
import AuthenticationTesting
import MockProvider
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(1)))
struct MockAuthProviderTests {
    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.conformance.run(check) == [])
    }

    /// The whole suite, with a short delay (20 ms) so the checks' waits are real but quick.
    @Test func conformsWithAShortDelay() async {
        let suite = ProviderConformance(fixture: .init(username: "bob", password: "builder")) {
            MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .milliseconds(20))
        }
        #expect(await suite.runAll() == [])
    }

    @Test(arguments: [
        ("carol", "carol-2026", AuthOutcome.rejected(.activationRequired)),
        ("carol", "wrong", .rejected(.wrongCredentials)),
        ("dave", "dave-2026", .rejected(.locked(until: nil))),
        ("dave", "wrong", .rejected(.wrongCredentials)),
        ("nobody", "wonderland", .notMine),
    ])
    func reportsAccountStanding(_ username: String, _ password: String, _ expected: AuthOutcome) async throws {
        let provider = MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)
        let outcome = try await provider.authenticate(
            AuthRequest(username: username, conversation: ScriptedConversation(.secret(password)))
        )
        #expect(outcome == expected)
    }

    @Test func reportsExpiredAccountsAndPasswords() async throws {
        let users = [
            MockAuthProvider.User(username: "old", password: Secret(copying: "pw".utf8), status: .expired),
            MockAuthProvider.User(
                username: "stale", password: Secret(copying: "pw".utf8), status: .passwordChangeRequired),
        ]
        let provider = MockAuthProvider(users: users, delay: .zero)
        for (name, expected) in [("old", Rejection.expiredAccount), ("stale", .passwordChangeRequired)] {
            let outcome = try await provider.authenticate(
                AuthRequest(username: name, conversation: ScriptedConversation(.secret("pw")))
            )
            #expect(outcome == .rejected(expected))
        }
    }

    @Test func injectsFailures() async throws {
        let provider = MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)
        provider.inject(.unavailable(reason: "maintenance"))
        provider.inject(.reject(.expiredAccount))
        let request = { AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))) }
        #expect(try await provider.authenticate(request()) == .unavailable(reason: "maintenance"))
        #expect(try await provider.authenticate(request()) == .rejected(.expiredAccount))
        try expectAuthenticated(try await provider.authenticate(request()), "an injected failure outlived its count")
        #expect(provider.authenticationCount == 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func aHangingBackendEndsWhenTheTaskIsCancelled() async throws {
        let provider = MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)
        provider.inject(.hang)
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let login = Task { try await gatekeeper.signIn(credentials("alice", "wonderland")) }
        #expect(await eventually { provider.authenticationCount > 0 })
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(gatekeeper.state == .signedOut)
    }

    /// The delay is an hour: returning at all proves cancellation did not wait for it. (How fast it
    /// returns from the usual one-second delay is measured by `make bench`, not asserted here.)
    @Test(.timeLimit(.minutes(1)))
    func cancellingDuringTheDelayDismissesAtOnce() async throws {
        let provider = MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .seconds(3600))
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let ran = Locked(false)
        let dismissals = Locked(0)
        let action = RequiresAuthentication(.signedIn) { _ in
            dismissals.update { $0 += 1 }
        } content: { _ in
            ran.update { $0 = true }
        }
        let pending = Task {
            try await action.run(
                through: gatekeeper,
                conversation: ScriptedConversation(.text("alice"), .secret("wonderland"))
            )
        }
        #expect(await eventually { provider.authenticationCount > 0 })
        #expect(gatekeeper.state == .authenticating)
        pending.cancel()
        guard case .dismissed(.cancelled) = try await pending.value else {
            Issue.record("expected a dismissal")
            return
        }
        #expect(gatekeeper.state == .signedOut)
        #expect(!ran.value)
        #expect(dismissals.value == 1)
    }

    @Test func describesAUserWithoutThePassword() {
        let user = MockAuthProvider.demoUsers[0]
        var text = ""
        dump(user, to: &text)
        #expect(!text.contains("wonderland"))
    }
}
