import Authentication
import AuthenticationTesting
import Foundation
import HostProtection
import PAMProvider
import TestSupport
import Testing

/// pam_faillock is the peer: the `faillock` tool and `pam_faillock.so` read the tally files this package
/// writes, and this package reads theirs, in one directory.
@Suite(.timeLimit(.minutes(2)))
struct FaillockInteroperabilityTests {
    /// A system account (pam_faillock ignores names the user database does not know).
    static let account = "daemon"
    static let policy = LockoutPolicy(deny: 3, interval: .seconds(900), unlockAfter: .seconds(600))

    let directory = temporaryDirectory("gatekeeper-faillock")
    var tallies: String { directory + "/tally" }

    /// A private PAM directory with a pam_faillock stack over pam_matrix, as the pam_faillock manual
    /// stacks it over pam_unix, sharing `tallies`.
    func pamProvider() throws -> PAMAuthProvider {
        let matrix = try #require(
            PAMPeers.pamMatrix, "pam_matrix.so was not found; install libpam-wrapper (make test does)")
        let passdb = directory + "/passdb"
        try "\(Self.account):right-password:gk-faillock\n".write(toFile: passdb, atomically: true, encoding: .utf8)
        let options = "dir=\(tallies) deny=3 unlock_time=600 fail_interval=900"
        try """
        auth     required       pam_faillock.so preauth \(options)
        auth     sufficient     \(matrix) passdb=\(passdb)
        auth     [default=die]  pam_faillock.so authfail \(options)
        account  required       pam_faillock.so \(options)
        account  required       \(matrix) passdb=\(passdb)

        """.write(toFile: directory + "/gk-faillock", atomically: true, encoding: .utf8)
        return try PAMAuthProvider(.init(service: "gk-faillock", configurationDirectory: directory))
    }

    func pamLogin(_ password: String) async throws -> AuthOutcome {
        try await pamProvider().authenticate(
            AuthRequest(
                username: Self.account, conversation: ScriptedConversation(.secret(password)), terminal: "/dev/pts/9"))
    }

    func faillock(_ arguments: String) throws -> (status: Int32, output: String) {
        try shell("faillock --dir '\(tallies)' --user \(Self.account) \(arguments) 2>&1")
    }

    @Test func faillockListsTheRecordsThisPackageWritesAndResetsThem() throws {
        let store = try FaillockStore(directory: tallies)
        _ = try store.recordFailure(
            of: LockoutAccount(Self.account, known: true), source: .terminal("/dev/pts/7"), policy: Self.policy)
        _ = try store.recordFailure(
            of: LockoutAccount(Self.account, known: true), source: .remoteHost("198.51.100.7"), policy: Self.policy)
        let listed = try faillock("")
        #expect(listed.status == 0)
        let rows = listed.output.split(separator: "\n").filter { $0.hasSuffix(" V") }
        #expect(rows.count == 2, "faillock printed:\n\(listed.output)")
        #expect(rows.contains { $0.contains("TTY") && $0.contains("/dev/pts/7") })
        #expect(rows.contains { $0.contains("RHOST") && $0.contains("198.51.100.7") })
        // And the records carry this package's times: what faillock prints is what the store read.
        let recorded = try store.failures(of: Self.account)
        #expect(recorded.map(\.type) == ["TTY", "RHOST"] && recorded.allSatisfy { $0.valid })

        _ = try store.recordFailure(
            of: LockoutAccount(Self.account, known: true), source: .service("gk"), policy: Self.policy)
        #expect(try store.status(of: Self.account, policy: Self.policy).isLocked)
        #expect(try faillock("--reset").status == 0)
        #expect(try store.status(of: Self.account, policy: Self.policy) == .open(failures: 0))
    }

    @Test func pamFaillockSeesTheFailuresThisPackageCountedAndTheReverse() async throws {
        let store = try FaillockStore(directory: tallies)
        for _ in 0..<2 {
            _ = try store.recordFailure(
                of: LockoutAccount(Self.account, known: true), source: .service("gk"), policy: Self.policy)
        }
        // A wrong password through pam_faillock is the third failure: the account is locked for both.
        guard case .rejected = try await pamLogin("wrong-password") else {
            Issue.record("a wrong password was not rejected")
            return
        }
        #expect(try faillock("").output.split(separator: "\n").filter { $0.hasSuffix(" V") }.count == 3)
        guard case .locked(let failures, let remaining?) = try store.status(of: Self.account, policy: Self.policy)
        else {
            Issue.record("the store does not see pam_faillock's failure")
            return
        }
        #expect(failures == 3 && remaining > .seconds(590))
        // pam_faillock refuses even the right password now.
        guard case .rejected = try await pamLogin("right-password") else {
            Issue.record("pam_faillock let a locked account in")
            return
        }
        // An unlock by this package is an unlock for pam_faillock.
        try store.unlock(Self.account)
        try expectAuthenticated(try await pamLogin("right-password"), "pam_faillock still refuses after the unlock")
    }

    @Test func pamFaillocksSuccessResetsTheCountThisPackageKeeps() async throws {
        let store = try FaillockStore(directory: tallies)
        _ = try store.recordFailure(
            of: LockoutAccount(Self.account, known: true), source: .service("gk"), policy: Self.policy)
        try expectAuthenticated(try await pamLogin("right-password"), "the right password was refused")
        #expect(try store.status(of: Self.account, policy: Self.policy) == .open(failures: 0))
    }
}

enum PAMPeers {
    /// Where Debian's libpam-wrapper puts `pam_matrix.so`.
    static var pamMatrix: String? {
        let candidates =
            ["x86_64-linux-gnu", "aarch64-linux-gnu", "arm-linux-gnueabihf", "i386-linux-gnu"]
            .map { "/usr/lib/\($0)/pam_wrapper/pam_matrix.so" } + ["/usr/lib64/pam_wrapper/pam_matrix.so"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }
}
