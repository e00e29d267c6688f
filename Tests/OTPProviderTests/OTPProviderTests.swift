import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import OTPProvider
import PAMProvider
import PasswordHashing
import ProviderPlugins
import TestSupport
import Testing

/// The RFC test vectors, oathtool, and pam_oath itself decide what is right.
@Suite(.timeLimit(.minutes(2)))
struct OTPProviderTests {
    static let rfcSecret = Array("12345678901234567890".utf8)
    static let rfcSecretHex = "3132333435363738393031323334353637383930"

    /// A users file of pam_oath's format holding `lines`, private to this user.
    static func usersFile(_ lines: String) throws -> String {
        let path = temporaryDirectory("gatekeeper-otp") + "/users.oath"
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    @Test func hotpMatchesRFC4226() {
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489",
        ]
        for (counter, code) in expected.enumerated() {
            #expect(OneTimeCode.hotp(secret: Self.rfcSecret, counter: UInt64(counter), digits: 6) == code)
        }
    }

    @Test func totpMatchesRFC6238InEveryAlgorithm() {
        let seeds: [OneTimeCode.Algorithm: [UInt8]] = [
            .sha1: Array("12345678901234567890".utf8),
            .sha256: Array("12345678901234567890123456789012".utf8),
            .sha512: Array("1234567890123456789012345678901234567890123456789012345678901234".utf8),
        ]
        let vectors: [(Int64, String, String, String)] = [
            (59, "94287082", "46119246", "90693936"),
            (1_111_111_109, "07081804", "68084774", "25091201"),
            (1_111_111_111, "14050471", "67062674", "99943326"),
            (1_234_567_890, "89005924", "91819424", "93441116"),
            (2_000_000_000, "69279037", "90698825", "38618901"),
            (20_000_000_000, "65353130", "77737706", "47863826"),
        ]
        for (time, sha1, sha256, sha512) in vectors {
            #expect(OneTimeCode.totp(secret: seeds[.sha1]!, time: time, digits: 8, algorithm: .sha1) == sha1)
            #expect(OneTimeCode.totp(secret: seeds[.sha256]!, time: time, digits: 8, algorithm: .sha256) == sha256)
            #expect(OneTimeCode.totp(secret: seeds[.sha512]!, time: time, digits: 8, algorithm: .sha512) == sha512)
        }
    }

    /// A fresh file for each provider: a code is good once.
    static let conformance = ProviderConformance(
        fixture: .init(
            username: "alice", password: "755224", wrongPassword: "000000", singleUse: true, asksVisibly: true)
    ) {
        OTPAuthProvider(usersFile: try usersFile("HOTP/E/6 alice - \(rfcSecretHex)\n"), window: 3)
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        let problems = await Self.conformance.run(check)
        #expect(problems.isEmpty, "\(problems)")
    }

    func login(_ provider: any AuthProvider, _ user: String, _ code: String) async throws -> AuthOutcome {
        try await provider.authenticate(AuthRequest(username: user, conversation: ScriptedConversation(.text(code))))
    }

