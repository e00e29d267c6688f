import Authentication
import AuthenticationTesting
import Foundation
import OIDCProvider
import TestSupport
import Testing

/// Against a real OpenID Connect provider, Debian's glewlwyd: it decides what is right.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct GlewlwydTests {
    static func provider(
        flow: OIDCAuthProvider.Configuration.Flow = .password,
        _ change: (inout OIDCAuthProvider.Configuration) -> Void = { _ in }
    ) throws -> OIDCAuthProvider {
        let glewlwyd = try GlewlwydFixture.shared.get()
        var configuration = OIDCAuthProvider.Configuration(
            issuer: glewlwyd.issuer, clientID: glewlwyd.clientID,
            clientSecret: Secret(copying: glewlwyd.clientSecret.utf8), timeout: .seconds(10), flow: flow,
            allowsPlainHTTP: true)
        change(&configuration)
        return try OIDCAuthProvider(configuration)
    }

    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "wonderland-2026")) {
        try provider()
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        let problems = await Self.conformance.run(check)
        #expect(problems.isEmpty, "\(problems)")
    }

    func login(_ provider: OIDCAuthProvider, _ user: String, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    @Test func thePasswordGrantGivesTheProvidersProfileAndGroups() async throws {
        let alice = try expectAuthenticated(
            try await login(try Self.provider(), "alice", "wonderland-2026"), "alice was refused")
        #expect(alice.displayName == "Alice Liddell" && alice.groups == ["staff", "readers"])
        #expect(alice.attributes["email"] == "alice@example.test")
        let bob = try expectAuthenticated(
            try await login(try Self.provider(), "bob", "builder-2026"), "bob was refused")
        #expect(bob.displayName == "Bob Builder" && bob.groups.isEmpty)
        #expect(try await login(try Self.provider(), "bob", "wonderland-2026") == .rejected(.wrongCredentials))
    }

    /// A client secret holding `#`, `&`, `+` and `%`. In the form (`client_auth=post`) glewlwyd takes it:
    /// the right password admits, a wrong one is refused as wrong. In HTTP Basic, form-encoded first as
    /// RFC 6749 §2.3.1 has it, glewlwyd (which does not decode it) refuses the client for every password:
    /// each such login is `unavailable`, and each wrong password presented is counted all the same — three
    /// lock the account, so the refused client is no way around the lockout.
    @Test func aClientSecretHoldingAHashWorksInTheFormAndWrongPasswordsCountEitherWay() async throws {
        let glewlwyd = try GlewlwydFixture.shared.get()
        func provider(_ sending: OIDCAuthProvider.Configuration.ClientAuthentication) throws -> OIDCAuthProvider {
            try Self.provider {
                $0.clientID = glewlwyd.hashClientID
                $0.clientSecret = Secret(copying: glewlwyd.hashClientSecret.utf8)
                $0.clientAuthentication = sending
            }
        }
        try #require(glewlwyd.hashClientSecret.contains("#"))
        let posting = try provider(.post)
        let alice = try expectAuthenticated(
            try await login(posting, "alice", "wonderland-2026"),
            "the password grant with the secret in the form was refused")
        #expect(alice.username == "alice")
        #expect(try await login(posting, "alice", "not-the-password") == .rejected(.wrongCredentials))
        let basic = try provider(.basic)
        let answer = try await login(basic, "alice", "wonderland-2026")
        guard case .unavailable(let reason) = answer else {
            Issue.record("glewlwyd took a form-encoded secret in HTTP Basic: \(answer)")
            return
        }
        #expect(!reason.contains(glewlwyd.hashClientSecret))
        let gatekeeper = Gatekeeper(
            provider: basic, configuration: .init(lockout: LockoutPolicy(deny: 3), failDelay: .zero),
            lockout: MemoryLockoutStore())
        for _ in 0..<3 {
            await #expect(throws: AuthError.self) {
                try await gatekeeper.signIn(try credentials("alice", "not-the-password"))
            }
        }
        await #expect {
            try await gatekeeper.signIn(try credentials("alice", "wonderland-2026"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
    }

    @Test func anES256IssuerIsVerifiedToo() async throws {
        let glewlwyd = try GlewlwydFixture.shared.get()
        let provider = try Self.provider { $0.issuer = glewlwyd.es256Issuer }
        let outcome = try await login(provider, "alice", "wonderland-2026")
        let alice = try expectAuthenticated(outcome, "alice was refused by the ES256 issuer: \(outcome)")
        #expect(alice.attributes["issuer"] == glewlwyd.es256Issuer)
    }

    /// A device login for alice, its code approved in glewlwyd as `approver` would in a browser.
    func deviceLogin(approvedBy approver: String, password: String) async throws -> AuthOutcome {
        let glewlwyd = try GlewlwydFixture.shared.get()
        let conversation = ScriptedConversation()
        let provider = try Self.provider(flow: .device)
        let login = Task { try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        #expect(await eventually { !conversation.messages.isEmpty })
        let code = try #require(Self.userCode(in: conversation.messages.joined(separator: "\n")))
        try glewlwyd.approve(code, as: approver, password: password)
        return try await login.value
    }

    @Test func theDeviceFlowIsApprovedInTheBrowser() async throws {
        guard
            case .authenticated(let identity) = try await deviceLogin(approvedBy: "alice", password: "wonderland-2026")
        else {
            Issue.record("an approved device code did not sign alice in")
            return
        }
        #expect(identity.username == "alice" && identity.groups == ["staff", "readers"])
    }

    @Test func aDeviceApprovedByAnotherPersonIsRefused() async throws {
        #expect(try await deviceLogin(approvedBy: "bob", password: "builder-2026") == .rejected(.refusedByPolicy))
    }

    @Test func aRememberedLoginRefreshesAndSigningOutRevokes() async throws {
        let directory = temporaryDirectory("gatekeeper-glewlwyd-tokens") + "/tokens"
        let provider = try Self.provider { $0.tokenDirectory = directory }
        let alice = try expectAuthenticated(try await login(provider, "alice", "wonderland-2026"), "alice was refused")
        // glewlwyd's refresh gives an access token only: the identity stays the one signed in.
        guard case .valid(let again) = await provider.recheck(alice) else {
            Issue.record("the refresh token was not honoured")
            return
        }
        #expect(again == alice)
        // As a gatekeeper rechecks a remembered login, from the name alone: reused (it never was).
        guard case .valid(let remembered) = await provider.recheck(Identity(username: "alice", provider: provider.name))
        else {
            Issue.record("a remembered login was not reused without an ID token in the refresh")
            return
        }
        #expect(remembered.attributes["subject"] == alice.attributes["subject"])
        // Kept for later: the token itself, to see glewlwyd refuse it once revoked.
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first)
        let saved = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + kept))
        await provider.signOut(alice)
        #expect(provider.revocationProblem == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        // The same token put back: glewlwyd no longer honours it, and the remembered login is refused.
        try saved.write(to: URL(fileURLWithPath: directory + "/" + kept))
        chmod(directory + "/" + kept, 0o600)
        guard case .refused = await provider.recheck(alice) else {
            Issue.record("a revoked refresh token still rechecks")
            return
        }
    }

    /// The user code in what the provider showed ("... enter the code ABCD-EFGH").
    static func userCode(in text: String) -> String? { GlewlwydFixture.userCode(in: text) }
}

