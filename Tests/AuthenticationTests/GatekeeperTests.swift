import Authentication
import AuthenticationTesting
import GatekeeperSupport
import Synchronization
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(1)))
struct GatekeeperTests {
    @Test func signsInWithCredentialsAndOut() async throws {
        let provider = accountsProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let identity = try await gatekeeper.signIn(credentials("alice", "wonderland"))
        #expect(identity.username == "alice")
        #expect(gatekeeper.identity == identity)
        guard case .signedIn(let current, let expires) = gatekeeper.state else {
            Issue.record("expected signed in, got \(gatekeeper.state)")
            return
        }
        #expect(current == identity)
        #expect(expires != nil)
        await gatekeeper.signOut()
        #expect(gatekeeper.state == .signedOut)
        #expect(provider.signOutCount == 1)
    }

    @Test func wrongPasswordLeavesTheStateSignedOut() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        await #expect(throws: AuthError.invalidCredentials) {
            try await gatekeeper.signIn(credentials("alice", "WONDERLAND"))
        }
        #expect(gatekeeper.state == .signedOut)
    }

    @Test func unknownUsersLookLikeWrongPasswordsUnlessRevealed() async throws {
        let hidden = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        await #expect(throws: AuthError.invalidCredentials) { try await hidden.signIn(credentials("zed", "x")) }
        let revealing = Gatekeeper(
            provider: accountsProvider(),
            configuration: .init(failDelay: .zero, revealsUnknownUsers: true)
        )
        await #expect(throws: AuthError.userNotFound) { try await revealing.signIn(credentials("zed", "x")) }
    }

    @Test func providerFailuresAreTyped() async throws {
        let provider = StubAuthProvider { _ throws(AuthError) in .unavailable(reason: "directory offline") }
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        // Errors are equal by code: the reason is checked on its own.
        let error = await #expect(throws: AuthError.self) {
            try await gatekeeper.signIn(credentials("alice", "wonderland"))
        }
        #expect(error?.code == .providerUnavailable)
        #expect(error?.reason == "directory offline")
        #expect(gatekeeper.state == .signedOut)
    }

    /// Bad input is refused before any provider work, and the state stays as it was.
    @Test(arguments: CredentialsTests.badUsernames.filter { !$0.0.isEmpty })
    func badUsernamesNeverReachTheProvider(_ name: String, _ expected: AuthError) async throws {
        let provider = accountsProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(maxAttempts: 1, failDelay: .zero))
        try await gatekeeper.signIn(credentials("bob", "builder"))
        let before = gatekeeper.state
        let conversation = ScriptedConversation(.text(name), .secret("pw"))
        await #expect(throws: expected) { try await gatekeeper.signIn(conversation: conversation) }
        #expect(provider.authenticationCount == 1)
        #expect(gatekeeper.state == before)
    }

    @Test(arguments: CredentialsTests.badPasswords)
    func badPasswordsNeverReachTheProvider(_ password: CredentialsTests.BadPassword) async throws {
        let received = Atomic<Int>(0)
        let provider = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            received.add(1, ordering: .relaxed)
            return .rejected(.wrongCredentials)
        }
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(maxAttempts: 1, failDelay: .zero))
        await #expect(throws: password.expected) {
            try await gatekeeper.signIn(conversation: ScriptedConversation(.text("alice"), .bytes(password.bytes)))
        }
        #expect(received.load(ordering: .relaxed) == 0)
        #expect(gatekeeper.state == .signedOut)
    }

    @Test func anInteractiveLoginExplainsAndRetriesUpToTheLimit() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(
            .text("alice"), .secret("one"),
            .text("alice"), .secret(""),
            .text("alice"), .secret("three"),
            .text("alice"), .secret("wonderland")
        )
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(conversation: conversation) }
        #expect(
            conversation.messages == [
                AuthError.invalidCredentials.description, AuthError.missingPassword.description,
            ])
        #expect(conversation.questionCount == 6)
        #expect(gatekeeper.state == .signedOut)
    }

    @Test func anEmptyUsernameCancels() async throws {
        let provider = accountsProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.signIn(conversation: ScriptedConversation(.text("")))
        }
        #expect(provider.authenticationCount == 0)
    }

    @Test func locksOutAUserNameAfterRepeatedFailures() async throws {
        let clock = ManualClock()
        let provider = accountsProvider()
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: provider,
            configuration: .init(lockout: .init(deny: 3, unlockAfter: .seconds(60)), failDelay: .zero),
            audit: audit,
            now: clock.now
        )
        for _ in 0..<3 {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials("bob", "no"))
            }
        }
        let refusal = await #expect(throws: AuthError.self) {
            try await gatekeeper.signIn(credentials("bob", "builder"))
        }
        #expect(refusal?.code == .tooManyAttempts)
        #expect(refusal?.retryAfter == .seconds(60))
        #expect(provider.authenticationCount == 3)
        #expect(audit.events.contains { $0.kind == .lockedOut && $0.username == "bob" })
        // Other names are not affected, and the lockout ends.
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        clock.advance(by: .seconds(61))
        try await gatekeeper.signIn(credentials("bob", "builder"))
        #expect(gatekeeper.identity?.username == "bob")
    }

    @Test func broadcastsStatesToEveryObserver() async throws {
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        let first = await StateRecorder(gatekeeper)
        let second = await StateRecorder(gatekeeper)
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        await gatekeeper.signOut()
        let expected = ["signedOut", "authenticating", "signedIn(alice)", "signedOut"]
        #expect(await first.waitFor(4) == expected)
        #expect(await second.waitFor(4) == expected)
    }

    @Test func auditsWithoutSecrets() async throws {
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero), audit: audit)
        _ = try? await gatekeeper.signIn(credentials("alice", "hunter2-wrong"))
        // A password typed into the name field: the name matches no account, so only its digest is kept.
        _ = try? await gatekeeper.signIn(credentials("wonderland", "alice"))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        await gatekeeper.signOut()
        #expect(
            audit.events.map(\.kind) == [
                .attempt, .signInFailed, .attempt, .signInFailed, .attempt, .signedIn, .signedOut,
            ])
        #expect(audit.events[1].reason == .invalidCredentials && audit.events[1].username == "alice")
        #expect(audit.events[3].username == nil && audit.events[3].userDigest != nil)
        #expect(audit.events[2].userDigest == audit.events[3].userDigest)
        #expect(audit.events[0].userDigest == audit.events[4].userDigest)
        for event in audit.events {
            #expect(!event.description.contains("hunter2"))
            #expect(!event.description.contains("wonderland"))
            // A confirmed name is written; one not yet confirmed is only a keyed digest.
            #expect(
                event.description.contains("user=\"alice\"") || event.description.contains("user-digest=hmac-sha256:"))
        }
    }

    @Test func signingInAgainReplacesTheSession() async throws {
        let provider = accountsProvider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        try await gatekeeper.signIn(credentials("bob", "builder"))
        #expect(gatekeeper.identity?.username == "bob")
        // The replaced session is signed out once, after the new login reaches its callers (the provider is
        // told on a best-effort basis, as for every sign-out): waited for, as ProtectedActionTests wait for it.
        #expect(await eventually { provider.signOutCount == 1 })
        #expect(provider.signOutCount == 1)
    }
}

