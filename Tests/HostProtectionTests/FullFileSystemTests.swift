import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import GatekeeperSupport
import HostProtection
import MockProvider
import PasswordHashing
import TestSupport
import Testing

/// State on a file system that fills up or turns read-only: each gives a typed error or a report, fails
/// closed, loses nothing written before, and the process goes on serving.
@Suite(
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: getuid() == 0, "mounts a small tmpfs: needs root (CI runs as root)"))
struct FullFileSystemTests {
    /// A 256 KiB tmpfs, unmounted at the end.
    final class SmallDisk {
        let path = temporaryDirectory("gatekeeper-full")
        init() throws {
            let (status, output) = try shell("mount -t tmpfs -o size=256k,mode=0700 tmpfs '\(path)'")
            guard status == 0 else { throw FixtureFailure("mount: \(output)") }
        }
        func fill() throws {
            _ = try shell("dd if=/dev/zero of='\(path)/filler' bs=4k 2>/dev/null; sync")
        }
        deinit { _ = try? shell("umount -l '\(path)'") }
    }

    struct FixtureFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func aFullDiskRefusesNewStateAndKeepsTheOld() async throws {
        let disk = try SmallDisk()
        let policy = LockoutPolicy(deny: 3)
        let store = try FaillockStore(directory: disk.path + "/tally")
        _ = try store.recordFailure(of: LockoutAccount("alice", known: true), source: .service("t"), policy: policy)
        let users = UsersFileStore(path: disk.path + "/users")
        try users.addUser(
            "bob", hash: try PasswordHash.make(Secret(copying: "builder".utf8), scheme: .bcrypt), createFile: true)
        let reports = Locked<[String]>([])
        let log = try JSONAuditLog(path: disk.path + "/audit/audit.jsonl") { message in
            reports.withLock { $0.append(message) }
        }
        log.record(AuditEvent(kind: .signedIn, username: "bob", provider: "file"))
        try disk.fill()

        // The lockout: a new account's file cannot be made → a typed error, so the login fails closed.
        #expect {
            try store.recordFailure(of: LockoutAccount("carol", known: true), source: .service("t"), policy: policy)
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        // alice's earlier failure is still counted.
        #expect(try store.status(of: "alice", policy: policy) == .open(failures: 1))
        // The users file: a change that cannot be written leaves the file as it was.
        #expect(throws: UsersFileError.self) {
            try users.addUser("fay", hash: try PasswordHash.make(Secret(copying: "x-2026".utf8), scheme: .bcrypt))
        }
        let file = try FileAuthProvider(.init(path: disk.path + "/users"))
        guard
            case .authenticated = try await file.authenticate(
                AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        else {
            Issue.record("the users file was damaged by a write that failed")
            return
        }
        // The audit log: reported once, the login goes on, the records before are intact.
        for _ in 0..<200 { log.record(AuditEvent(kind: .signedOut, username: "bob", provider: "file")) }
        #expect(reports.withLock { $0.count } == 1)
        let verification = try JSONAuditLog.verify(disk.path + "/audit/audit.jsonl")
        #expect(verification.problem == nil || verification.problem?.reason.contains("not a chained record") == true)
        #expect(verification.verified >= 1)
    }

    @Test func aReadOnlyDirectoryFailsClosed() async throws {
        let disk = try SmallDisk()
        let policy = LockoutPolicy(deny: 3)
        let store = try FaillockStore(directory: disk.path + "/tally")
        _ = try shell("mount -o remount,ro '\(disk.path)'")
        #expect {
            try store.recordFailure(of: LockoutAccount("alice", known: true), source: .service("t"), policy: policy)
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        // A gatekeeper over it refuses every login, before any provider is asked, rather than let failures
        // go uncounted (unlimited guessing); the audit says why.
        let audit = RecordingAuditSink()
        let provider = StubAuthProvider(accounts: ["alice": ("wonderland", [])])
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: policy, failDelay: .zero), audit: audit, lockout: store)
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "wonderland"))
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        #expect(provider.authenticationCount == 0)
        #expect(audit.events.contains { $0.kind == .stateUnavailable })
        #expect {
            try FaillockStore(directory: disk.path + "/other")
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
    }

    /// Medium 5, as the review ran it: the lockout directory passes every check, but the disk is full.
    /// Eight wrong guesses with deny=3, then the right password: every one is refused, none is checked
    /// uncounted, and the tally is as it was.
    @Test func aLockoutThatCannotCountRefusesEveryLogin() async throws {
        let disk = try SmallDisk()
        let store = try FaillockStore(directory: disk.path + "/tally")
        try disk.fill()
        let provider = MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: LockoutPolicy(deny: 3), failDelay: .zero),
            lockout: store)
        for password in Array(repeating: "wrong", count: 8) + ["wonderland"] {
            await #expect {
                try await gatekeeper.signIn(try credentials("alice", password))
            } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        }
        #expect(provider.authenticationCount == 0)
        #expect(gatekeeper.identity == nil)
    }
}