    @Test func acceptsOathtoolsCodesInTheWindowOnceAndNoOthers() async throws {
        let file = try Self.usersFile("HOTP/T30/6 alice - \(Self.rfcSecretHex)\n")
        let provider = OTPAuthProvider(usersFile: file, window: 2)
        func oathtool(_ when: String) throws -> String {
            let (status, output) = try shell("oathtool --totp -N '\(when)' \(Self.rfcSecretHex)")
            #expect(status == 0, "oathtool: \(output)")
            return output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // Outside the window (two steps of 30 s either side): refused.
        #expect(try await login(provider, "alice", try oathtool("now + 150 seconds")) == .rejected(.wrongCredentials))
        // Inside it, an earlier code, then the current one; each once.
        let earlier = try oathtool("now - 40 seconds")
        try expectAuthenticated(try await login(provider, "alice", earlier), "a code from 40 s ago was refused")
        #expect(try await login(provider, "alice", earlier) == .rejected(.wrongCredentials))
        let now = try oathtool("now")
        try expectAuthenticated(try await login(provider, "alice", now), "the current code was refused")
        #expect(try await login(provider, "alice", now) == .rejected(.wrongCredentials))
        // A code from before the last one used is a replay, even inside the window.
        #expect(try await login(provider, "alice", earlier) == .rejected(.wrongCredentials))
    }

    @Test func aUserWithoutAnEntryIsNotMineButIsAskedAllTheSame() async throws {
        let provider = OTPAuthProvider(usersFile: try Self.usersFile("HOTP/E/6 alice - \(Self.rfcSecretHex)\n"))
        let conversation = ScriptedConversation(.text("123456"))
        #expect(try await provider.authenticate(AuthRequest(username: "bob", conversation: conversation)) == .notMine)
        #expect(conversation.events == [.asked("Verification code: ")])
        // An empty answer cancels the login.
        await #expect(throws: AuthError.cancelled) {
            try await provider.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.text(""))))
        }
    }

    @Test func anUnsafeFileIsUnavailable() async throws {
        let file = try Self.usersFile("HOTP/E/6 alice - \(Self.rfcSecretHex)\n")
        chmod(file, 0o666)
        guard case .unavailable = try await login(OTPAuthProvider(usersFile: file), "alice", "755224") else {
            Issue.record("a users file others may write was used")
            return
        }
    }

    /// pam_oath through the PAM provider, on the same file: each refuses the code the other accepted.
    @Test func pamOathAndThisProviderShareTheFileAndItsReplayProtection() async throws {
        let directory = temporaryDirectory("gatekeeper-pam-oath")
        let file = directory + "/users.oath"
        try "HOTP/E/6 alice - \(Self.rfcSecretHex)\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        try "auth required pam_oath.so usersfile=\(file) window=5\naccount required pam_permit.so\n"
            .write(toFile: directory + "/gk-oath", atomically: true, encoding: .utf8)
        let pam = try PAMAuthProvider(.init(service: "gk-oath", configurationDirectory: directory))
        let ours = OTPAuthProvider(usersFile: file, window: 5)
        func code(_ counter: UInt64) -> String {
            OneTimeCode.hotp(secret: Self.rfcSecret, counter: counter, digits: 6)!
        }

        try expectAuthenticated(try await login(pam, "alice", code(0)), "pam_oath refused the first code")
        #expect(try await login(ours, "alice", code(0)) == .rejected(.wrongCredentials))
        try expectAuthenticated(try await login(ours, "alice", code(1)), "this provider refused the next code")
        guard case .rejected = try await login(pam, "alice", code(1)) else {
            Issue.record("pam_oath accepted a code this provider had accepted")
            return
        }
        // And both agree on a code further ahead, inside the window.
        try expectAuthenticated(try await login(pam, "alice", code(4)), "pam_oath refused a code in its window")
        #expect(try await login(ours, "alice", code(3)) == .rejected(.wrongCredentials))
    }
}