/// The lockout is the store's: a gatekeeper asks it before each login and tells it every outcome.
@Suite(.timeLimit(.minutes(1)))
struct LockoutStoreTests {
    /// Remembers what it was told; `locked` names the accounts it says are locked out.
    final class RecordingStore: LockoutStore {
        let locked: Set<String>
        let events = Locked<[String]>([])

        init(locked: Set<String>) { self.locked = locked }

        func status(of account: LockoutAccount, policy: LockoutPolicy) -> LockoutStatus {
            locked.contains(account.key) ? .locked(failures: policy.deny, remaining: .seconds(42)) : .open(failures: 0)
        }

        func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) -> LockoutAttempt {
            let status = status(of: account, policy: policy)
            if status.isLocked { return .refused(status) }
            events.withLock { $0.append("attempt \(account.key) \(account.known) \(policy.deny)") }
            return .counted(LockoutTicket(account: account, time: 0, tag: 1), status: .open(failures: 1))
        }

        func withdraw(_ ticket: LockoutTicket) {
            events.withLock { $0.append("withdraw \(ticket.account.key)") }
        }

        func settled(_ ticket: LockoutTicket) {}

        func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) -> LockoutStatus {
            events.withLock { $0.append("failure \(account.key) \(account.known) \(policy.deny)") }
            return .open(failures: 1)
        }

        func recordSuccess(of account: String) {
            events.withLock { $0.append("success \(account)") }
        }

        func unlock(_ account: String) {
            events.withLock { $0.append("unlock \(account)") }
        }
    }

    @Test func aGatekeeperUsesTheStoreItIsGiven() async throws {
        let store = RecordingStore(locked: ["bob"])
        let provider = accountsProvider()
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: .init(deny: 4), failDelay: .zero), lockout: store)
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("alice", "no")) }
        _ = try await gatekeeper.signIn(credentials("alice", "wonderland"))
        await #expect {
            try await gatekeeper.signIn(credentials("bob", "builder"))
        } throws: { error in
            (error as? AuthError)?.retryAfter == .seconds(42)
        }
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("nobody", "no")) }
        #expect(
            store.events.withLock { $0 } == [
                "attempt alice true 4", "attempt alice true 4", "success alice", "attempt nobody false 4",
            ])
    }
}

/// Every error of the package is a ``CodedError``: equal, and hashed alike, by code alone.
struct CodedErrorTests {
    @Test func errorsAreEqualByCodeAndTheirDetailsStayApart() {
        let first = AuthError.providerUnavailable(reason: "one"), second = AuthError.providerUnavailable(reason: "two")
        #expect(first == second && first.hashValue == second.hashValue)
        #expect(first.reason != second.reason)
        #expect(first != AuthError.cancelled)
        #expect(Set([first, second, .cancelled]).count == 2)
        #expect("\(AuthError.Code.cancelled)" == "cancelled")
    }
}
