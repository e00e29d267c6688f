import Foundation
import TestSupport
import Testing

/// Remote logins as people make them: Debian's sshd (keyboard-interactive, `UsePAM yes`) with every PAM phase
/// through pam_gatekeeper.so, and the real `ssh` client on a terminal. sshd refuses a name `getpwnam` does not
/// know, so each account exists locally too (the test's `useradd`), as at sites using PAM-only directory
/// authentication.
@Suite(
    .serialized,
    .timeLimit(.minutes(6)),
    .enabled(
        if: getuid() == 0,
        "needs root for sshd, /etc/pam.d, /etc/sudoers.d and throwaway accounts; run as root (CI does)")
)
struct SSHLoginTests {
    typealias Host = PAMModuleTests.Host

    /// A users-file stack: the right password opens the session (the command runs as the account); a wrong one
    /// is refused and counted once.
    @Test func passwordOverSSH() throws {
        let host = try Host()
        let sshd = try SSHServer(service: host.service)
        let session = try sshd.login(host.user)
        try session.waitFor("Password: ")
        session.type(host.fixture.password + "\r")
        #expect(session.finish() == 0, "\(session.output)\n\(sshd.log)")
        #expect(session.output.hasSuffix("\(host.user)\r\n"), "\(session.output)")

        let wrong = try sshd.login(host.user)
        try wrong.waitFor("Password: ")
        wrong.type("not-the-password\r")
        #expect(wrong.finish() != 0)
        #expect(wrong.output.contains("Permission denied"), "\(wrong.output)")
        #expect(try host.fixture.failures(of: host.user) == 1)
        // The login the daemon served came from sshd (root) for the remote host: its audit record says so.
        #expect(host.fixture.auditRecords.contains { $0.contains("127.0.0.1") }, "\(host.fixture.auditRecords)")
    }

    /// Password, then a one-time code (pam_oath's file, `oathtool`'s code): sshd relays each question of the
    /// daemon's as a keyboard-interactive round; a wrong code is refused.
    @Test func passwordAndOneTimeCodeOverSSH() throws {
        let host = try Host.withOneTimeCodes()
        let sshd = try SSHServer(service: host.service)
        for (code, admitted) in [(try Host.currentCode(), true), ("000000", false)] {
            let session = try sshd.login(host.user)
            try session.waitFor("Password: ")
            session.type(host.fixture.password + "\r")
            try session.waitFor("Verification code: ")
            session.type(code + "\r")
            if admitted {
                #expect(session.finish() == 0, "\(session.output)\n\(sshd.log)")
                #expect(session.output.hasSuffix("\(host.user)\r\n"), "\(session.output)")
            } else {
                #expect(session.finish() != 0)
                #expect(session.output.contains("Permission denied"), "\(session.output)")
            }
        }
    }

