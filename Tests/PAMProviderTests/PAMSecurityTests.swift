import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import MockProvider
import PasswordHashing
import TestSupport
import Testing

@testable import PAMProvider

#if canImport(Glibc)
    import Glibc
#endif

/// Regressions from an adversarial review of the PAM backend and of gatekeeper-run over it.
@Suite(.timeLimit(.minutes(1)))
struct PAMSecurityTests {
    private let gatekeeperRun = builtExecutable("gatekeeper-run")

    @Test(.timeLimit(.minutes(1)))
    func pamItemsNameTheTerminalAndTheInvokingUser() throws {
        let fixture = try PAMFixture.shared.get()
        // pam_access refuses logins whose terminal is the alias.
        try "-:ALL:tty\n+:ALL:ALL\n".write(
            toFile: fixture.directory + "/access.conf", atomically: true, encoding: .utf8)
        let session = try TerminalSession(
            gatekeeperRun,
            [
                // root: pam_access looks the user up in the system's account database.
                "--provider", "pam", "--service", "gk-items", "--pam-dir", fixture.directory, "--user", "root",
                "--password-stdin", "--", "true",
            ]
        )
        session.type("rootpw\r")
        #expect(session.finish() == 0, "\(session.output)")
        let invoking = String(cString: getpwuid(getuid()).pointee.pw_name)
        #expect(fixture.log("items.log").contains("tty=\(session.terminalName) ruser=\(invoking)\n"))
    }

    /// `--user` answers only the user-name question: a module's visible prompt ("Code: ") is asked of
    /// the person, who answers it.
    @Test(.timeLimit(.minutes(1)))
    func userAnswersOnlyTheUserNameQuestion() throws {
        let fixture = try PAMFixture.shared.get()
        let session = try TerminalSession(
            gatekeeperRun,
            [
                "--provider", "pam", "--service", "gk-fixture", "--pam-dir", fixture.directory, "--user", "alice",
                "--", "true",
            ]
        )
        try session.waitFor("Code: ")
        session.type("123456\r")
        try session.waitFor("PIN: ")
        session.type("0000\r")
        #expect(session.finish() == 0, "\(session.output)")
    }

    /// With `--password-stdin` and no terminal, a visible prompt cannot be answered: the login ends
    /// cleanly, naming the question, and the user name is never sent as its answer.
    @Test func passwordStdinCannotAnswerAVisiblePrompt() throws {
        let fixture = try PAMFixture.shared.get()
        let result = try run(
            gatekeeperRun,
            [
                "--provider", "pam", "--service", "gk-fixture", "--pam-dir", fixture.directory, "--user", "123456",
                "--password-stdin", "--", "true",
            ],
            input: "0000\n"
        )
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("the login asks \"Code\", which --password-stdin cannot answer"))
    }

    /// A login cancelled after pam_authenticate (here, during the account check) opens no session and
    /// establishes no credentials, and its transaction ends (pam_end runs).
    @Test(.timeLimit(.minutes(1)))
    func aLoginCancelledAfterAuthenticationOpensNoSession() async throws {
        let fixture = try PAMFixture.shared.get()
        let provider = try PAMAuthProvider(
            .init(service: "gk-cancel", configurationDirectory: fixture.directory, opensSession: true))
        let login = Locked<Task<AuthOutcome, any Error>?>(nil)
        let conversation = NoticeConversation(password: "secret") {
            // The account check is under way: cancel the login now.
            let deadline = ContinuousClock.now + .seconds(20)
            while login.value == nil && ContinuousClock.now < deadline { usleep(1000) }
            login.value?.cancel()
        }
        let task = Task {
            try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation))
        }
        login.update { $0 = task }
        await #expect(throws: AuthError.cancelled) { try await task.value }
        #expect(await eventually { fixture.log("cancel.log").contains("end\n") }, "\(fixture.log("cancel.log"))")
        #expect(fixture.log("cancel.log") == "end\n")
    }

    /// Every spelling of one account shares its lockout when the backend reports the account's own
    /// spelling (here a module lower-cases PAM_USER): three wrong passwords as Alice, ALICE and alIce lock
    /// alice out, and the right one under a fourth spelling is refused.
    @Test func spellingsOfOneAccountShareALockout() async throws {
        let fixture = try PAMFixture.shared.get()
        let provider = try PAMAuthProvider(.init(service: "gk-casefold", configurationDirectory: fixture.directory))
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(lockout: .init(deny: 3), failDelay: .zero))
        #expect(try await gatekeeper.signIn(credentials("ALICE", "secret")).username == "alice")
        for spelling in ["Alice", "ALICE", "alIce"] {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials(spelling, "wrong"))
            }
        }
        await #expect {
            try await gatekeeper.signIn(credentials("aLiCe", "secret"))
        } throws: { error in
            (error as? AuthError)?.code == .tooManyAttempts
        }
        #expect(gatekeeper.identity?.username == "alice")  // Still the first session, not a new one.
    }

    /// Group and user records larger than the first buffer are read whole (getgrgid_r's ERANGE is
    /// retried), not reported as numbers.
    @Test func largeAccountRecordsAreRetriedNotTruncated() {
        #expect(SystemAccount.groups(of: "root", primary: 0, bufferBytes: 8) == ["root"])
        let identity = SystemAccount.identity(of: "root", provider: "pam", bufferBytes: 8)
        #expect(identity.attributes["home"] == "/root")
        #expect(identity.isMember(of: "root"))
    }
}

