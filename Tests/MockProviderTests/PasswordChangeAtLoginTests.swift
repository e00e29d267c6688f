import Authentication
import AuthenticationTesting
import DebugProvider
import MockProvider
import TestSupport
import Testing

/// An expired password changed during the login that found it, and a change on request, through a
/// gatekeeper: what the person is told and asked, what is counted, and what a cancellation leaves.
@Suite(.timeLimit(.minutes(1)))
struct PasswordChangeAtLoginTests {
    private func gatekeeper(
        _ provider: MockAuthProvider, changes: Bool = true, audit: RecordingAuditSink = RecordingAuditSink()
    ) -> Gatekeeper {
        Gatekeeper(
            provider: provider,
            configuration: .init(
                maxAttempts: 1, lockout: .init(deny: 2), failDelay: .zero, changesExpiredPasswords: changes),
            audit: audit)
    }

    private func provider() -> MockAuthProvider { MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero) }

    /// erin's password has expired: once the stack has admitted her she is told so, asked the current
    /// password and the new one twice (as pam_unix asks at a login), signed in, and from then on only the
    /// new password works; the change is audited.
    @Test func anExpiredPasswordIsChangedAtTheLoginAndAdmits() async throws {
        let provider = provider()
        let audit = RecordingAuditSink()
        let conversation = ScriptedConversation(
            .text("erin"), .secret("erin-2026"), .secret("erin-2026"), .secret("new-erin-pass"),
            .secret("new-erin-pass"))
        let identity = try await gatekeeper(provider, audit: audit).signIn(conversation: conversation)
        #expect(identity.username == "erin")
        #expect(conversation.messages.first == PasswordPrompt.expiredNotice)
        #expect(
            conversation.events.filter { if case .askedSecret = $0 { true } else { false } }
                == [
                    .askedSecret("Password: "), .askedSecret(PasswordPrompt.current), .askedSecret(PasswordPrompt.new),
                    .askedSecret(PasswordPrompt.retype),
                ])
        #expect(audit.events.contains { $0.kind == .passwordChanged && $0.username == "erin" })
        #expect(!identity.mustChangePassword)
        let again = gatekeeper(provider)
        #expect(try await again.signIn(try credentials("erin", "new-erin-pass")).username == "erin")
        await #expect(throws: AuthError.invalidCredentials) {
            try await again.signIn(try credentials("erin", "erin-2026"))
        }
    }

    /// Where no new password can be asked (fixed credentials, or a configuration that says so), the login
    /// fails with its own error, and the right password is not counted as a failed guess.
    @Test func anExpiredPasswordThatCannotBeChangedIsRefusedUncounted() async throws {
        let provider = provider()
        let audit = RecordingAuditSink()
        let gatekeeper = gatekeeper(provider, changes: false, audit: audit)
        for _ in 0..<3 {
            await #expect(throws: AuthError.passwordChangeRequired) {
                try await gatekeeper.signIn(conversation: ScriptedConversation(.text("erin"), .secret("erin-2026")))
            }
        }
        await #expect(throws: AuthError.passwordChangeRequired) {
            try await self.gatekeeper(provider).signIn(try credentials("erin", "erin-2026"))
        }
        // deny=2: three counted failures would have locked her out.
        #expect(try gatekeeper.lockout.status(of: LockoutAccount("erin"), policy: .init(deny: 2)).isLocked == false)
        #expect(!audit.events.contains { $0.kind == .lockedOut })
        #expect(audit.events.contains { $0.kind == .signInFailed && $0.reason == .passwordChangeRequired })
    }

    /// A second factor that fails keeps the stack from admitting anyone, and so from changing the
    /// expired password: nothing is asked beyond the login's own questions, and the old password still
    /// has to be changed.
    @Test func anExpiredPasswordIsNotChangedWhenAnotherFactorFails() async throws {
        let provider = provider()
        for order in [false, true] {
            let factor = ProviderChain.Entry(.required, DebugAuthProvider(result: .authenticationError))
            let entry = ProviderChain.Entry(.required, provider)
            let gatekeeper = Gatekeeper(
                provider: ProviderChain(order ? [factor, entry] : [entry, factor]),
                configuration: .init(maxAttempts: 1, failDelay: .zero))
            let conversation = ScriptedConversation(
                .text("erin"), .secret("erin-2026"), .secret("erin-2026"), .secret("taken-over"), .secret("taken-over"))
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(conversation: conversation)
            }
            #expect(conversation.questionCount == 2, "\(conversation.events)")
        }
        await #expect(throws: AuthError.passwordChangeRequired) {
            try await gatekeeper(provider).signIn(try credentials("erin", "erin-2026"))
        }
    }

    /// An expired password is not "the right password, uncounted" when an entry of a stack — of a stack
    /// nested as an entry too — refused a credential: the attempt counts. (A backend that can only say
    /// new_authtok_reqd, as a helper or an isolated PAM stack does.)
    @Test func aRefusedCredentialInANestedStackIsCounted() async throws {
        // `[success=ok default=bad]`: the expired password fails the inner stack first (`required` would
        // take new_authtok_reqd for ok, and the second factor's auth_err would decide).
        let inner = ProviderChain([
            .init(
                ChainControl(actions: [.success: .ok], default: .bad),
                DebugAuthProvider(result: .newAuthenticationTokenRequired)),
            .init(.required, DebugAuthProvider(result: .authenticationError)),
        ])
        // The password is asked (presented) first, by an entry that then takes no part: pam_debug's entries
        // ask nothing, and a credential never presented counts nothing.
        let asks = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            return .ignored
        }
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([.init(.required, asks), .init(.required, inner)]),
            configuration: .init(maxAttempts: 1, lockout: .init(deny: 1), failDelay: .zero))
        await #expect(throws: AuthError.passwordChangeRequired) {
            try await gatekeeper.signIn(try credentials("erin", "erin-2026"))
        }
        // Counted: the next attempt finds the name locked out.
        await #expect {
            try await gatekeeper.signIn(try credentials("erin", "erin-2026"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    /// A wrong password is a failed guess when another entry of the stack is down and its
    /// `authinfo_unavail` becomes the stack's answer: the entry that refused the credential checked it,
    /// and its trace (`--explain`) tells right from wrong, so the guess counts, in either order.
    @Test func aRefusedCredentialIsCountedWhenAnotherEntryIsDown() async throws {
        for order in [false, true] {
            let down = ProviderChain.Entry(.required, DebugAuthProvider(result: .authinfoUnavailable))
            let entry = ProviderChain.Entry(.required, provider())
            let gatekeeper = Gatekeeper(
                provider: ProviderChain(order ? [entry, down] : [down, entry]),
                configuration: .init(maxAttempts: 1, lockout: .init(deny: 2), failDelay: .zero))
            for _ in 0..<2 {
                let login = await gatekeeper.signInWithTrace(
                    conversation: ScriptedConversation(.text("alice"), .secret("guess")))
                if case .success = login.outcome { Issue.record("a wrong password was admitted") }
                #expect(login.trace?.refusedCredential == true)
            }
            // Counted: the next attempt, the right password included, finds the name locked out.
            await #expect {
                try await gatekeeper.signIn(try credentials("alice", "wonderland"))
            } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        }
    }

    /// A wrong current password at a change is a failed guess when another entry of the stack is down and
    /// its `authinfo_unavail` decides the pass: counted, as at a login.
    @Test func aWrongCurrentPasswordIsCountedWhenAnotherEntryIsDown() async throws {
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([
                .init(.required, DebugAuthProvider(preliminaryChangeResult: .authinfoUnavailable)),
                .init(.required, provider()),
            ]),
            configuration: .init(maxAttempts: 1, lockout: .init(deny: 2), failDelay: .zero))
        try await gatekeeper.signIn(try credentials("alice", "wonderland"))
        for _ in 0..<2 {
            let change = await gatekeeper.changePasswordWithTrace(
                conversation: ScriptedConversation(
                    .secret("not-it"), .secret("looking-glass"), .secret("looking-glass")))
            if case .success = change.outcome { Issue.record("a wrong current password changed the password") }
            #expect(change.trace?.refusedCredential == true)
        }
        #expect(try gatekeeper.lockout.status(of: LockoutAccount("alice"), policy: .init(deny: 2)).isLocked)
    }

    /// Debian's common-auth shape — the password entry jumps over a `requisite pam_deny` on success, so its
    /// success counts nothing — still changes an expired password before it admits, and, where nothing
    /// can be asked, refuses with its own error, uncounted.
    @Test func aJumpOnSuccessStillChangesAnExpiredPassword() async throws {
        func stack(_ provider: MockAuthProvider) -> ProviderChain {
            ProviderChain([
                .init(ChainControl(actions: [.success: .jump(1)], default: .ignore), provider),
                .init(.requisite, DebugAuthProvider(result: .authenticationError)),
                .init(.required, DebugAuthProvider()),
            ])
        }
        let provider = provider()
        let refusing = Gatekeeper(
            provider: stack(provider),
            configuration: .init(
                maxAttempts: 1, lockout: .init(deny: 1), failDelay: .zero, changesExpiredPasswords: false))
        await #expect(throws: AuthError.passwordChangeRequired) {
            try await refusing.signIn(conversation: ScriptedConversation(.text("erin"), .secret("erin-2026")))
        }
        #expect(try refusing.lockout.status(of: LockoutAccount("erin"), policy: .init(deny: 1)).isLocked == false)
        let gatekeeper = Gatekeeper(provider: stack(provider), configuration: .init(maxAttempts: 1, failDelay: .zero))
        let conversation = ScriptedConversation(
            .text("erin"), .secret("erin-2026"), .secret("erin-2026"), .secret("jumped-erin"), .secret("jumped-erin"))
        #expect(try await gatekeeper.signIn(conversation: conversation).username == "erin")
        #expect(conversation.messages.first == PasswordPrompt.expiredNotice)
        #expect(try await self.gatekeeper(provider).signIn(try credentials("erin", "jumped-erin")).username == "erin")
    }

    /// A remembered login is refused when any entry of the stack that keeps passwords has the account
    /// locked or its password to be changed, not only the entry that signed the person in.
    @Test func aRecheckAsksEveryEntryThatKeepsPasswords() async throws {
        let first = MockAuthProvider(
            users: [.init(username: "alice", password: Secret(copying: "a-1".utf8))], delay: .zero, name: "first")
        let second = MockAuthProvider(
            users: [.init(username: "alice", password: Secret(copying: "a-2".utf8), status: .locked)], delay: .zero,
            name: "second")
        let identity = Identity(username: "alice", provider: "first")
        let chain = ProviderChain([.init(.required, first), .init(.required, second)])
        #expect(await chain.recheck(identity) == .refused(.accountLocked(until: nil)))
        // An entry that does not know the account says nothing against it.
        let alone = ProviderChain([
            .init(.required, first), .init(.optional, MockAuthProvider(users: [], delay: .zero, name: "third")),
        ])
        guard case .valid = await alone.recheck(identity) else {
            Issue.record("an entry that does not know alice refused her")
            return
        }
    }

    /// A change through a stack answers with its trace, as a login does: the update pass when the
    /// preliminary check passed, the preliminary check when it refused.
    @Test func aChangeLeavesItsTrace() async throws {
        let gatekeeper = Gatekeeper(
            provider: ProviderChain([
                .init(.optional, DebugAuthProvider(result: .userUnknown, changeResult: .ignore)),
                .init(.required, provider()),
            ]),
            configuration: .init(maxAttempts: 1, failDelay: .zero))
        let login = await gatekeeper.signInWithTrace(
            conversation: ScriptedConversation(.text("bob"), .secret("builder")))
        #expect(login.trace?.identityEntry == "2:mock")
        let changed = await gatekeeper.changePasswordWithTrace(
            conversation: ScriptedConversation(.secret("builder"), .secret("builder-two"), .secret("builder-two")))
        if case .failure(let error) = changed.outcome { Issue.record("the change was refused: \(error)") }
        #expect(
            changed.trace?.description
                == "1. optional debug: ignore -> ignore\n2. required mock: success -> ok\nresult: success")
        let refused = await gatekeeper.changePasswordWithTrace(
            conversation: ScriptedConversation(.secret("guess"), .secret("x-y-z-1"), .secret("x-y-z-1")))
        guard case .failure(let error) = refused.outcome else {
            Issue.record("a wrong current password changed the password")
            return
        }
        #expect(error.code == .passwordNotChanged)
        #expect(refused.trace?.steps.last?.result == .authenticationError)
    }

    /// The answers of a change are checked as a login's are: a password holding a NUL byte (which C would
    /// cut short) never reaches a provider.
    @Test func aChangesAnswersAreValidated() async throws {
        let provider = provider()
        let gatekeeper = gatekeeper(provider)
        try await gatekeeper.signIn(try credentials("alice", "wonderland"))
        await #expect {
            try await gatekeeper.changePassword(
                conversation: ScriptedConversation(
                    .bytes(Array("wonderland".utf8) + [0, 0x78]), .secret("looking-glass"), .secret("looking-glass")))
        } throws: { ($0 as? AuthError)?.code == .invalidPassword && ($0 as? AuthError)?.inputProblem == .nulByte }
        #expect(try await self.gatekeeper(provider).signIn(try credentials("alice", "wonderland")).username == "alice")
    }

    /// A wrong current password is a failed guess: counted under the lockout, so a session left open
    /// cannot be used to guess the password without limit; a locked-out account changes nothing.
    @Test func wrongCurrentPasswordsAreCountedAndLockTheAccountOut() async throws {
        let provider = provider()
        let audit = RecordingAuditSink()
        let gatekeeper = gatekeeper(provider, audit: audit)
        try await gatekeeper.signIn(try credentials("bob", "builder"))
        // Right ones are not counted.
        for (old, new) in [("builder", "builder-two"), ("builder-two", "builder-three")] {
            try await gatekeeper.changePassword(
                conversation: ScriptedConversation(.secret(old), .secret(new), .secret(new)))
        }
        for _ in 0..<2 {
            await #expect {
                try await gatekeeper.changePassword(
                    conversation: ScriptedConversation(.secret("guess"), .secret("x-y-z-1"), .secret("x-y-z-1")))
            } throws: { ($0 as? AuthError)?.code == .passwordNotChanged }
        }
        await #expect {
            try await gatekeeper.changePassword(
                conversation: ScriptedConversation(.secret("builder-three"), .secret("x-y-z-1"), .secret("x-y-z-1")))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        #expect(audit.events.contains { $0.kind == .lockedOut })
        #expect(try await self.gatekeeper(provider).signIn(try credentials("bob", "builder-three")).username == "bob")
    }

    /// carol has not activated her account: her right password is refused with a message of its own and
    /// is not counted; a wrong one is counted, and locks her out.
    @Test func anAccountNotActivatedIsRefusedWithItsOwnMessageUncounted() async throws {
        let audit = RecordingAuditSink()
        let gatekeeper = gatekeeper(provider(), audit: audit)
        for _ in 0..<3 {
            await #expect(throws: AuthError.accountNotActivated) {
                try await gatekeeper.signIn(try credentials("carol", "carol-2026"))
            }
        }
        #expect(try gatekeeper.lockout.status(of: LockoutAccount("carol"), policy: .init(deny: 2)).isLocked == false)
        for _ in 0..<2 {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(try credentials("carol", "nope"))
            }
        }
        await #expect(throws: AuthError.self) { try await gatekeeper.signIn(try credentials("carol", "carol-2026")) }
        #expect(audit.events.contains { $0.kind == .lockedOut })
    }

    /// In a stack, the entry's own refusal reaches the caller: not activated, not "refused by policy".
    @Test func aStackPassesOnTheRefusalOfTheEntryThatDecided() async throws {
        let chain = ProviderChain([.init(.required, provider())])
        let gatekeeper = Gatekeeper(provider: chain, configuration: .init(failDelay: .zero))
        await #expect(throws: AuthError.accountNotActivated) {
            try await gatekeeper.signIn(try credentials("carol", "carol-2026"))
        }
    }

    /// Cancelled at the new password or its repetition, or refused (the two entries differ), the login
    /// ends and the old password is still the one that works.
    @Test(arguments: [
        [ScriptedConversation.Answer.cancel],
        [.secret("new-erin-pass"), .cancel],
        [.secret("new-erin-pass"), .secret("other-erin-pass")],
    ])
    func aCancelledOrRefusedChangeAtLoginKeepsTheOldPassword(_ answers: [ScriptedConversation.Answer]) async throws {
        let provider = provider()
        let conversation = ScriptedConversation(
            answers: [.text("erin"), .secret("erin-2026"), .secret("erin-2026")] + answers)
        await #expect(throws: AuthError.self) { try await gatekeeper(provider).signIn(conversation: conversation) }
        await #expect(throws: AuthError.passwordChangeRequired) {
            try await gatekeeper(provider).signIn(try credentials("erin", "erin-2026"))
        }
        await #expect(throws: AuthError.invalidCredentials) {
            try await gatekeeper(provider).signIn(try credentials("erin", "new-erin-pass"))
        }
    }

    /// The signed-in person changes their password on request; a wrong current password changes nothing;
    /// both are audited, without a password in any record.
    @Test func aSignedInPersonChangesTheirPassword() async throws {
        let provider = provider()
        let audit = RecordingAuditSink()
        let gatekeeper = gatekeeper(provider, audit: audit)
        try await gatekeeper.signIn(try credentials("alice", "wonderland"))
        await #expect {
            try await gatekeeper.changePassword(
                conversation: ScriptedConversation(
                    .secret("not-it"), .secret("looking-glass"), .secret("looking-glass")))
        } throws: { ($0 as? AuthError)?.code == .passwordNotChanged }
        try await gatekeeper.changePassword(
            conversation: ScriptedConversation(
                .secret("wonderland"), .secret("looking-glass"), .secret("looking-glass")))
        #expect(gatekeeper.identity?.username == "alice")
        let kinds = audit.events.map(\.kind).filter { $0 == .passwordChanged || $0 == .passwordChangeFailed }
        #expect(kinds == [.passwordChangeFailed, .passwordChanged])
        #expect(
            audit.events.first { $0.kind == .passwordChangeFailed }?.reason?.reason
                == "the current password is incorrect")
        #expect(!audit.events.map { "\($0)" }.joined().contains("looking-glass"))
        #expect(
            try await self.gatekeeper(provider).signIn(try credentials("alice", "looking-glass")).username == "alice")
    }
}
