import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import GatekeeperSupport
import HostProtection
import PasswordHashing
import TestSupport
import Testing

/// The one admission path, attacked: lockout counted against the account (not the spelling), before the
/// check, across processes, failing closed; the uid 0 exemption only for system accounts; names that are
/// not accounts never written down.
@Suite(.timeLimit(.minutes(2)))
struct AdmissionTests {
    let directory = temporaryDirectory("gatekeeper-admission") + "/tally"

    /// A directory that matches `ALICE` and fullwidth `ａｌｉｃｅ` to alice (as slapd does), password
    /// wonderland; it reports its own spelling, as a real backend does.
    static func caseFolding(delay: Duration = .zero, calls: Locked<Int> = Locked(0)) -> StubAuthProvider {
        @Sendable func canonical(_ name: String) -> String? {
            let folded = String(
                String.UnicodeScalarView(
                    name.unicodeScalars.map { scalar in
                        // Fullwidth forms U+FF01…U+FF5E fold to ASCII, as NFKC does.
                        (0xFF01...0xFF5E).contains(scalar.value) ? Unicode.Scalar(scalar.value - 0xFEE0)! : scalar
                    })
            ).lowercased()
            return folded == "alice" ? "alice" : nil
        }
        return StubAuthProvider(lookup: { canonical($0).map { .known(canonicalName: $0) } ?? .unknown }) {
            request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            calls.withLock { $0 += 1 }
            if delay > .zero { try? await Task.sleep(for: delay) }
            guard let account = canonical(request.username) else { return .notMine }
            guard password == Secret(copying: "wonderland".utf8) else {
                return .rejected(.wrongCredentials, canonicalUsername: account)
            }
            return .authenticated(Identity(username: account, provider: "stub"))
        }
    }

    func gatekeeper(_ provider: any AuthProvider, deny: Int = 3, store: FaillockStore? = nil) throws -> Gatekeeper {
        Gatekeeper(
            provider: provider, configuration: .init(lockout: LockoutPolicy(deny: deny), failDelay: .zero),
            lockout: try store ?? FaillockStore(directory: directory))
    }

