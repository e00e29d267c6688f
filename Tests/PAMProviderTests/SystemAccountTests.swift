import Authentication
import AuthenticationTesting
import Foundation
import PAMProvider
import TestSupport
import Testing

/// A system account made for one test, checked by the real `pam_unix.so` through a service file in
/// /etc/pam.d; both are removed by ``remove()``.
final class ThrowawayAccount {
    let user = "gk\(UInt32.random(in: 100_000...999_999))"
    let password = "Sesame-\(UInt32.random(in: 1000...9999))"
    let service: String

    init() throws {
        service = "gatekeeper-test-\(user)"
        try "auth required pam_unix.so\naccount required pam_unix.so\npassword required pam_unix.so obscure\n"
            .write(toFile: "/etc/pam.d/\(service)", atomically: true, encoding: .utf8)
        let created = try shell("useradd -M -u \(uniqueUID()) -s /usr/sbin/nologin -c 'Throwaway Tester,,,' \(user)")
        guard created.status == 0 else {
            remove()
            throw FixtureError("useradd failed: \(created.output)")
        }
        try shell("chpasswd", input: "\(user):\(password)\n")
    }

    /// Removes the account (if a test has not already) and the service file; a removal that fails is the
    /// test's failure, not an account left on the host.
    func remove() {
        if let problem = removeAccount(user) { Issue.record(Comment(rawValue: problem)) }
        try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(service)")
    }

    /// What `pamtester` says: true when it authenticates and the account check passes.
    func pamtester(_ user: String, _ password: String) throws -> Bool {
        try shell("pamtester \(service) \(user) authenticate acct_mgmt", input: password + "\n").status == 0
    }

    /// gatekeeper-run's exit status for a protected `true`.
    func gatekeeperRun(_ user: String, _ password: String) throws -> Int32 {
        try run(
            builtExecutable("gatekeeper-run"),
            ["--provider", "pam", "--service", service, "--user", user, "--password-stdin", "--", "true"],
            input: password + "\n"
        ).status
    }

    func authenticate(_ user: String, _ password: String) async throws -> AuthOutcome {
        try await PAMAuthProvider(.init(service: service)).authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password)))
        )
    }
}

/// The real `pam_unix.so` with a throwaway account, compared with `pamtester`, Linux-PAM's own client.
@Suite(
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: getuid() == 0, "needs root to create a throwaway system account for pam_unix; run as root (CI does)")
)
struct SystemAccountTests {
    enum Change: String, CaseIterable, Sendable {
        case none, wrongPassword, unknownUser, expiredAccount, expiredPassword, lockedAccount
    }