    /// Ctrl-C in the ssh client, and a client that disconnects (killed), at each question: the daemon's login
    /// ends at once, nothing is admitted, and the ledger counts as docs/host-protection.md says — nothing at
    /// the password's prompt, one failure once the password was presented (a cancel at the code).
    @Test func ctrlCAndDisconnectAtEachQuestion() throws {
        let host = try Host.withOneTimeCodes()
        let sshd = try SSHServer(service: host.service)
        var ended = 0
        func cancelledRecords() -> Int {
            host.fixture.auditRecords.filter { $0.contains("\"signInCancelled\"") }.count
        }
        for (ending, atCode) in [("ctrl-c", false), ("disconnect", false), ("ctrl-c", true), ("disconnect", true)] {
            let session = try sshd.login(host.user)
            try session.waitFor("Password: ")
            if atCode {
                session.type(host.fixture.password + "\r")
                try session.waitFor("Verification code: ")
            }
            if ending == "ctrl-c" { session.type("\u{3}") } else { session.send(SIGKILL) }
            #expect(session.finish() != 0)
            #expect(!session.output.contains("\(host.user)\r\n"), "\(session.output)")
            ended += 1
            #expect(
                eventually { cancelledRecords() == ended }, "\(ending) at code \(atCode): \(host.fixture.auditRecords)")
            #expect(try host.fixture.failures(of: host.user) == (atCode ? (ending == "ctrl-c" ? 1 : 2) : 0))
        }
        #expect(!host.fixture.auditRecords.contains { $0.contains("\"signedIn\"") })
    }

    /// An account locked by failures through sudo is locked for ssh too: one tally for the host, whichever
    /// program the guesses came through.
    @Test func lockedThroughSudoIsLockedForSSH() throws {
        let host = try Host(settings: "lockout deny=3 unlock=10m")
        try host.allowSudo()
        let sudo = try host.sudo()
        for _ in 0..<3 {
            try sudo.waitFor("assword", after: sudo.output.count)
            sudo.type("wrong-password\r")
        }
        #expect(sudo.finish() != 0)
        #expect(try host.fixture.failures(of: host.user) == 3)
        let sshd = try SSHServer(service: host.service)
        let session = try sshd.login(host.user)
        // Locked: refused before anything is asked, so the client is never asked for a password.
        #expect(session.finish() != 0)
        #expect(session.output.contains("Permission denied"), "\(session.output)")
        #expect(!session.output.contains("\(host.user)\r\n"))
        #expect(host.fixture.auditRecords.contains { $0.contains("\"lockedOut\"") }, "\(host.fixture.auditRecords)")
    }

    /// An OpenID Connect device login over ssh: sshd relays a message only with the next question, so the
    /// address and code come with "Press Enter once you have approved"; approved as the account's own person
    /// the session opens, approved by someone else it is refused; Enter is no guess, and Ctrl-C at it counts nothing.
    @Test func deviceLoginOverSSH() throws {
        let glewlwyd = try GlewlwydFixture.shared.get()
        let created = try shell(
            "id alice >/dev/null 2>&1 || { useradd -M -d / -u \(uniqueUID()) -s /bin/sh alice && echo created; }")
        defer {
            if created.output.contains("created"), let problem = removeAccount("alice") {
                Issue.record(Comment(rawValue: problem))
            }
        }
        let host = try Host { _ in
            "required oidc issuer=\(glewlwyd.issuer) client_id=\(glewlwyd.publicClientID) allow_http=yes"
        }
        // No backend of this stack can tell whether an account may log in now (`ignore`): the account phase
        // is the host's, as with `@include common-account` below the module.
        try host.writeService(
            account: "account [success=ok ignore=ignore default=bad] \(host.module) socket=\(host.fixture.socket)\n"
                + "account required pam_permit.so")
        let sshd = try SSHServer(service: host.service)
        for (approver, password, admitted) in [
            ("alice", "wonderland-2026", true), ("bob", "builder-2026", false),
        ] {
            let session = try sshd.login("alice")
            let shown = try session.waitFor("Press Enter once you have approved", timeout: .seconds(30))
            let code = try #require(GlewlwydFixture.userCode(in: shown), "\(shown)")
            try glewlwyd.approve(code, as: approver, password: password)
            session.type("\r")
            if admitted {
                #expect(session.finish(timeout: .seconds(60)) == 0, "\(session.output)\n\(sshd.log)")
                #expect(session.output.hasSuffix("alice\r\n"), "\(session.output)")
            } else {
                #expect(session.finish(timeout: .seconds(60)) != 0)
                #expect(session.output.contains("Permission denied"), "\(session.output)")
            }
        }
        let cancelled = try sshd.login("alice")
        try cancelled.waitFor("Press Enter once you have approved", timeout: .seconds(30))
        cancelled.type("\u{3}")
        #expect(cancelled.finish() != 0)
        #expect(eventually { host.fixture.auditRecords.contains { $0.contains("\"signInCancelled\"") } })
        // Enter is no credential: neither the refusal after it nor the cancel at it is a guess.
        #expect(try host.fixture.failures(of: "alice") + host.fixture.unknownNameFailures() == 0)
    }
}