    /// Serious 3: every spelling counts against one account, and a locked account answers the same
    /// whatever the password (no oracle).
    @Test func spellingsShareOneLockoutAndALockedAccountIsNoOracle() async throws {
        let gatekeeper = try gatekeeper(Self.caseFolding())
        for spelling in ["alice", "ALICE", "ａｌｉｃｅ"] {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials(spelling, "wrong"))
            }
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(files == ["alice"], "one tally, named by the account: \(files)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/alice")).count == 3 * 64)
        var answers: [AuthError] = []
        for (spelling, password) in [
            ("ALICE", "wrong"), ("ALICE", "wonderland"), ("ａｌｉｃｅ", "wonderland"), ("alice", "x"),
        ] {
            do {
                _ = try await gatekeeper.signIn(credentials(spelling, password))
                Issue.record("\(spelling) signed in while the account was locked")
            } catch let error as AuthError {
                answers.append(error)
            }
        }
        #expect(answers.allSatisfy { $0.code == .tooManyAttempts }, "\(answers)")
    }

    /// Medium 4: thirty guesses at once, from thirty gatekeepers each with its own store on the same
    /// directory (as thirty processes): at most `deny` reach the backend.
    @Test func parallelGuessesNeverPassTheLockout() async throws {
        let calls = Locked(0)
        let provider = Self.caseFolding(delay: .milliseconds(200), calls: calls)
        let gatekeepers = try (0..<30).map { _ in try gatekeeper(provider, deny: 5) }
        await withTaskGroup(of: Void.self) { group in
            for (index, gatekeeper) in gatekeepers.enumerated() {
                group.addTask {
                    _ = try? await gatekeeper.signIn(credentials(index % 2 == 0 ? "alice" : "ALICE", "guess"))
                }
            }
        }
        #expect(calls.withLock { $0 } == 5, "\(calls.withLock { $0 }) guesses were checked with deny=5")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/alice")).count == 5 * 64)
    }

    /// Medium 5: a lockout that cannot record the attempt refuses the login, the right password included,
    /// and the backend is never asked.
    @Test func anAttemptThatCannotBeCountedRefusesTheLogin() async throws {
        final class FullDisk: LockoutStore {
            func status(of account: LockoutAccount, policy: LockoutPolicy) -> LockoutStatus { .open(failures: 0) }
            func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
                -> LockoutAttempt
            {
                throw .providerUnavailable(reason: "No space left on device")
            }
            func withdraw(_ ticket: LockoutTicket) {}
            func settled(_ ticket: LockoutTicket) {}
            func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
                -> LockoutStatus
            {
                throw .providerUnavailable(reason: "No space left on device")
            }
            func recordSuccess(of account: String) {}
            func unlock(_ account: String) {}
        }
        let calls = Locked(0)
        let gatekeeper = Gatekeeper(
            provider: Self.caseFolding(calls: calls),
            configuration: .init(lockout: LockoutPolicy(deny: 3), failDelay: .zero), lockout: FullDisk())
        for _ in 0..<8 {
            await #expect {
                try await gatekeeper.signIn(credentials("alice", "wrong"))
            } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        }
        await #expect {
            try await gatekeeper.signIn(credentials("alice", "wonderland"))
        } throws: { ($0 as? AuthError)?.code == .providerUnavailable }
        #expect(calls.withLock { $0 } == 0)
    }

    /// Medium 6: uid 0's exemption is for system accounts only: a users-file account named root locks
    /// like any other; a system root (as PAM's look-up marks it) is exempt unless `even_deny_root`.
    @Test func onlyTheSystemsRootIsExempt() throws {
        let store = try FaillockStore(directory: directory)
        let policy = LockoutPolicy(deny: 2)
        let fileRoot = LockoutAccount("root")
        for _ in 0..<2 { _ = try store.recordFailure(of: fileRoot, source: .service("t"), policy: policy) }
        #expect(try store.status(of: fileRoot, policy: policy).isLocked)
        let systemRoot = LockoutAccount("root", isSystemAdministrator: true)
        #expect(try store.status(of: systemRoot, policy: policy) == .open(failures: 0))
        #expect(try store.status(of: systemRoot, policy: LockoutPolicy(deny: 2, evenDenyRoot: true)).isLocked)
    }

    /// Two wrong guesses for root with deny=2, then its right password (toor-2026): refused as locked out.
    func expectRootLocksAfterTwoGuesses(_ provider: any AuthProvider) async throws {
        let gatekeeper = try gatekeeper(provider, deny: 2)
        for _ in 0..<2 {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(credentials("root", "no"))
            }
        }
        await #expect {
            try await gatekeeper.signIn(credentials("root", "toor-2026"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    @Test func aUsersFileAccountNamedRootIsLockedOut() async throws {
        let users = temporaryDirectory("gatekeeper-root-file") + "/users"
        try UsersFileStore(path: users).addUser(
            "root", hash: try PasswordHash.make(Secret(copying: "toor-2026".utf8), scheme: .bcrypt), createFile: true)
        try await expectRootLocksAfterTwoGuesses(try FileAuthProvider(.init(path: users)))
    }

    /// From attacking the fix: in a stack of PAM (whose root is the system's) and a users file with an
    /// account of its own named root, the file's root is not exempt: guessing its password locks it.
    @Test func aFallbackStacksFileRootIsNotExempt() async throws {
        let users = temporaryDirectory("gatekeeper-root-stack") + "/users"
        try UsersFileStore(path: users).addUser(
            "root", hash: try PasswordHash.make(Secret(copying: "toor-2026".utf8), scheme: .bcrypt), createFile: true)
        let systemRoot = StubAuthProvider(
            name: "pam",
            lookup: { $0 == "root" ? .known(canonicalName: "root", isSystemAdministrator: true) : .unknown }
        ) { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            return .rejected(.wrongCredentials)
        }
        let stack = ProviderChain([
            .init(.sufficient, systemRoot), .init(.required, try FileAuthProvider(.init(path: users))),
        ])
        #expect(await stack.lookUpAccount("root") == .known(canonicalName: "root", isSystemAdministrator: false))
        try await expectRootLocksAfterTwoGuesses(stack)
        // A stack of the system's accounts only keeps pam_faillock's exemption.
        #expect(
            await ProviderChain([.init(.required, systemRoot)]).lookUpAccount("root")
                == .known(canonicalName: "root", isSystemAdministrator: true))
    }

    /// From attacking the fix: a backend that matches names loosely but cannot name the account
    /// beforehand (a checkpassword program that lowercases names, as vpopmail's does) got `deny` guesses per
    /// spelling. Such names are counted under their folded form: eight spellings, four guesses each, and
    /// three checks with deny=3 — in turn, and thirty spellings at once.
    @Test(arguments: [false, true])
    func aLooseBackendGetsDenyGuessesPerAccountNotPerSpelling(_ reportsItsSpelling: Bool) async throws {
        let calls = Locked(0)
        let loose = StubAuthProvider { request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            calls.withLock { $0 += 1 }
            try? await Task.sleep(for: .milliseconds(50))
            guard request.username.lowercased() == "alice" else { return .notMine }
            guard password == Secret(copying: "secret-2026".utf8) else {
                return .rejected(.wrongCredentials, canonicalUsername: reportsItsSpelling ? "alice" : nil)
            }
            return .authenticated(Identity(username: "alice", provider: "stub"))
        }
        let gatekeeper = try gatekeeper(loose)
        for spelling in ["alice", "Alice", "aLice", "alIce", "aliCe", "alicE", "ALice", "ＡＬＩＣＥ"] {
            for guess in 1...4 { _ = try? await gatekeeper.signIn(credentials(spelling, "guess-\(guess)")) }
        }
        #expect(calls.withLock { $0 } == 3, "\(calls.withLock { $0 }) guesses checked with deny=3")
        let gatekeepers = try (0..<30).map { _ in try self.gatekeeper(loose) }
        let spellings = (0..<30).map { index in
            String(
                "alice".enumerated().map { $0.offset == index % 5 ? Character($0.element.uppercased()) : $0.element })
        }
        await withTaskGroup(of: Void.self) { group in
            for (gatekeeper, spelling) in zip(gatekeepers, spellings) {
                group.addTask { _ = try? await gatekeeper.signIn(credentials(spelling, "guess")) }
            }
        }
        #expect(calls.withLock { $0 } == 3, "locked: no spelling reaches the backend")
    }

    /// From the second attack: a backend that compares names as NFKC and case folded (as Django does)
    /// matches mathematical letters, modifier letters and fullwidth forms to alice; the file store counts
    /// such names under Unicode's NFKC case fold, so twelve spellings get three checks with deny=3. (The
    /// spellings were checked with Python's `unicodedata.normalize("NFKC", s).casefold() == "alice"`.)
    @Test func spellingsAnNFKCBackendMatchesShareOneCount() async throws {
        let spellings = [
            "𝐚lice", "a𝐥ice", "𝑎lice", "al𝒊ce", "ali𝓬e", "alic𝔢", "𝕒𝕝𝕚𝕔𝕖", "𝖆lice", "ＡＬＩＣＥ", "ALICE", "Alice", "ᴬlice",
        ]
        let calls = Locked(0)
        let loose = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            calls.withLock { $0 += 1 }
            return spellings.contains(request.username) ? .rejected(.wrongCredentials) : .notMine
        }
        let gatekeeper = try gatekeeper(loose)
        for spelling in spellings { _ = try? await gatekeeper.signIn(credentials(spelling, "guess")) }
        #expect(calls.withLock { $0 } == 3, "\(calls.withLock { $0 }) guesses checked with deny=3")
        #expect(Set(try spellings.map { try FaillockStore.folded(LockoutAccount($0, known: false)) }) == ["alice"])
    }

    /// From attacking the fix: a bucket held 64 records, so a `deny` above 64 never locked a name counted
    /// in one (every account behind a checkpassword program until its first success).
    @Test func aLargeDenyStillLocksANameCountedInABucket() throws {
        let store = try FaillockStore(directory: directory)
        let policy = LockoutPolicy(deny: 70)
        let name = LockoutAccount("never-signed-in", known: false)
        for _ in 0..<69 { _ = try store.recordFailure(of: name, source: .service("t"), policy: policy) }
        #expect(try store.status(of: name, policy: policy) == .open(failures: 69))
        #expect(try store.recordFailure(of: name, source: .service("t"), policy: policy).isLocked)
    }

    /// Medium 7: a backend that answers an unknown name as a wrong password (pam_unix then pam_deny,
    /// checkpassword) leaves no file named after the typed text, and no audit record carries it.
    @Test func aNameThatIsNoAccountIsNeverWrittenDown() async throws {
        let secretish = "correct-horse-battery"
        let audit = temporaryDirectory("gatekeeper-admission-audit") + "/audit.jsonl"
        let log = try JSONAuditLog(path: audit)
        let provider = StubAuthProvider { request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            return .rejected(.wrongCredentials)
        }
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: LockoutPolicy(deny: 3), failDelay: .zero), audit: log,
            lockout: try FaillockStore(directory: directory))
        for _ in 0..<4 { _ = try? await gatekeeper.signIn(credentials(secretish, "x")) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        for place in [directory, directory + ".unknown"] {
            #expect(try FileManager.default.attributesOfItem(atPath: place)[.posixPermissions] as? Int == 0o700)
            for name in try FileManager.default.contentsOfDirectory(atPath: place) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: place + "/" + name))
                #expect(!String(decoding: bytes, as: UTF8.self).contains(secretish))
            }
        }
        let records = try String(contentsOfFile: audit, encoding: .utf8)
        #expect(!records.contains(secretish))
        #expect(records.contains("lockedOut"), "the unknown name still locks after deny failures")
    }

    /// Serious, from the second attack: a backend that waits after a wrong password (pam_unix's fail
    /// delay) tells a wrong guess by its silence; cancelling then must not take the attempt back, or the
    /// guesses are free. Four guesses cancelled while the backend waits, deny=3: the account is locked.
    @Test func cancellingWhileTheBackendWaitsDoesNotUncountTheGuess() throws {
        let programs = try trustedDirectory()
        let checker = programs + "/slow-when-wrong"
        // A wait no other process on the machine uses: the sign that the checker has the password.
        let wait = "31.\(Int.random(in: 100_000...999_999))"
        try """
        #!/bin/bash
        # checkpassword: right password at once, a wrong one after a long wait.
        IFS= read -r -d '' user <&3; IFS= read -r -d '' password <&3
        [ "$password" = "wonderland" ] && exit 0
        sleep \(wait)
        exit 1

        """.write(toFile: checker, atomically: true, encoding: .utf8)
        chmod(checker, 0o755)
        let state = temporaryDirectory("gatekeeper-admission-cancel")
        let configuration = state + "/gatekeeper.conf"
        try """
        delay 0
        lockout deny=3 interval=1h unlock=10m dir=\(state)/tally
        cache timeout=0
        required checkpassword program=\(checker) timeout=60

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        chmod(configuration, 0o600)
        for guess in 1...3 {
            let tool = try Spawned(
                HostProtectionTests.gatekeeperRun,
                ["--config", configuration, "--user", "alice", "--password-stdin", "--", "true"])
            tool.write("guess-\(guess)\n")
            // The helper has the password once it sleeps: then the attacker gives up on this guess.
            #expect(eventually(within: 10) { Self.isRunning(["sleep", wait]) })
            tool.interrupt()
            #expect(tool.finish().status == 130)
        }
        let right = try run(
            HostProtectionTests.gatekeeperRun,
            ["--config", configuration, "--user", "alice", "--password-stdin", "--", "echo", "in"],
            input: "wonderland\n")
        #expect(right.status == 77 && right.stdout.isEmpty, "\(right.stderr)")
        #expect(right.stderr.contains("Too many failed attempts"), "\(right.stderr)")
    }

    /// Whether a process with exactly this command line is running.
    static func isRunning(_ command: [String]) -> Bool {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).contains { pid in
            guard let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } == command
        }
    }
}