/// Answers the password; calls `onNotice` when the fixture's account check shows its message.
private struct NoticeConversation: Conversation {
    let password: String
    let onNotice: @Sendable () -> Void

    func ask(_ prompt: String) async throws(AuthError) -> String { throw .cancelled }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret { Secret(copying: password.utf8) }

    func show(_ message: String, as kind: MessageKind) async {
        if message == "Checking the account." { onNotice() }
    }
}

/// A stack of the users file over PAM over the mock: each user is answered by the entry that knows them.
@Suite(.timeLimit(.minutes(1)))
struct FileOverPAMOverMockTests {
    @Test func eachUserIsAnsweredByTheRightEntry() async throws {
        let fixture = try PAMFixture.shared.get()
        let directory = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-stack-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let users = directory + "/users"
        let erin = try PasswordHash.make(Secret(copying: "erin-pw".utf8), scheme: .sha512)
        try "erin:\(erin.text)\n".write(toFile: users, atomically: true, encoding: .utf8)
        chmod(users, 0o600)
        let passOn = ChainControl(
            actions: [.success: .done, .userUnknown: .ignore, .authinfoUnavailable: .ignore], default: .die)
        let stack = ProviderChain([
            .init(passOn, try FileAuthProvider(.init(path: users))),
            .init(passOn, try fixture.provider("gk-known")),
            .init(
                .required,
                MockAuthProvider(
                    users: [.init(username: "mia", password: Secret(copying: "mia-pw".utf8))], delay: .zero)),
        ])
        for (user, password, entry) in [
            ("erin", "erin-pw", "file"), ("alice", "secret", "pam"), ("mia", "mia-pw", "mock"),
        ] {
            let answer = try await stack.authenticateWithTrace(
                AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
            guard case .authenticated(let identity) = answer.outcome else {
                Issue.record("\(user): \(answer.outcome)\n\(answer.trace?.description ?? "")")
                continue
            }
            #expect(identity.provider == entry, "\(answer.trace?.description ?? "")")
        }
        // A wrong password where the user is known ends the stack there (die), whatever comes after.
        let wrong = try await stack.authenticateWithTrace(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("nope"))))
        #expect(wrong.outcome == .rejected(.wrongCredentials), "\(wrong.trace?.description ?? "")")
    }
}