/// gatekeeper-run with an `oidc` entry in its configuration, as an administrator sets it up.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct GlewlwydConfigurationTests {
    func configuration(flow: String) throws -> (file: String, state: String) {
        let glewlwyd = try GlewlwydFixture.shared.get()
        let directory = temporaryDirectory("gatekeeper-oidc-conf")
        let file = directory + "/oidc.conf"
        try """
        delay 0
        required oidc issuer=\(glewlwyd.issuer) client_id=\(glewlwyd.clientID) client_secret_file=\(try glewlwyd.secretFile()) flow=\(flow) allow_http=yes

        """.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return (file, directory + "/state")
    }

    @Test func gatekeeperRunLogsInByPassword() throws {
        let (file, state) = try configuration(flow: "password")
        func attempt(_ password: String) throws -> RunResult {
            try run(
                builtExecutable("gatekeeper-run"),
                [
                    "--config", file, "--state-dir", state, "--user", "alice", "--password-stdin", "--explain", "--",
                    "sh", "-c", "echo $GATEKEEPER_USER $GATEKEEPER_PROVIDER",
                ], input: password + "\n")
        }
        let admitted = try attempt("wonderland-2026")
        #expect(admitted.status == 0 && admitted.stdout == "alice oidc\n", "\(admitted.stderr)")
        // Which environment answered: the issuer, in the trace.
        let glewlwyd = try GlewlwydFixture.shared.get()
        #expect(admitted.stderr.contains("1. required oidc (\(glewlwyd.issuer)): success"), "\(admitted.stderr)")
        let refused = try attempt("wrong")
        #expect(refused.status == 77 && !refused.stderr.contains("wrong"), "\(refused.stderr)")
        let check = try run(builtExecutable("gatekeeper-run"), ["--check-config", file], input: "")
        #expect(check.status == 0 && check.stdout.contains("required oidc"), "\(check.stdout)\(check.stderr)")
    }

    /// libcurl and libcrypto are loaded by the dynamic linker only when an oidc entry is made.
    @Test func onlyAnOIDCEntryLoadsLibcurlAndLibcrypto() throws {
        func loaded(_ arguments: [String], input: String = "") throws -> String {
            try run(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["LD_DEBUG=libs", builtExecutable("gatekeeper-run").path] + arguments,
                input: input
            ).stderr
        }
        let help = try loaded(["--help"])
        let (file, state) = try configuration(flow: "password")
        let mock = try loaded(
            ["--provider", "mock", "--state-dir", state, "--user", "alice", "--password-stdin", "--", "true"],
            input: "x\n")
        for libraries in [help, mock] {
            #expect(libraries.contains("find library=libc.so.6"), "LD_DEBUG shows nothing: \(libraries.prefix(300))")
            #expect(!libraries.contains("find library=libcurl") && !libraries.contains("find library=libcrypto"))
        }
        let oidc = try loaded(
            ["--config", file, "--state-dir", state, "--user", "alice", "--password-stdin", "--", "true"],
            input: "wonderland-2026\n")
        #expect(oidc.contains("find library=libcurl.so.4") && oidc.contains("find library=libcrypto.so.3"))
    }

    @Test func gatekeeperRunLogsInByDeviceCode() throws {
        let glewlwyd = try GlewlwydFixture.shared.get()
        let (file, state) = try configuration(flow: "device")
        let process = try Spawned(
            builtExecutable("gatekeeper-run"),
            [
                "--config", file, "--state-dir", state, "--user", "alice", "--",
                "sh", "-c", "echo $GATEKEEPER_USER $GATEKEEPER_PROVIDER",
            ])
        try process.waitForStderr(containing: "enter the code ")
        let code = try #require(GlewlwydTests.userCode(in: process.stderr))
        try glewlwyd.approve(code, as: "alice", password: "wonderland-2026")
        let result = process.finish()
        #expect(result.status == 0 && result.stdout == "alice oidc\n", "\(result.stderr)")
        #expect(result.stderr.contains("open \(glewlwyd.issuer)/device in a browser"), "\(result.stderr)")
    }
}

