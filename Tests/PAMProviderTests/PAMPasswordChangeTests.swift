import Authentication
import AuthenticationTesting
import Foundation
import PAMProvider
import TestSupport
import Testing

/// Password changes through the real pam_unix.so, with a throwaway account, judged by `pamtester`.
@Suite(
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: getuid() == 0, "needs root to create a throwaway system account for pam_unix; run as root (CI does)")
)
struct PAMPasswordChangeTests {
    static let newPassword = "Quartz-Lantern-\(UInt32.random(in: 1000...9999))"

    /// gatekeeper-run's status and what it wrote (both streams).
    private func gatekeeperRun(_ arguments: [String], input: String) throws -> (status: Int32, output: String) {
        let result = try run(builtExecutable("gatekeeper-run"), arguments, input: input)
        return (result.status, result.stdout + result.stderr)
    }

    /// Whether pam_unix takes `password` for `user` (authentication alone: an expired password still
    /// authenticates, and only the account check refuses it).
    private func authenticates(_ account: ThrowawayAccount, _ password: String) throws -> Bool {
        try shell("pamtester \(account.service) \(account.user) authenticate", input: password + "\n").status == 0
    }

    /// `chage -d 0`, then a login through gatekeeper-run: pam_unix says the password must be changed, asks
    /// the current one and the new one twice, and the command runs; pamtester then takes the new password
    /// (and the account check passes) and refuses the old.
    @Test func anExpiredPasswordIsChangedAtTheLoginThroughGatekeeperRun() throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        try shell("chage -d 0 \(account.user)")
        let new = Self.newPassword
        let result = try gatekeeperRun(
            ["--provider", "pam", "--service", account.service, "--user", account.user, "--", "true"],
            input: "\(account.password)\n\(account.password)\n\(new)\n\(new)\n")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("You are required to change your password immediately"))
        #expect(try account.pamtester(account.user, new))
        #expect(try !authenticates(account, account.password))
        #expect(!result.output.contains(new) && !result.output.contains(account.password))
    }

    /// With the password on standard input nothing can be asked: the login ends with status 75 and says
    /// why, and the password, unchanged, is still expired.
    @Test func underPasswordStdinAnExpiredPasswordEndsTheLoginWithItsOwnStatus() throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        try shell("chage -d 0 \(account.user)")
        let result = try gatekeeperRun(
            [
                "--provider", "pam", "--service", account.service, "--user", account.user, "--password-stdin", "--",
                "true",
            ],
            input: account.password + "\n")
        #expect(result.status == 75, "\(result.output)")
        #expect(result.output.contains("The password has expired and must be changed."))
        #expect(try authenticates(account, account.password))
        #expect(try !account.pamtester(account.user, account.password))  // Still expired.
    }

    /// A change at the login cancelled at any of its questions (the input ends there) leaves the old
    /// password working, and still expired.
    @Test(arguments: [1, 2, 3])
    func aCancelledChangeAtTheLoginLeavesTheOldPassword(_ answered: Int) throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        try shell("chage -d 0 \(account.user)")
        let answers = [account.password, account.password, Self.newPassword].prefix(answered)
        let result = try gatekeeperRun(
            ["--provider", "pam", "--service", account.service, "--user", account.user, "--", "true"],
            input: answers.map { $0 + "\n" }.joined())
        #expect(result.status != 0, "\(result.output)")
        #expect(try authenticates(account, account.password))
        #expect(try !authenticates(account, Self.newPassword))
        #expect(try !account.pamtester(account.user, account.password))
    }

    /// `gatekeeper-run --change-password` and `pamtester … chauthtok` agree on the same password stacks:
    /// pam_unix alone changes it; pam_debug refusing the update, or pam_deny, refuses it, and then the old
    /// password stays.
    @Test(arguments: [
        ("password required pam_unix.so obscure", true),
        ("password requisite pam_debug.so chauthtok=authtok_err\npassword required pam_unix.so", false),
        ("password requisite pam_debug.so prechauthtok=perm_denied\npassword required pam_unix.so", false),
        ("password required pam_deny.so", false),
    ])
    func changePasswordAgreesWithPamtesterChauthtok(_ stack: String, _ changes: Bool) throws {
        for judge in ["pamtester", "gatekeeper-run"] {
            let account = try ThrowawayAccount()
            defer { account.remove() }
            try "auth required pam_unix.so\naccount required pam_unix.so\n\(stack)\n"
                .write(toFile: "/etc/pam.d/\(account.service)", atomically: true, encoding: .utf8)
            let new = Self.newPassword
            let status: Int32
            if judge == "pamtester" {
                // As root, pam_unix asks no current password.
                status = try shell("pamtester \(account.service) \(account.user) chauthtok", input: "\(new)\n\(new)\n")
                    .status
            } else {
                // The login's password, the current one (checked by the service's auth lines even as
                // root), then the new one twice.
                let result = try gatekeeperRun(
                    ["--provider", "pam", "--service", account.service, "--user", account.user, "--change-password"],
                    input: "\(account.password)\n\(account.password)\n\(new)\n\(new)\n")
                status = result.status
                #expect(changes ? result.status == 0 : result.status == 77, "\(result.output)")
                #expect(!result.output.contains(new) && !result.output.contains(account.password))
            }
            #expect((status == 0) == changes, "\(judge) on \(stack)")
            #expect(try authenticates(account, new) == changes, "\(judge) on \(stack)")
            #expect(try authenticates(account, account.password) == !changes, "\(judge) on \(stack)")
        }
    }

    /// The provider's own change (as the REPL's passwd makes it): the current password is asked and
    /// checked even though root runs it (pam_unix alone would not ask root for it), so a wrong one changes
    /// nothing; the right one, and the change is made, and pamtester agrees.
    @Test func theProviderChangesAPasswordOnRequestOnlyWithTheCurrentOne() async throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        let provider = try PAMAuthProvider(.init(service: account.service))
        let new = Self.newPassword
        let wrong = try await provider.changePassword(
            of: account.user, conversation: ScriptedConversation(.secret("not-it"), .secret(new), .secret(new)))
        #expect(wrong == .rejected(.wrongCurrentPassword))
        #expect(try account.pamtester(account.user, account.password))
        let conversation = ScriptedConversation(.secret(account.password), .secret(new), .secret(new))
        let outcome = try await provider.changePassword(of: account.user, conversation: conversation)
        #expect(outcome == .changed, "\(conversation.events)")
        #expect(try account.pamtester(account.user, new))
    }

    /// A stack of a users file and PAM: the PAM entry's password is changed only with its own current
    /// password, not the file's (the stack's answer for the file's password is no answer for PAM's).
    @Test func aStackChangesPAMsPasswordOnlyWithItsOwnCurrentOne() throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        let directory = "/run/gatekeeper-pam-change-\(UUID())"
        try shell("mkdir -m 700 \(directory)")
        defer { _ = try? shell("rm -rf \(directory)") }
        try
            "\(account.user):\(try shell("htpasswd -nbB x file-pass-1").output.split(separator: ":")[1].trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(toFile: directory + "/users", atomically: true, encoding: .utf8)
        try shell("chmod 600 \(directory)/users")
        try
            "delay 0\nlockout dir=\(directory)/faillock\nrequired file users=\(directory)/users\noptional pam service=\(account.service)\n"
            .write(toFile: directory + "/stack.conf", atomically: true, encoding: .utf8)
        try shell("chmod 600 \(directory)/stack.conf")
        let new = Self.newPassword
        let result = try gatekeeperRun(
            ["--config", directory + "/stack.conf", "--user", account.user, "--change-password"],
            input: "file-pass-1\nfile-pass-1\n\(new)\n\(new)\n")
        #expect(result.status == 0, "\(result.output)")
        // The file's password changed; the system's did not.
        #expect(try shell("htpasswd -vb \(directory)/users \(account.user) '\(new)'").status == 0)
        #expect(try account.pamtester(account.user, account.password))
        #expect(try !authenticates(account, new))
    }
}
