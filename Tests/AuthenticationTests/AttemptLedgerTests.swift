import Authentication
import AuthenticationTesting
import Foundation
import GatekeeperSupport
import HostProtection
import TestSupport
import Testing

/// The shapes the third outside review found, each by name: every one counted a guess that was never made,
/// or let one go uncounted or move to another account. The model-based test (`AttemptLedgerModelTests`)
/// finds them all among its random sequences; these keep each one as a case of its own.
@Suite(.timeLimit(.minutes(1)))
struct AttemptLedgerTests {
    let scratch = ScratchDirectory("gatekeeper-ledger-cases")
    var directory: String { scratch.path + "/tally" }

    /// Valid records in `account`'s own pam_faillock file.
    func records(_ account: String) -> Int {
        (try? FaillockStore(directory: directory).failures(of: account).count { $0.valid }) ?? -1
    }

    func gatekeeper(_ provider: any AuthProvider, deny: Int = 3, attempts: Int = 1) throws -> Gatekeeper {
        Gatekeeper(
            provider: provider,
            configuration: .init(maxAttempts: attempts, lockout: LockoutPolicy(deny: deny), failDelay: .zero),
            // Each test a process of its own: the process's table of attempts in flight is keyed by the tally
            // directory's device and inode, which an earlier test's temporary directory may have had.
            lockout: try FaillockStore(directory: directory, inFlight: AttemptsInFlight()))
    }

    /// A users-file-like entry: exact names, its own passwords; `slowWhenWrong` waits after a wrong one, as
    /// pam_unix does, so the clock tells right from wrong. `looksUp: false` is a checkpassword program or a
    /// helper, which cannot name an account before the login.
    static func entry(
        _ accounts: [String: String], folding: Bool = false, looksUp: Bool = true, slowWhenWrong: Duration = .zero,
        answer: (@Sendable () -> AuthOutcome)? = nil
    ) -> StubAuthProvider {
        @Sendable func account(_ name: String) -> String? {
            accounts.keys.first { folding ? $0.lowercased() == name.lowercased() : $0 == name }
        }
        return StubAuthProvider(
            lookup: { name in looksUp ? account(name).map { .known(canonicalName: $0) } ?? .unknown : .cannotTell }
        ) {
            request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            if let answer { return answer() }
            guard let name = account(request.username) else { return .notMine }
            guard password == Secret(copying: accounts[name]!.utf8) else {
                if slowWhenWrong > .zero {
                    do { try await Task.sleep(for: slowWhenWrong) } catch { throw .cancelled }
                }
                return .rejected(.wrongCredentials, canonicalUsername: name)
            }
            return .authenticated(Identity(username: name, provider: "stub"))
        }
    }