/// Two factors in a stack, scripted through gatekeeper-run: a password entry, then a code entry.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TwoFactorStackTests {
    let directory = temporaryDirectory("gatekeeper-2fa")

    func configuration() throws -> String {
        let users = directory + "/users"
        try UsersFileStore(path: users).addUser(
            "erin", hash: try PasswordHash.make(Secret(copying: "erin-2026".utf8), scheme: .bcrypt),
            groups: ["staff"], displayName: "Erin Example", createFile: true)
        let oath = directory + "/users.oath"
        try "HOTP/E/6 erin - \(OTPProviderTests.rfcSecretHex)\n".write(toFile: oath, atomically: true, encoding: .utf8)
        chmod(oath, 0o600)
        let path = directory + "/two-factor.conf"
        try """
        attempts 1
        delay 0
        required file users=\(users)
        required otp usersfile=\(oath)

        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    func gatekeeperRun(_ config: String, _ input: String, _ arguments: [String] = []) throws -> RunResult {
        try run(
            builtExecutable("gatekeeper-run"),
            ["--config", config, "--state-dir", directory + "/state"] + arguments + ["--", "echo", "in"],
            input: input)
    }

    /// Medium 8: the identity is the password entry's — its display name and groups — not the code's; the
    /// trace says which entry gave it.
    @Test func theIdentityIsThePasswordEntrysNotTheCodes() throws {
        let config = try configuration()
        let admitted = try gatekeeperRun(config, "erin\nerin-2026\n\(code(0))\n", ["--group", "staff", "--explain"])
        #expect(admitted.status == 0 && admitted.stdout == "in\n", "\(admitted.stderr)")
        #expect(admitted.stderr.contains("identity: 1:file"), "\(admitted.stderr)")
        #expect(OTPAuthProvider(usersFile: directory + "/users.oath").establishesIdentity == false)
    }

    /// Medium 12: the same code given to many processes at the same instant admits exactly one of them —
    /// each of six new codes once, and a used one never again.
    @Test func oneCodeAdmitsOneProcessHoweverManyPresentItAtOnce() throws {
        let config = try configuration()
        for counter in 0..<6 {
            let admitted = try admittedAtOnce(config, code: code(UInt64(counter)), state: "state-\(counter)")
            #expect(admitted == 1, "code \(counter): \(admitted) of 10 admitted")
        }
        let replayed = try admittedAtOnce(config, code: code(0), state: "state-replayed")
        #expect(replayed == 0, "a used code: \(replayed) of 10 admitted")
    }

    /// How many of ten gatekeeper-run processes, started together and then all given `code` together,
    /// ran their command.
    func admittedAtOnce(_ config: String, code: String, state: String) throws -> Int {
        let arguments = ["--config", config, "--state-dir", directory + "/" + state, "--", "true"]
        let processes = try (0..<10).map { _ in try Spawned(builtExecutable("gatekeeper-run"), arguments) }
        for process in processes { process.write("erin\nerin-2026\n" + code + "\n") }
        return processes.map { $0.finish().status }.filter { $0 == 0 }.count
    }

    func code(_ counter: UInt64) -> String {
        OneTimeCode.hotp(secret: OTPProviderTests.rfcSecret, counter: counter, digits: 6)!
    }

    /// The same stack in the REPL: the code is asked after the password, right or wrong; an empty code
    /// (as Ctrl-C or Ctrl-D at the prompt) cancels and falls back to the tab the person was on.
    @Test func theREPLAsksBothAndFallsBackWhenTheCodeIsCancelled() throws {
        let config = try configuration()
        let state = ScratchDirectory("gatekeeper-repl-state")
        let repl = builtExecutable("gatekeeper-repl")
        let arguments = ["--config", config, "--state-dir", state.path]
        let admitted = try run(repl, arguments, input: "courses\nerin\nerin-2026\n\(code(0))\nwhoami\n")
        #expect(admitted.stdout.contains("Password: \nVerification code: \nCourses for"), "\(admitted.stdout)")
        let wrongPassword = try run(repl, arguments, input: "contact\ncourses\nerin\nwrong\n\(code(1))\n")
        #expect(wrongPassword.stdout.contains("Password: \nVerification code: \n"))
        #expect(wrongPassword.stdout.contains("Back to contact."))
        let cancelled = try run(repl, arguments, input: "contact\ncourses\nerin\nerin-2026\n\nwhoami\n")
        #expect(cancelled.stdout.contains("Login cancelled. Back to contact."))
        #expect(cancelled.stdout.contains("Not signed in."))
    }

    /// At a terminal: Ctrl-C at the code prompt cancels the login and falls back.
    @Test func ctrlCAtTheCodePromptFallsBack() throws {
        let config = try configuration()
        let state = ScratchDirectory("gatekeeper-repl-state")
        let repl = try TerminalSession(
            builtExecutable("gatekeeper-repl"), ["--config", config, "--state-dir", state.path])
        try repl.waitFor("]› ")
        repl.type("contact\r")
        try repl.waitFor("Registrar")
        repl.type("courses\r")
        try repl.waitFor("Username: ")
        repl.type("erin\r")
        try repl.waitFor("Password: ")
        repl.type("erin-2026\r")
        try repl.waitFor("Verification code: ")
        repl.type("\u{3}")
        try repl.waitFor("Login cancelled. Back to contact.")
        let offset = repl.output.count
        repl.type("whoami\r")
        try repl.waitFor("Not signed in.", after: offset)
        repl.type("quit\r")
        #expect(repl.finish() == 0)
    }

    @Test func bothFactorsAdmitAndEitherAloneDoesNot() throws {
        let config = try configuration()
        let admitted = try gatekeeperRun(config, "erin\nerin-2026\n\(code(0))\n")
        #expect(admitted.status == 0 && admitted.stdout == "in\n", "\(admitted.stderr)")
        #expect(admitted.stderr.contains("Password: \nVerification code: "))
        // A wrong password still asks for the code: nothing tells which factor failed.
        let wrongPassword = try gatekeeperRun(config, "erin\nwrong\n\(code(1))\n")
        #expect(wrongPassword.status == 77 && wrongPassword.stderr.contains("Verification code: "))
        #expect(wrongPassword.stderr.contains("The user name or password is incorrect."))
        let wrongCode = try gatekeeperRun(config, "erin\nerin-2026\n000000\n")
        #expect(wrongCode.status == 77 && wrongCode.stdout.isEmpty)
        // A code used once is refused the second time.
        let replayed = try gatekeeperRun(config, "erin\nerin-2026\n\(code(0))\n")
        #expect(replayed.status == 77)
        // No answer at the code prompt (Ctrl-D) cancels the whole login.
        let cancelled = try gatekeeperRun(config, "erin\nerin-2026\n")
        #expect(cancelled.status == 130 && cancelled.stdout.isEmpty)
    }
}

/// Enrolment: gatekeeper-passwd writes pam_oath's entry and shows what an authenticator app scans.
@Suite(.timeLimit(.minutes(1)))
struct EnrolmentTests {
    let file = temporaryDirectory("gatekeeper-enrol") + "/users.oath"
    let passwd = builtExecutable("gatekeeper-passwd")

    /// Medium 12: a name that would make two fields of the file (or a comment) is refused, and the file
    /// is left as it was: no entry for carol with the requester's secret.
    @Test(arguments: ["carol - 31323334353637383930", "carol\t-", "#carol", " carol", "carol\u{85}x"])
    func aNameThatIsNotOneFieldIsRefused(_ name: String) throws {
        #expect(try run(passwd, ["otp-add", file, "dave", "--create"], input: "").status == 0)
        let before = try String(contentsOfFile: file, encoding: .utf8)
        let added = try run(passwd, ["otp-add", file, name], input: "")
        #expect(added.status == 65, "\(added.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == before)
        let listed = try run(passwd, ["otp-list", file], input: "")
        #expect(!listed.stdout.contains("carol"))
        // A refusal of the name, not a fault of the file.
        #expect {
            try OATHUsersFileStore(path: file).add(
                name, kind: .totp(step: 30), digits: 6, secret: OATHUsersFileStore.newSecret(), createFile: false)
        } throws: { ($0 as? OATHFileError)?.code == .refused }
    }

    @Test func anEnrolledAppsCodesSignIn() async throws {
        let added = try run(passwd, ["otp-add", file, "erin", "--create"], input: "")
        #expect(added.status == 0, "\(added.stderr)")
        let uri = try #require(added.stdout.split(separator: "\n").last.map(String.init))
        #expect(uri.hasPrefix("otpauth://totp/gatekeeper:erin?secret="))
        #expect(uri.contains("&period=30") && uri.contains("&digits=6") && uri.contains("&algorithm=SHA1"))
        let base32 = try #require(uri.split(separator: "secret=").last?.split(separator: "&").first.map(String.init))
        // The QR code is libqrencode's, drawn as the qrencode tool draws it.
        let (status, drawn) = try shell("qrencode -t UTF8 -m 2 -l M '\(uri)'")
        #expect(status == 0)
        #expect(added.stdout.contains(drawn.trimmingCharacters(in: .newlines)))
        // An authenticator app (here oathtool, from the URI's base32 secret) makes codes the provider accepts.
        let code = try shell("oathtool --totp -b \(base32)").output.trimmingCharacters(in: .whitespacesAndNewlines)
        let outcome = try await OTPAuthProvider(usersFile: file).authenticate(
            AuthRequest(username: "erin", conversation: ScriptedConversation(.text(code))))
        try expectAuthenticated(outcome, "the enrolled code was refused: \(outcome)")
        // The file is pam_oath's: mode 0600, one entry.
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        #expect(try run(passwd, ["otp-list", file], input: "").stdout.hasPrefix("erin\tHOTP/T30/6\n"))
    }

    @Test func entriesAreAddedOnceAndDeleted() throws {
        #expect(
            try run(passwd, ["otp-add", file, "erin", "--hotp", "--digits", "8", "--create"], input: "").status == 0)
        let again = try run(passwd, ["otp-add", file, "erin"], input: "")
        #expect(again.status == 65 && again.stderr.contains("has an entry already"))
        #expect(try run(passwd, ["otp-add", file, "fay", "--hotp", "--algorithm", "sha256"], input: "").status == 65)
        #expect(try run(passwd, ["otp-add", file, "fay", "--algorithm", "md5"], input: "").status == 64)
        // --digits follows the one grammar of counts: digits only, 6 to 8.
        for digits in ["9", "+7", "7.0", "07x", "99999999999999999999"] {
            let refused = try run(passwd, ["otp-add", file, "fay", "--digits", digits], input: "")
            #expect(refused.status == 64 && refused.stderr.contains("--digits takes a number from 6 to 8"), "\(digits)")
        }
        #expect(try run(passwd, ["otp-list", file], input: "").stdout == "erin\tHOTP/E/8\n")
        #expect(try run(passwd, ["otp-delete", file, "erin"], input: "").status == 0)
        #expect(try run(passwd, ["otp-list", file], input: "").stdout.isEmpty)
        #expect(try run(passwd, ["otp-delete", file, "erin"], input: "").status == 65)
    }

    /// SHA-256 and SHA-512 entries: this package's extension of pam_oath's format, which pam_oath skips
    /// and liboath keeps intact when it rewrites the file for another user.
    @Test(arguments: ["sha256", "sha512"])
    func strongerAlgorithmsAreThisPackagesOwnEntries(_ algorithm: String) async throws {
        let added = try run(passwd, ["otp-add", file, "erin", "--algorithm", algorithm, "--create"], input: "")
        #expect(added.status == 0 && added.stderr.contains("pam_oath skips it"))
        let uri = try #require(added.stdout.split(separator: "\n").last.map(String.init))
        #expect(uri.contains("&algorithm=\(algorithm.uppercased())"))
        let base32 = try #require(uri.split(separator: "secret=").last?.split(separator: "&").first.map(String.init))
        let code = try shell("oathtool --totp=\(algorithm) -b \(base32)").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let provider = OTPAuthProvider(usersFile: file)
        func login(_ user: String, _ code: String) async throws -> AuthOutcome {
            try await provider.authenticate(
                AuthRequest(username: user, conversation: ScriptedConversation(.text(code))))
        }
        try expectAuthenticated(try await login("erin", code), "a \(algorithm) code from oathtool was refused")
        #expect(try await login("erin", code) == .rejected(.wrongCredentials))  // Replayed.
        // pam_oath skips the entry: to it, erin has no code at all.
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
        try "auth required pam_oath.so usersfile=\(file) window=5\naccount required pam_permit.so\n"
            .write(toFile: directory + "/gk-oath", atomically: true, encoding: .utf8)
        let pam = try PAMAuthProvider(.init(service: "gk-oath", configurationDirectory: directory))
        let fresh = try shell("oathtool --totp=\(algorithm) -N 'now + 30 seconds' -b \(base32)").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if case .authenticated = try await pam.authenticate(
            AuthRequest(username: "erin", conversation: ScriptedConversation(.text(fresh))))
        {
            Issue.record("pam_oath accepted a \(algorithm) entry")
        }
        // liboath, updating another user's entry, leaves this one as it was.
        try (String(contentsOfFile: file, encoding: .utf8) + "HOTP/E/6 fay - \(OTPProviderTests.rfcSecretHex)\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let erinLine = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").first {
            $0.contains("erin")
        }
        try expectAuthenticated(try await login("fay", "755224"), "fay's SHA-1 code was refused")
        let after = try String(contentsOfFile: file, encoding: .utf8)
        #expect(after.split(separator: "\n").first { $0.contains("erin") } == erinLine)
        #expect(after.contains("fay\t-\t\(OTPProviderTests.rfcSecretHex)\t0\t755224"))
    }

}