/// `make oidc-demo`: the REPL over a throwaway glewlwyd, in either environment and either flow.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct OIDCDemoTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/oidc/demo.sh").standardized.path

    @Test func theProfileTabShowsWhatTheProviderSaid() throws {
        let result = try run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["OIDC_FLOW=password", "OIDC_ENV=qa", "/bin/bash", Self.script, builtExecutable("gatekeeper-repl").path],
            input: "login\nalice\nwonderland-2026\nprofile\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Signed in as Alice Liddell (alice)"), "\(result.stdout)")
        #expect(result.stdout.contains("Groups:    readers, staff") && result.stdout.contains("alice@example.test"))
        let issuer = try #require(result.stdout.split(separator: "issuer=").dropFirst().first?.prefix { $0 != "\n" })
        #expect(issuer.hasSuffix("/api/oidc-es256") && result.stdout.contains("issuer:   \(issuer)"))
        let port = try #require(issuer.split(separator: ":").last?.prefix { $0.isNumber })
        #expect(try shell("curl -s --max-time 2 http://127.0.0.1:\(port)/").status != 0, "the provider still runs")
    }

    @Test func aDeviceCodeIsApprovedFromAnotherTerminal() throws {
        let process = try Spawned(
            URL(fileURLWithPath: "/bin/bash"), [Self.script, builtExecutable("gatekeeper-repl").path],
            mergingStandardError: true)
        process.write("login\nalice\n")
        let deadline = ContinuousClock.now + .seconds(60)
        while !process.stdout.contains("enter the code "), ContinuousClock.now < deadline { usleep(50_000) }
        let output = process.stdout
        let code = try #require(GlewlwydTests.userCode(in: output))
        let approve = try #require(
            output.split(separator: "\n").first { $0.hasPrefix("To approve a code from another terminal: ") })
        let command = approve.dropFirst("To approve a code from another terminal: ".count)
            .replacingOccurrences(of: "CODE", with: code)
        #expect(try shell(String(command)).status == 0)
        while !process.stdout.contains("Signed in as"), ContinuousClock.now < deadline { usleep(50_000) }
        process.write("whoami\n")
        let result = process.finish()
        #expect(result.status == 0 && result.stdout.contains("Signed in as Alice Liddell (alice)"), "\(result.stdout)")
    }
}