    @Test(arguments: Change.allCases)
    func agreesWithPamtester(_ change: Change) async throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        var (user, password) = (account.user, account.password)
        switch change {
        case .none: break
        case .wrongPassword: password += "-wrong"
        case .unknownUser: user = "nosuch\(account.user)"
        case .expiredAccount: try shell("chage -E 0 \(user)")
        case .expiredPassword: try shell("chage -d 0 \(user)")
        case .lockedAccount: try shell("passwd -l \(user)")
        }
        let outcome = try await account.authenticate(user, password)
        let expected: AuthOutcome? =
            switch change {
            case .none: nil
            case .wrongPassword, .lockedAccount: .rejected(.wrongCredentials)
            case .unknownUser: .notMine
            case .expiredAccount: .rejected(.expiredAccount)
            case .expiredPassword: .rejected(.passwordChangeRequired)
            }
        if let expected {
            #expect(outcome == expected)
        } else {
            let identity = try expectAuthenticated(outcome, "expected authenticated, got \(outcome)")
            #expect(identity.displayName == "Throwaway Tester")
            #expect(identity.attributes["uid"].flatMap(Int.init) != nil)
            #expect(identity.isMember(of: user))
        }
        let admitted = change == .none
        #expect(try account.pamtester(user, password) == admitted)
        // An expired password read from standard input cannot be changed: its own status, 75.
        let refused: Int32 = change == .expiredPassword ? 75 : 77
        #expect(try account.gatekeeperRun(user, password) == (admitted ? 0 : refused))
    }

    /// A login that reads no group (`AuthRequest.readsGroups` off, as gatekeeper-run without `--group`)
    /// leaves the name service's group lookup to the first read: the groups read then are the ones an
    /// eager login gets, supplementary groups included, and `gatekeeper-run --group` checks them.
    @Test func groupsLeftToTheFirstReadAreTheSameGroups() async throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        let group = "gkg\(UInt32.random(in: 100_000...999_999))"
        try shell("groupadd \(group) && usermod -a -G \(group) \(account.user)")
        defer { _ = try? shell("groupdel \(group)") }
        let provider = try PAMAuthProvider(.init(service: account.service))
        func identity(readsGroups: Bool) async throws -> Identity? {
            let request = AuthRequest(
                username: account.user, conversation: ScriptedConversation(.secret(account.password)),
                readsGroups: readsGroups)
            guard case .authenticated(let identity) = try await provider.authenticate(request) else { return nil }
            return identity
        }
        let eager = try #require(try await identity(readsGroups: true))
        let lazy = try #require(try await identity(readsGroups: false))
        #expect(eager.groupsAreKnown)
        #expect(!lazy.groupsAreKnown, "the groups were looked up before anyone read them")
        #expect(lazy.groups == eager.groups)
        #expect(lazy.groupsAreKnown)
        #expect(eager.groups.contains(group) && eager.groups.contains(account.user))
        func gatekeeperRun(_ options: [String]) throws -> Int32 {
            try run(
                builtExecutable("gatekeeper-run"),
                ["--provider", "pam", "--service", account.service, "--user", account.user, "--password-stdin"]
                    + options + ["--", "true"],
                input: account.password + "\n"
            ).status
        }
        #expect(try gatekeeperRun(["--group", group]) == 0)
        #expect(try gatekeeperRun(["--group", "no-such-\(group)"]) == 77)
    }

    /// An expired password is changed through the same conversation when the host allows it; the new one
    /// works afterwards.
    @Test func changesAnExpiredPasswordWhenAllowed() async throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        try shell("chage -d 0 \(account.user)")
        let newPassword = "Quartz-Lantern-\(UInt32.random(in: 1000...9999))"
        let answers: [ScriptedConversation.Answer] = [
            .secret(account.password), .secret(account.password), .secret(newPassword), .secret(newPassword),
        ]
        let provider = try PAMAuthProvider(.init(service: account.service))
        // The provider alone admits the password marked to be changed, and changes nothing.
        let marked = try await provider.authenticate(
            AuthRequest(
                username: account.user, conversation: ScriptedConversation(.secret(account.password)),
                mayChangeExpiredPassword: true))
        let identity = try expectAuthenticated(marked, "expected authenticated and marked, got \(marked)")
        try #require(identity.mustChangePassword, "expected authenticated and marked, got \(marked)")
        #expect(await provider.recheck(identity) == .refused(.passwordChangeRequired))
        // Through a gatekeeper, the change is made once the login is admitted.
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(failDelay: .zero))
        _ = try await gatekeeper.signIn(
            conversation: ScriptedConversation(answers: [.text(account.user)] + answers))
        #expect(try account.pamtester(account.user, newPassword))
    }

    /// A remembered login is accepted only while the system account exists and is neither locked nor
    /// expired.
    @Test func recheckFollowsTheSystemAccount() async throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        let provider = try PAMAuthProvider(.init(service: account.service))
        let identity = Identity(username: account.user, provider: "pam")
        guard case .valid(let current) = await provider.recheck(identity) else {
            Issue.record("a usable account was not valid")
            return
        }
        #expect(current.attributes["uid"] != nil && current.displayName == "Throwaway Tester")
        #expect(try shell("passwd -l \(account.user)").status == 0)
        #expect(await provider.recheck(identity) == .refused(.accountLocked(until: nil)))
        #expect(try shell("passwd -u \(account.user)").status == 0)
        #expect(try shell("chage -E 1 \(account.user)").status == 0)  // Expired on 2 January 1970.
        #expect(await provider.recheck(identity) == .refused(.accountExpired))
        #expect(try shell("userdel \(account.user)").status == 0)
        #expect(await provider.recheck(identity) == .refused(.userNotFound))
    }

    /// Without root, pam_unix cannot read the shadow file for another user; the error says why.
    @Test func withoutRootTheErrorExplainsThePrivilegeModel() throws {
        let account = try ThrowawayAccount()
        defer { account.remove() }
        // A copy the unprivileged user can run, wherever the build directory is.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-nobody-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("gatekeeper-run").path
        try FileManager.default.copyItem(atPath: builtExecutable("gatekeeper-run").path, toPath: copy)
        try shell("chmod 755 \(directory.path) \(copy)")
        // nobody has no runtime directory and no home: its state goes where it is told.
        let state = directory.appendingPathComponent("state").path
        try shell("mkdir -m 700 \(state) && chown nobody \(state)")
        let command =
            "\(copy) --provider pam --service \(account.service) --user \(account.user) --password-stdin"
            + " --state-dir \(state) -- true"
        let result = try shell("su nobody -s /bin/sh -c '\(command)'", input: account.password + "\n")
        #expect(result.status == 69)
        #expect(
            result.output.contains(
                "Without root, pam_unix can check only the password of the user running this program."))
        #expect(!result.output.contains(account.password))
    }
}