    /// Review item 1: Ctrl-C during a password change once the current password was handed over (a backend
    /// slow only when it is wrong) is a counted guess, not a free one; at the prompt itself it is nothing.
    @Test func aPasswordChangeCancelledAfterTheCurrentPasswordIsCounted() async throws {
        let provider = ChangingProvider(password: "right", slowWhenWrong: .seconds(30))
        let gatekeeper = try gatekeeper(provider, deny: 5)
        try await gatekeeper.signIn(credentials("alice", "right"))
        // Cancelled while the backend checks a wrong current password.
        let conversation = ScriptedConversation(.secret("guess"))
        let change = Task { try await gatekeeper.changePassword(conversation: conversation) }
        #expect(await eventually { provider.checking })
        change.cancel()
        await #expect(throws: AuthError.cancelled) { try await change.value }
        #expect(records("alice") == 1, "a cancelled wrong guess at the current password is counted")
        // Cancelled at the prompt: nothing was handed over.
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.changePassword(conversation: ScriptedConversation(.cancel))
        }
        #expect(records("alice") == 1)
    }

    /// Review item 2: a helper that answers `unavailable` (a time-out, a crash) after it had the password
    /// counts the guess; after `deny` of them the right password is refused too.
    @Test func anUnavailableAnswerAfterThePasswordIsCounted() async throws {
        let gatekeeper = try gatekeeper(
            Self.entry(["alice": "right"], answer: { .unavailable(reason: "no answer within its time limit") }))
        for _ in 0..<3 {
            await #expect(throws: AuthError.self) { try await gatekeeper.signIn(credentials("alice", "wrong")) }
        }
        #expect(records("alice") == 3)
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "right"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    /// Review item 3: `sufficient file` holding `Alice`, then a case-insensitive directory holding `alice`. A
    /// wrong password typed for `Alice` is refused by both: it counts against both accounts, and is never
    /// moved from `Alice` to `alice` — `Alice` locks after `deny` guesses.
    @Test func aRefusalCountsAgainstEveryRefusingEntryAndNeverMoves() async throws {
        let stack = ProviderChain([
            .init(.sufficient, Self.entry(["Alice": "file-password"])),
            .init(.required, Self.entry(["alice": "directory-password"], folding: true)),
        ])
        let gatekeeper = try gatekeeper(stack, deny: 3)
        for _ in 0..<3 {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials("Alice", "guess"))
            }
        }
        #expect(records("Alice") == 3)
        #expect(records("alice") == 3)
        await #expect {
            try await gatekeeper.signIn(credentials("Alice", "file-password"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    /// Review item 4: one wrong password, then Ctrl-C at the re-asked `Password:` — one record, not two.
    @Test func aReAskedPromptCountsNothingUntilItIsAnswered() async throws {
        let gatekeeper = try gatekeeper(Self.entry(["alice": "right"]), attempts: 2)
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.signIn(
                conversation: ScriptedConversation(.text("alice"), .secret("wrong"), .text("alice"), .cancel))
        }
        #expect(records("alice") == 1)
    }

    /// Review item 4, the expired case: the right (expired) password, a new one refused, then Ctrl-C at the
    /// re-asked `Password:` — no wrong password was typed, and nothing is counted.
    @Test func anExpiredPasswordRefusedNewOneAndCancelCountNothing() async throws {
        let provider = ChangingProvider(password: "right", expired: true)
        let gatekeeper = try gatekeeper(provider, attempts: 2)
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.signIn(
                conversation: ScriptedConversation(
                    .text("alice"), .secret("right"), .secret("new-one"), .secret("new-one"), .text("alice"), .cancel))
        }
        #expect(records("alice") == 0)
    }
}

/// What an outside attack on the ledger found after it was written, each by name.
@Suite(.timeLimit(.minutes(1)))
struct AttemptLedgerAttackTests {
    let scratch = ScratchDirectory("gatekeeper-ledger-attacks")
    var directory: String { scratch.path + "/tally" }

    func gatekeeper(_ provider: any AuthProvider, deny: Int = 3, inMemory: Bool = false) throws -> Gatekeeper {
        Gatekeeper(
            provider: provider,
            configuration: .init(maxAttempts: 1, lockout: LockoutPolicy(deny: deny), failDelay: .zero),
            lockout: inMemory
                ? MemoryLockoutStore() : try FaillockStore(directory: directory, inFlight: AttemptsInFlight()))
    }

    func records(_ account: String) -> Int {
        (try? FaillockStore(directory: directory).failures(of: account).count { $0.valid }) ?? -1
    }

    /// A users file's `Alice`, then a helper that matches `alice` case-insensitively and cannot look names up.
    static func fileAndHelper() -> ProviderChain {
        ProviderChain([
            .init(.required, AttemptLedgerTests.entry(["Alice": "file-password"])),
            .init(.required, AttemptLedgerTests.entry(["alice": "secret"], folding: true, looksUp: false)),
        ])
    }

    /// A right password, for a name no look-up can recognise (a checkpassword program, any provider that keeps
    /// the default look-up), is no failure: five in a row with deny=3 all get in — in memory and in files,
    /// names that cannot name a file included.
    @Test func theRightPasswordForANameNoLookUpKnowsIsNeverCounted() async throws {
        for inMemory in [true, false] {
            for name in ["alice", "ops/alice", ".bob"] {
                let gatekeeper = try gatekeeper(
                    AttemptLedgerTests.entry([name: "right"], looksUp: false), inMemory: inMemory)
                for round in 1...5 {
                    let admitted = try? await gatekeeper.signIn(credentials(name, "right"))
                    #expect(admitted != nil, "\(name), in memory: \(inMemory), login \(round)")
                }
            }
        }
    }

