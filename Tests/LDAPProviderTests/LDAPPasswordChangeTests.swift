import Authentication
import AuthenticationTesting
import Foundation
import LDAPProvider
import TestSupport
import Testing

/// Password changes through RFC 3062's Password Modify against a real slapd with its ppolicy overlay:
/// `ldapwhoami` decides which password binds, and the server's policy which passwords it takes.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LDAPPasswordChangeTests {
    private func binds(_ user: String, _ password: String) throws -> Bool {
        let slapd = try SlapdFixture.shared.get()
        return try shell("ldapwhoami -x -H \(slapd.uri) -D '\(slapd.dn(user))' -w '\(password)' >/dev/null 2>&1")
            .status == 0
    }

    private func change(_ user: String, _ answers: ScriptedConversation.Answer...) async throws
        -> PasswordChangeOutcome
    {
        try await LDAPProviderTests.provider().changePassword(
            of: user, conversation: ScriptedConversation(answers: answers))
    }

    /// The change binds with the new password and not the old; the strict policy then refuses the old
    /// one back (its history), a short one and one it cannot check the quality of, in ppolicy's words, and a wrong current password is
    /// refused as such; none of them changes anything.
    @Test func aChangeTakesAndThePolicyRefusesInItsOwnWords() async throws {
        let first = "Gwen-Fresh-Pass-1"
        #expect(try await change("gwen", .secret("gwen-2026"), .secret(first), .secret(first)) == .changed)
        #expect(try binds("gwen", first) && !binds("gwen", "gwen-2026"))
        #expect(
            try await change("gwen", .secret(first), .secret("gwen-2026"), .secret("gwen-2026"))
                == .rejected(.unacceptable("New password is in list of old passwords")))
        #expect(
            try await change("gwen", .secret(first), .secret("Short-1"), .secret("Short-1"))
                == .rejected(.unacceptable("Password is too short for policy")))
        // A password the server cannot check (it looks hashed), under pwdCheckQuality 2.
        let hashed = "{SSHA}R3dlbi1Gb3JnZWQtSGFzaA=="
        #expect(
            try await change("gwen", .secret(first), .secret(hashed), .secret(hashed))
                == .rejected(.unacceptable("Password fails quality checks")))
        #expect(
            try await change("gwen", .secret("not-it"), .secret("Gwen-Other-Pass-2"), .secret("Gwen-Other-Pass-2"))
                == .rejected(.wrongCurrentPassword))
        #expect(try binds("gwen", first))
    }

    /// A password changed less than the policy's minimum age ago may not be changed again yet.
    @Test func aPasswordTooYoungIsRefused() async throws {
        let outcome = try await change(
            "ike", .secret("ike-2026"), .secret("Ike-Fresh-Pass-1"), .secret("Ike-Fresh-Pass-1"))
        #expect(outcome == .rejected(.unacceptable("Password has been changed too recently")))
        #expect(try binds("ike", "ike-2026"))
    }

    /// A password reset by an administrator (pwdReset) is admitted marked to be changed, and changed by
    /// the gatekeeper once the login is admitted: the notice, the current password and the new one twice,
    /// and the login goes on with it; ldapwhoami agrees.
    @Test func aResetPasswordIsChangedAtTheLogin() async throws {
        let provider = try LDAPProviderTests.provider()
        let new = "Hal-Fresh-Pass-1"
        let marked = try await provider.authenticate(
            AuthRequest(
                username: "hal", conversation: ScriptedConversation(.secret("hal-2026")), mayChangeExpiredPassword: true
            ))
        let found = try expectAuthenticated(marked, "hal was not admitted marked: \(marked)")
        try #require(found.mustChangePassword, "hal was not admitted marked: \(marked)")
        #expect(try binds("hal", "hal-2026"))  // Nothing changed yet.
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(
            .text("hal"), .secret("hal-2026"), .secret("hal-2026"), .secret(new), .secret(new))
        let identity = try await gatekeeper.signIn(conversation: conversation)
        #expect(identity.username == "hal" && !identity.mustChangePassword)
        #expect(conversation.messages.contains(PasswordPrompt.expiredNotice))
        #expect(try binds("hal", new))
        #expect(try await LDAPProviderTests().login(provider, "hal", new).pamResult == .success)
    }

    /// An expired password with grace logins left is changed at the login too; with its last grace login
    /// used by the login itself, there is no bind left for a change: the login admits and says so.
    @Test func anExpiredPasswordWithGraceLoginsIsChangedAtTheLogin() async throws {
        let provider = try LDAPProviderTests.provider()
        let new = "Jill-Fresh-Pass-1"
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        let conversation = ScriptedConversation(
            .text("jill"), .secret("jill-2026"), .secret("jill-2026"), .secret(new), .secret(new))
        let identity = try await gatekeeper.signIn(conversation: conversation)
        #expect(identity.username == "jill", "\(conversation.events)")
        #expect(try binds("jill", new))
        let last = ScriptedConversation(.secret("lou-2026"))
        let outcome = try await provider.authenticate(
            AuthRequest(username: "lou", conversation: last, mayChangeExpiredPassword: true))
        let lou = try expectAuthenticated(outcome, "lou's last grace login was refused: \(outcome)")
        #expect(!lou.mustChangePassword)
        #expect(last.messages.contains { $0.contains("last grace login") })
    }

    /// Cancelled at the repeated new password, or with the two entries different, the change sends
    /// nothing to the server: the old password still binds.
    @Test func aCancelledOrMismatchedChangeSendsNothing() async throws {
        await #expect(throws: AuthError.cancelled) {
            try await self.change("kim", .secret("kim-2026"), .secret("Kim-Fresh-Pass-1"), .cancel)
        }
        #expect(
            try await change("kim", .secret("kim-2026"), .secret("Kim-Fresh-Pass-1"), .secret("Kim-Fresh-Pass-2"))
                == .rejected(.unacceptable("the two entries differ")))
        #expect(try binds("kim", "kim-2026") && !binds("kim", "Kim-Fresh-Pass-1"))
        // At the login: cancelled at the new password, the login ends and the reset password is unchanged.
        let provider = try LDAPProviderTests.provider()
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.signIn(
                conversation: ScriptedConversation(.text("fay"), .secret("fay-2026"), .secret("fay-2026"), .cancel))
        }
        #expect(
            try await LDAPProviderTests().login(provider, "fay", "fay-2026")
                == .rejected(.passwordChangeRequired, canonicalUsername: "fay"))
    }
}
