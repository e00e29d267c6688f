import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import HostProtection
import PasswordHashing
import TestSupport
import Testing

/// State files replaced by a directory while the process runs (a mistaken `mkdir`, a restore gone wrong):
/// each gives a typed error or one report, fails closed, loses nothing, and serving resumes once the file
/// is back.
@Suite(.timeLimit(.minutes(1)))
struct ReplacedStateTests {
    @Test func theUsersFileReplacedByADirectoryIsUnavailableUntilItIsBack() async throws {
        let directory = temporaryDirectory("gatekeeper-replaced")
        let path = directory + "/users"
        try UsersFileStore(path: path).addUser(
            "bob", hash: try PasswordHash.make(Secret(copying: "builder".utf8), scheme: .bcrypt), createFile: true)
        let provider = try FileAuthProvider(.init(path: path))
        func login() async throws -> AuthOutcome {
            try await provider.authenticate(
                AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        }
        try expectAuthenticated(try await login(), "bob was refused before the file was touched")
        #expect(rename(path, path + ".saved") == 0 && mkdir(path, 0o700) == 0)
        for _ in 0..<3 {
            guard case .unavailable = try await login() else {
                Issue.record("a directory in place of the users file was not unavailable")
                return
            }
        }
        #expect(rmdir(path) == 0 && rename(path + ".saved", path) == 0)
        try expectAuthenticated(try await login(), "bob was refused after the file came back")
    }

    @Test func aTallyFileReplacedByADirectoryRefusesThatAccountOnly() async throws {
        let directory = temporaryDirectory("gatekeeper-replaced")
        let policy = LockoutPolicy(deny: 3)
        let store = try FaillockStore(directory: directory + "/tally")
        _ = try store.recordFailure(of: LockoutAccount("alice", known: true), source: .service("t"), policy: policy)
        #expect(rename(directory + "/tally/alice", directory + "/alice.saved") == 0)
        #expect(mkdir(directory + "/tally/alice", 0o700) == 0)
        let provider = StubAuthProvider(accounts: ["alice": ("wonderland", []), "bob": ("builder", [])])
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: policy, failDelay: .zero), audit: audit, lockout: store)
        // alice's failures cannot be read or counted: her login is refused before any backend is asked.
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "wonderland"))
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        #expect(provider.authenticationCount == 0)
        #expect(audit.events.contains { $0.kind == .stateUnavailable })
        // bob is not affected.
        let bob = try await gatekeeper.signIn(credentials("bob", "builder"))
        #expect(bob.username == "bob")
        await gatekeeper.signOut()
        // The file back: alice's earlier failure is still counted.
        #expect(
            rmdir(directory + "/tally/alice") == 0
                && rename(directory + "/alice.saved", directory + "/tally/alice") == 0)
        #expect(try store.status(of: "alice", policy: policy) == .open(failures: 1))
    }

    @Test func anAuditLogReplacedByADirectoryIsReportedOnceAndTheChainResumes() throws {
        let directory = temporaryDirectory("gatekeeper-replaced")
        let path = directory + "/audit/audit.jsonl"
        let reports = Locked<[String]>([])
        let log = try JSONAuditLog(path: path) { message in reports.withLock { $0.append(message) } }
        log.record(AuditEvent(kind: .signedIn, username: "bob", provider: "file"))
        for round in 1...2 {
            #expect(rename(path, path + ".saved") == 0 && mkdir(path, 0o700) == 0)
            for _ in 0..<50 { log.record(AuditEvent(kind: .signInFailed, username: "bob", provider: "file")) }
            #expect(reports.withLock { $0.count } == round, "a failing log must be reported once per outage")
            #expect(rmdir(path) == 0 && rename(path + ".saved", path) == 0)
            log.record(AuditEvent(kind: .signedOut, username: "bob", provider: "file"))
        }
        #expect(reports.withLock { $0.allSatisfy { $0.hasPrefix(path + ": audit events cannot be written") } })
        let verification = try JSONAuditLog.verify(path)
        #expect(verification.problem == nil)
        #expect(verification.verified == 3)
    }
}