    /// A backend that matches names loosely but cannot say so beforehand: once alice is locked, `ALICE` with
    /// the right password is refused too — one count per account, not per spelling, and a file a success gave
    /// the account never starts a second one.
    @Test func aLooseBackendLocksEverySpellingOfTheAccount() async throws {
        let gatekeeper = try gatekeeper(AttemptLedgerTests.entry(["alice": "secret"], folding: true, looksUp: false))
        try await gatekeeper.signIn(credentials("alice", "secret"))
        for _ in 0..<3 { _ = try? await gatekeeper.signIn(credentials("alice", "wrong")) }
        for spelling in ["ALICE", "Alice", "alice"] {
            await #expect {
                try await gatekeeper.signIn(credentials(spelling, "secret"))
            } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        }
    }

    /// A users file's `Alice` and a helper's case-insensitive `alice`: with alice locked, a login typed as
    /// `Alice` answers "locked" whether the helper found the password right or wrong — no oracle through
    /// another entry's spelling.
    @Test func aLockedAccountAnswersAlikeThroughAnotherEntry() async throws {
        let gatekeeper = try gatekeeper(Self.fileAndHelper())
        for _ in 0..<3 { _ = try? await gatekeeper.signIn(credentials("ALICE", "wrong")) }
        #expect(records("alice") == 3)
        var answers: [AuthError.Code] = []
        for password in ["wrong", "secret", "another"] {
            do {
                try await gatekeeper.signIn(credentials("Alice", password))
                Issue.record("admitted while alice is locked")
            } catch {
                answers.append((error as? AuthError)?.code ?? .providerUnavailable)
            }
        }
        #expect(answers == [.tooManyAttempts, .tooManyAttempts, .tooManyAttempts], "\(answers)")
    }

    /// A name no look-up recognised keeps its lock after another entry's refusal gives the account a file.
    @Test func aBucketLockOutlivesAFileMadeForTheAccount() async throws {
        let gatekeeper = try gatekeeper(Self.fileAndHelper())
        for _ in 0..<3 { _ = try? await gatekeeper.signIn(credentials("alice", "wrong")) }
        _ = try? await gatekeeper.signIn(credentials("Alice", "wrong"))
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "wrong-again"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    /// A stack nested as an entry counts its entry's refusal once, as the same stack unnested does.
    @Test func aNestedStackCountsARefusalOnce() async throws {
        let stack = ProviderChain([
            .init(.required, AttemptLedgerTests.entry(["Alice": "file-password"])),
            .init(
                .required,
                ProviderChain([.init(.required, AttemptLedgerTests.entry(["alice": "secret"], folding: true))])),
        ])
        let gatekeeper = try gatekeeper(stack, deny: 5)
        _ = try? await gatekeeper.signIn(credentials("Alice", "wrong"))
        #expect(records("alice") == 1)
        #expect(records("Alice") == 1)
    }
}

/// One account with a password that can be expired; a change checks the current password (waiting when it
/// is wrong), then refuses every new one as too simple.
private final class ChangingProvider: AuthProvider {
    let name = "changing"
    let password: String
    let slowWhenWrong: Duration
    let expired: Bool
    private let state = Locked(false)

    init(password: String, slowWhenWrong: Duration = .zero, expired: Bool = false) {
        self.password = password
        self.slowWhenWrong = slowWhenWrong
        self.expired = expired
    }

    /// Whether a change is checking a current password now.
    var checking: Bool { state.withLock { $0 } }

    var changesPasswords: Bool { true }

    func lookUpAccount(_ username: String) async -> AccountLookup {
        username == "alice" ? .known(canonicalName: "alice") : .unknown
    }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let given = try await request.conversation.askSecret("Password: ")
        guard request.username == "alice" else { return .notMine }
        guard given == Secret(copying: password.utf8) else { return .rejected(.wrongCredentials) }
        var identity = Identity(username: "alice", provider: name)
        identity.mustChangePassword = expired
        return .authenticated(identity)
    }

    func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        if request.pass == .preliminaryCheck {
            if request.expiredOnly { return .changed }
            let current = try await request.conversation.askSecret(PasswordPrompt.current)
            guard current == Secret(copying: password.utf8) else {
                state.withLock { $0 = true }
                defer { state.withLock { $0 = false } }
                do { try await Task.sleep(for: slowWhenWrong) } catch { throw .cancelled }
                return .rejected(.wrongCurrentPassword)
            }
            return .changed
        }
        _ = try await PasswordPrompt.askNewPassword(request.conversation)
        return .rejected(.unacceptable("it is too simple"))
    }
}
