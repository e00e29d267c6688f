import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import GatekeeperSupport
import HostProtection
import MockProvider
import PAMProvider
import PasswordHashing
import TestSupport
import Testing

/// Every kind of login, through every backend and a stack of them, recorded by every sink — the
/// in-memory record, the JSON log and syslog — and then every record searched for every password used.
@Suite(.timeLimit(.minutes(3)))
struct NoSecretsTests {
    /// The passwords of the accounts, wrong guesses, and a password typed where the name belongs.
    static let passwords = [
        "Mock-Secret-1", "File-Secret-2", "Pam-Secret-3", "Wrong-Guess-4", "Typed-In-Name-5", "Locked-Secret-6",
    ]

    @Test func noRecordHoldsAPassword() async throws {
        let directory = temporaryDirectory("gatekeeper-nosecrets")
        let recording = RecordingAuditSink()
        let json = try JSONAuditLog(path: directory + "/audit/audit.jsonl")
        let listener = try SyslogAuditTests.SyslogListener()
        let syslog = SyslogAuditSink(socketPath: listener.path, identifier: "gatekeeper-test")
        let audit = AuditSinks([json, syslog, recording])
        let datagrams = Locked<[String]>([])

        let mock = MockAuthProvider(
            users: [
                .init(username: "mia", password: Secret(copying: "Mock-Secret-1".utf8)),
                .init(username: "lee", password: Secret(copying: "Locked-Secret-6".utf8), status: .locked),
            ], delay: .zero)
        let store = UsersFileStore(path: directory + "/users")
        try store.addUser(
            "fay", hash: try PasswordHash.make(Secret(copying: "File-Secret-2".utf8), scheme: .bcrypt), createFile: true
        )
        let file = try FileAuthProvider(.init(path: directory + "/users"))
        let pam = try pamProvider(in: directory)
        let stack = ProviderChain([
            .init(ChainControl(actions: [.success: .done, .userUnknown: .ignore], default: .bad), file),
            .init(ChainControl(actions: [.success: .done, .userUnknown: .ignore], default: .bad), pam),
            .init(.required, mock),
        ])
        let lockout = try FaillockStore(directory: directory + "/tally")
        let policy = LockoutPolicy(deny: 2, unlockAfter: .seconds(600))

        for provider in [mock, file, pam, stack] as [any AuthProvider] {
            let gatekeeper = Gatekeeper(
                provider: provider,
                configuration: .init(
                    lockout: policy, failDelay: .zero, origin: LoginOrigin(terminal: "/dev/pts/1", remoteHost: "host")),
                audit: audit, lockout: lockout)
            let logins: [(String, String)] = [
                ("mia", "Mock-Secret-1"), ("fay", "File-Secret-2"), ("pam-user", "Pam-Secret-3"),
                ("mia", "Wrong-Guess-4"), ("Typed-In-Name-5", "mia"), ("lee", "Locked-Secret-6"),
                ("fay", "Wrong-Guess-4"), ("fay", "Wrong-Guess-4"), ("fay", "File-Secret-2"),
            ]
            for (user, password) in logins {
                _ = try? await gatekeeper.signIn(credentials(user, password))
                await gatekeeper.signOut()
            }
            try lockout.unlock("fay")
            // A cancelled login, and an unavailable backend.
            let pending = Task { try await gatekeeper.signIn(conversation: ScriptedConversation(.text("mia"))) }
            pending.cancel()
            _ = try? await pending.value
            mock.inject(.unavailable(reason: "maintenance"))
            _ = try? await gatekeeper.signIn(credentials("mia", "Mock-Secret-1"))
            datagrams.withLock { $0 += listener.messages() }
        }

        let kinds = Set(recording.events.map(\.kind))
        for kind in [AuditEvent.Kind.attempt, .signedIn, .signInFailed, .lockedOut, .signedOut, .stackDecision] {
            #expect(kinds.contains(kind), "no \(kind) event was recorded")
        }
        let records =
            recording.events.map(\.description) + datagrams.withLock { $0 }
            + [try String(contentsOfFile: directory + "/audit/audit.jsonl", encoding: .utf8)]
        #expect(records.count > 50)
        for password in Self.passwords {
            for record in records where record.contains(password) {
                Issue.record("a record holds the password \(password): \(record.prefix(300))")
            }
        }
        #expect(try JSONAuditLog.verify(directory + "/audit/audit.jsonl").problem == nil)
    }

    func pamProvider(in directory: String) throws -> PAMAuthProvider {
        let matrix = try #require(
            PAMPeers.pamMatrix, "pam_matrix.so was not found; install libpam-wrapper (make test does)")
        try "pam-user:Pam-Secret-3:gk-secrets\n".write(toFile: directory + "/passdb", atomically: true, encoding: .utf8)
        try """
        auth [success=1 default=ignore] pam_succeed_if.so quiet user in pam-user
        auth requisite pam_debug.so auth=user_unknown
        auth required \(matrix) passdb=\(directory)/passdb
        account required \(matrix) passdb=\(directory)/passdb

        """.write(toFile: directory + "/gk-secrets", atomically: true, encoding: .utf8)
        return try PAMAuthProvider(.init(service: "gk-secrets", configurationDirectory: directory))
    }
}
