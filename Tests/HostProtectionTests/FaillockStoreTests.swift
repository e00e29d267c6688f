import Authentication
import AuthenticationTesting
import Foundation
import HostProtection
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(3)))
struct FaillockStoreTests {
    static let policy = LockoutPolicy(deny: 3, interval: .seconds(900), unlockAfter: .seconds(600))
    let directory = temporaryDirectory("gatekeeper-faillock") + "/tally"

    func tallyBytes(_ account: String) -> [UInt8] {
        (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + account)))) ?? []
    }

    @Test func writesPamFaillocksRecordLayout() throws {
        let store = try FaillockStore(directory: directory)
        let before = UInt64(time(nil))
        _ = try store.recordFailure(
            of: LockoutAccount("alice", known: true), source: .remoteHost("203.0.113.9"), policy: Self.policy)
        let bytes = tallyBytes("alice")
        // struct tally: source[52], reserved u16, status u16, time u64 — 64 bytes, native byte order.
        #expect(bytes.count == 64)
        #expect(String(decoding: bytes[0..<11], as: UTF8.self) == "203.0.113.9" && bytes[11] == 0)
        let status = UInt16(bytes[54]) | UInt16(bytes[55]) << 8
        #expect(status == 0x1 | 0x2)  // TALLY_STATUS_VALID | TALLY_STATUS_RHOST
        let recorded = bytes[56..<64].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * $1.offset) }
        #expect(recorded >= before && recorded <= UInt64(time(nil)))
    }

    @Test func countsUntilDenyThenLocksAndASuccessStartsAgain() throws {
        let store = try FaillockStore(directory: directory)
        #expect(try store.status(of: "alice", policy: Self.policy) == .open(failures: 0))
        #expect(
            try store.recordFailure(
                of: LockoutAccount("alice", known: true), source: .service("t"), policy: Self.policy)
                == .open(failures: 1))
        _ = try store.recordFailure(
            of: LockoutAccount("alice", known: true), source: .service("t"), policy: Self.policy)
        guard
            case .locked(3, let remaining?) = try store.recordFailure(
                of: LockoutAccount("alice", known: true), source: .service("t"), policy: Self.policy)
        else {
            Issue.record("the third failure did not lock")
            return
        }
        #expect(remaining > .seconds(595) && remaining <= .seconds(600))
        // Another store on the same directory (another process) sees the same.
        #expect(try FaillockStore(directory: directory).status(of: "alice", policy: Self.policy).isLocked)
        try store.recordSuccess(of: "alice")
        #expect(try store.status(of: "alice", policy: Self.policy) == .open(failures: 0))
        #expect(tallyBytes("alice").isEmpty)
    }

    @Test func aDamagedFileNeverUnlocks() throws {
        let store = try FaillockStore(directory: directory)
        for _ in 0..<3 {
            _ = try store.recordFailure(
                of: LockoutAccount("alice", known: true), source: .service("t"), policy: Self.policy)
        }
        let path = directory + "/alice"
        // A torn last record (a crash mid-write) is dropped, as pam_faillock's read drops it.
        var bytes = tallyBytes("alice")
        try Data(bytes + [UInt8](repeating: 0xFF, count: 40)).write(to: URL(fileURLWithPath: path))
        #expect(try store.status(of: "alice", policy: Self.policy).isLocked)
        // A record from the far future (a clock or a byte gone wrong) locks for as long as it can.
        bytes = [UInt8](repeating: 0, count: 64)
        bytes[54] = 0x1
        for index in 56..<64 { bytes[index] = 0xFF }
        try Data(bytes + bytes + bytes).write(to: URL(fileURLWithPath: path))
        guard case .locked(_, let remaining?) = try store.status(of: "alice", policy: Self.policy) else {
            Issue.record("far-future records did not lock")
            return
        }
        #expect(remaining > .seconds(86_400 * 365))
        // A file that cannot be trusted refuses the login rather than reading as no failures.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/etc/hostname")
        #expect {
            try store.status(of: "alice", policy: Self.policy)
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect {
            try store.status(of: "alice", policy: Self.policy)
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        try FileManager.default.removeItem(atPath: path)
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        chmod(path, 0o666)
        #expect {
            try store.status(of: "alice", policy: Self.policy)
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
    }

    @Test func anOpenableDirectoryIsRequired() throws {
        let parent = temporaryDirectory("gatekeeper-faillock")
        chmod(parent, 0o777)
        #expect { try FaillockStore(directory: parent + "/tally") } throws: {
            ($0 as? AuthError)?.code == .providerUnavailable
        }
        let link = temporaryDirectory("gatekeeper-faillock") + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/tmp")
        #expect { try FaillockStore(directory: link) } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
    }

    @Test func namesThatMatchNoAccountAreBoundedAndNeverWrittenDown() throws {
        let store = try FaillockStore(directory: directory)
        let policy = LockoutPolicy(deny: 5)
        // Thousands of names: no file of their own, and the buckets stay bounded.
        for index in 0..<3000 {
            _ = try store.recordFailure(
                of: LockoutAccount("probe-\(index)", known: false), source: .service("t"), policy: policy)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        let buckets = try FileManager.default.contentsOfDirectory(atPath: directory + ".unknown")
        #expect(buckets.count <= 1025)
        let bytes = try buckets.reduce(0) { total, name in
            total + (try FileManager.default.attributesOfItem(atPath: directory + ".unknown/" + name)[.size] as! Int)
        }
        #expect(bytes <= 1024 * 64 * 64 + 32)
        for name in buckets where name != "key" {
            let contents = try Data(contentsOf: URL(fileURLWithPath: directory + ".unknown/" + name))
            #expect(!String(decoding: contents, as: UTF8.self).contains("probe-"))
        }
        // An unknown name locks after deny failures as an account does, so the answers do not differ.
        let fresh = try FaillockStore(directory: temporaryDirectory("gatekeeper-faillock") + "/tally")
        for attempt in 1...5 {
            let unknown = try fresh.recordFailure(
                of: LockoutAccount("nobody-here", known: false), source: .service("t"), policy: policy)
            let known = try fresh.recordFailure(
                of: LockoutAccount("alice", known: true), source: .service("t"), policy: policy)
            #expect(unknown.isLocked == known.isLocked && unknown.isLocked == (attempt == 5))
        }
        #expect(try fresh.status(of: LockoutAccount("nobody-here", known: false), policy: policy).isLocked)
        // An account a backend names is judged by its own file alone, never by the names that match none:
        // failures of unknown names cannot lock it.
        #expect(try fresh.status(of: LockoutAccount("nobody-here", known: true), policy: policy) == .open(failures: 0))
        // A name no look-up recognised is counted among such names even when it has a file of its own (an
        // account since deleted, or one a success gave a file): every spelling a loose backend matches to one
        // account keeps one count, and the file never starts a second one.
        try fresh.unlock("alice")
        _ = try fresh.recordFailure(of: LockoutAccount("alice", known: false), source: .service("t"), policy: policy)
        _ = try fresh.recordFailure(of: LockoutAccount("ALICE", known: false), source: .service("t"), policy: policy)
        #expect(try fresh.failures(of: "alice").isEmpty)
        #expect(try fresh.status(of: LockoutAccount("Alice", known: false), policy: policy) == .open(failures: 2))
        // A success clears both.
        try fresh.recordSuccess(of: "alice")
        #expect(try fresh.status(of: LockoutAccount("ALICE", known: false), policy: policy) == .open(failures: 0))
    }

    /// Names that match no account share bucket files but never counts: five failures of other names in the
    /// victim's bucket leave the victim's right password working, a spray of thousands of names locks nobody,
    /// and `--unlock` frees a name counted in a bucket.
    @Test func unknownNamesInOneBucketCountApart() throws {
        let store = try FaillockStore(directory: directory)
        let policy = LockoutPolicy(deny: 5)
        func unknown(_ name: String) -> LockoutAccount { LockoutAccount(name, known: false) }
        func bucket(_ name: String) throws -> String {
            store.bucketName(of: try FaillockStore.folded(unknown(name)))
        }
        let victim = try bucket("victim")
        let neighbours = try (0..<100_000).lazy.map { "n\($0)" }.filter { try bucket($0) == victim }.prefix(5)
        try #require(neighbours.count == 5)
        for name in neighbours {
            _ = try store.recordFailure(of: unknown(name), source: .service("t"), policy: LockoutPolicy(deny: 1))
        }
        #expect(try store.status(of: unknown("victim"), policy: policy) == .open(failures: 0))
        for index in 0..<3_000 {
            _ = try store.recordFailure(of: unknown("spray-\(index)"), source: .service("t"), policy: policy)
        }
        #expect(try store.status(of: unknown("victim"), policy: policy) == .open(failures: 0))
        // Each bucket stays bounded.
        for name in try FileManager.default.contentsOfDirectory(atPath: directory + ".unknown") where name != "key" {
            let size = try FileManager.default.attributesOfItem(atPath: directory + ".unknown/" + name)[.size] as! Int
            #expect(size <= 64 * 64, "\(name): \(size) bytes")
        }
        // The victim's own failures still lock it, and an unlock frees it.
        for _ in 0..<5 { _ = try store.recordFailure(of: unknown("victim"), source: .service("t"), policy: policy) }
        #expect(try store.status(of: unknown("victim"), policy: policy).isLocked)
        try store.unlock("victim")
        #expect(try store.status(of: unknown("victim"), policy: policy) == .open(failures: 0))
    }

    @Test func aLockedNameIsRefusedBeforeAnyProviderIsAsked() async throws {
        let store = try FaillockStore(directory: directory)
        let provider = StubAuthProvider(accounts: ["alice": ("wonderland", [])])
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: Self.policy, failDelay: .zero), lockout: store)
        for _ in 0..<3 {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials("alice", "no"))
            }
        }
        #expect(provider.authenticationCount == 3)
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "wonderland"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        #expect(provider.authenticationCount == 3)
        // Another gatekeeper (another run of a tool) on the same directory refuses too.
        let later = Gatekeeper(
            provider: provider, configuration: .init(lockout: Self.policy, failDelay: .zero),
            lockout: try FaillockStore(directory: directory))
        await #expect {
            try await later.signIn(credentials("alice", "wonderland"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        #expect(provider.authenticationCount == 3)
    }

    /// Cancelled before the password reached the backend: nothing was presented, so nothing was counted —
    /// not while the prompt waits (a prompt is not a presentation), not after the cancellation, not if the
    /// process were killed there.
    @Test func aLoginCancelledBeforeThePasswordIsNotCounted() async throws {
        let store = try FaillockStore(directory: directory)
        let provider = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            return .rejected(.wrongCredentials)
        }
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: Self.policy, failDelay: .zero), lockout: store)
        let conversation = ScriptedConversation(.text("alice"), .hang)
        let login = Task { try await gatekeeper.signIn(conversation: conversation) }
        #expect(await eventually { conversation.questionCount == 2 })
        // Nothing counted while it waits…
        #expect(try store.status(of: LockoutAccount("alice", known: false), policy: Self.policy) == .open(failures: 0))
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        // …nor after.
        #expect(try store.status(of: LockoutAccount("alice", known: false), policy: Self.policy) == .open(failures: 0))
        #expect(tallyBytes("alice").isEmpty)
    }

    /// Cancelled after the password reached the backend (a PAM module waiting its fail delay has told a
    /// wrong password by not answering at once): the attempt stands, so cancelling cannot buy free guesses.
    @Test func aLoginCancelledAfterThePasswordIsCounted() async throws {
        let store = try FaillockStore(directory: directory)
        let provider = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            do { try await Task.sleep(for: .seconds(3600)) } catch { throw .cancelled }
            return .rejected(.wrongCredentials)
        }
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: Self.policy, failDelay: .zero), lockout: store)
        for round in 1...3 {
            let login = Task { try await gatekeeper.signIn(try credentials("alice", "guess-\(round)")) }
            #expect(await eventually { provider.authenticationCount == round })
            login.cancel()
            await #expect(throws: AuthError.cancelled) { try await login.value }
        }
        #expect(
            await eventually {
                (try? store.status(of: LockoutAccount("alice", known: false), policy: Self.policy))?.isLocked == true
            })
    }

    /// gatekeeper-run's lockout holds across runs: a script cannot guess faster than the lockout allows.
    @Test func gatekeeperRunLocksAcrossRunsUntilUnlocked() throws {
        let state = temporaryDirectory("gatekeeper-faillock")
        let configuration = state + "/gatekeeper.conf"
        try "lockout deny=3 unlock=10m\ndelay 0\nrequired mock delay=0\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        func attempt(_ password: String) throws -> RunResult {
            try run(
                HostProtectionTests.gatekeeperRun,
                [
                    "--config", configuration, "--state-dir", state, "--user", "bob", "--password-stdin", "--", "echo",
                    "ran",
                ],
                input: password + "\n")
        }
        for _ in 0..<3 { #expect(try attempt("guess").status == 77) }
        let locked = try attempt("builder")
        #expect(locked.status == 77 && locked.stdout.isEmpty)
        #expect(locked.stderr.contains("locked until") && locked.stderr.contains("try again in"))
        let unlock = try run(
            HostProtectionTests.gatekeeperRun, ["--config", configuration, "--state-dir", state, "--unlock", "bob"],
            input: "")
        #expect(unlock.status == 0 && unlock.stdout.contains("bob"))
        // Names the backend does not know are refused (65) and get no file; without a backend, a name that
        // cannot name a file is refused by the store (69).
        for (name, status, withBackend) in [
            ("a/b", Int32(65), true), ("nosuchuser", 65, true), ("bob\u{1B}[2J", 65, true), ("", 65, true),
            ("a/b", 69, false),
        ] {
            let refused = try run(
                HostProtectionTests.gatekeeperRun,
                (withBackend ? ["--config", configuration] : []) + ["--state-dir", state, "--unlock", name], input: "")
            #expect(refused.status == status, "--unlock \(name.debugDescription)")
            #expect(!refused.stderr.contains("\u{1B}"))
        }
        #expect(!FileManager.default.fileExists(atPath: state + "/faillock/nosuchuser"))
        #expect(try attempt("builder").stdout == "ran\n")
    }

    /// Several processes failing at once: every failure is counted, none lost to a race.
    @Test func failuresFromManyProcessesAtOnceAreAllCounted() throws {
        let (processes, failures) = (6, 10)
        let state = temporaryDirectory("gatekeeper-faillock")
        let configuration = state + "/gatekeeper.conf"
        try """
        attempts 10
        lockout deny=1000 interval=1h unlock=10m dir=\(state)/tally
        delay 0
        required mock delay=0

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let runs = try (0..<processes).map { _ in
            try Spawned(
                HostProtectionTests.gatekeeperRun, ["--config", configuration, "--state-dir", state, "--", "true"])
        }
        for run in runs { run.write(String(repeating: "alice\nwrong\n", count: failures)) }
        for run in runs { #expect(run.finish().status == 77) }
        let store = try FaillockStore(directory: state + "/tally")
        let recorded = try store.failures(of: "alice")
        #expect(recorded.count == processes * failures)
        #expect(recorded.allSatisfy { $0.valid })
    }

    /// Medium 4, as the review ran it: thirty gatekeeper-run processes guessing at once with deny=5. Each
    /// attempt is counted before its check, so five reach the backend (five `signInFailed` records) and
    /// the other twenty-five are refused as locked out without a check.
    @Test func thirtyProcessesGuessingAtOnceGetFiveChecks() throws {
        let state = temporaryDirectory("gatekeeper-faillock")
        let configuration = state + "/gatekeeper.conf"
        try """
        attempts 1
        lockout deny=5 interval=1h unlock=10m dir=\(state)/tally
        delay 0
        audit json path=\(state)/audit.jsonl
        required mock delay=0.3

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let runs = try (0..<30).map { _ in
            try Spawned(
                HostProtectionTests.gatekeeperRun,
                ["--config", configuration, "--user", "alice", "--password-stdin", "--", "true"])
        }
        for run in runs { run.write("guess\n") }
        let statuses = runs.map { $0.finish().status }
        #expect(statuses.allSatisfy { $0 == 77 })
        let events = try String(contentsOfFile: state + "/audit.jsonl", encoding: .utf8).split(separator: "\n")
        let checked = events.filter { $0.contains("\"event\":\"signInFailed\"") }.count
        let refused = events.filter { $0.contains("\"event\":\"lockedOut\"") }.count
        #expect(checked == 5, "\(checked) of 30 simultaneous guesses were checked with deny=5")
        #expect(refused >= 25)
        #expect(try FaillockStore(directory: state + "/tally").failures(of: "alice").count == 5)
    }
}
