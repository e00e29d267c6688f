import Authentication
import AuthenticationTesting
import Foundation
import ProviderPlugins
import TestSupport
import Testing

@testable import OIDCProvider

/// Against the tests' own provider, which answers as well or as badly as each test asks.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct OIDCProviderTests {
    static func provider(
        _ server: TestServer, flow: OIDCAuthProvider.Configuration.Flow = .password,
        _ change: (inout OIDCAuthProvider.Configuration) -> Void = { _ in }
    ) throws -> OIDCAuthProvider {
        var configuration = OIDCAuthProvider.Configuration(
            issuer: server.issuer, clientID: TestServer.clientID,
            clientSecret: Secret(copying: TestServer.clientSecret.utf8), timeout: .seconds(5), flow: flow,
            allowsPlainHTTP: !server.tls)
        if server.tls { configuration.caFile = server.caFile }
        change(&configuration)
        return try OIDCAuthProvider(configuration)
    }

    func login(_ provider: OIDCAuthProvider, _ user: String = "alice", _ password: String = "wonderland")
        async throws -> AuthOutcome
    {
        try await provider.authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    /// The reason of an `unavailable` outcome, or a description of what came instead.
    func reason(_ outcome: AuthOutcome) -> String {
        if case .unavailable(let reason) = outcome { return reason }
        return "not unavailable: \(outcome)"
    }

    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        let server = try TestServer.shared.get()
        try server.set("good")
        return try provider(server)
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        let problems = await Self.conformance.run(check)
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The HTTP requests run on the threads the configuration gives (`threads`), not the shared pool.
    @Test func theRequestsRunOnTheThreadsGiven() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        let (queued, outcome) = try await queuesOn { threads in
            let provider = try Self.provider(server) { $0.threads = threads }
            return { try? await self.login(provider) }
        }
        #expect(queued)
        guard case .authenticated? = outcome else {
            Issue.record("alice was refused: \(String(describing: outcome))")
            return
        }
    }

    @Test func aPasswordLoginGivesWhoTheTokenAndUserinfoSay() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        let identity = try expectAuthenticated(try await login(try Self.provider(server)), "alice was refused")
        #expect(identity.username == "alice" && identity.provider == "oidc")
        #expect(identity.displayName == "Alice Example" && identity.groups == ["staff", "readers"])
        #expect(identity.attributes["email"] == "alice@example.test")
        // From userinfo: the ID token does not carry it.
        #expect(identity.attributes["picture"] == "https://example.test/alice.png")
        #expect(identity.attributes["issuer"] == server.issuer && identity.attributes["subject"] == "subject-alice")
        let requests = try server.log().requests
        let grant = requests.first { $0["path"] as? String == "/token" }
        #expect(grant?["grant_type"] as? String == "password" && grant?["nonce"] != nil)
        // The client's secret went in HTTP Basic, as the provider prefers it.
        #expect((grant?["authorization"] as? String)?.hasPrefix("Basic ") == true && grant?["client_secret"] == nil)
        // client_auth=post: in the form, whatever the metadata says.
        try server.set("good")
        let posting = try Self.provider(server) { $0.clientAuthentication = .post }
        try expectAuthenticated(try await login(posting), "alice was refused with the secret in the form")
        let posted = try server.log().requests.first { $0["path"] as? String == "/token" }
        #expect((posted?["authorization"] as? String)?.isEmpty == true && posted?["client_secret"] != nil)
    }

    @Test(arguments: ["es256", "eddsa"])
    func tokensSignedWithEveryKindOfKeyAreAccepted(_ mode: String) async throws {
        let server = try TestServer.shared.get()
        try server.set(mode)
        let outcome = try await login(try Self.provider(server))
        let identity = try expectAuthenticated(outcome, "\(mode): \(outcome)")
        #expect(identity.username == "alice")
    }

    /// The password grant's token comes straight from the token endpoint: a nonce it returns must be the
    /// login's, and one it does not return (as Keycloak's direct grants do not) is no refusal.
    @Test func aNonceReturnedMustBeTheLoginsAndNoneIsAccepted() async throws {
        let server = try TestServer.shared.get()
        try server.set("no-nonce")
        try expectAuthenticated(try await login(try Self.provider(server)), "a token without the nonce was refused")
        try server.set("wrong-nonce")
        #expect(reason(try await login(try Self.provider(server))).contains("nonce"))
        try server.set("good")
    }

    @Test func aWrongPasswordIsAWrongCredentialAndItsDescriptionIsNotShownRaw() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        #expect(try await login(try Self.provider(server), "alice", "not-it") == .rejected(.wrongCredentials))
        try server.set("access-denied")
        #expect(try await login(try Self.provider(server)) == .rejected(.refusedByPolicy))
    }

    /// Every token a relying party must refuse is refused, with a reason and no secret in it.
    @Test(arguments: [
        ("other-key", "signature"), ("unknown-kid", "signature"), ("alg-none", "not accepted"),
        ("hs256", "not accepted"), ("wrong-iss", "issuer"), ("wrong-aud", "not meant for this client"),
        ("expired", "expired"), ("future-iat", "future"), ("several-aud", "several audiences"),
        ("wrong-azp", "another client"), ("bad-at-hash", "at_hash"), ("no-sub", "subject"),
        ("wrong-nonce", "nonce"), ("userinfo-other-sub", "another subject"), ("not-bearer", "malformed"),
        ("issuer-mismatch", "names itself otherwise"), ("userinfo-in-url", "not an https:// URL"),
        ("duplicate-claim", "malformed"), ("big-rsa", "signature"),
        ("garbage", "not JSON"), ("huge", "longer than"), ("redirect", "HTTP 302"),
    ])
    func aHostileAnswerMakesTheProviderUnavailable(_ mode: String, _ expected: String) async throws {
        let server = try TestServer.shared.get()
        try server.set(mode)
        let outcome = try await login(try Self.provider(server))
        let text = reason(outcome)
        #expect(text.contains(expected), "\(mode): \(text)")
        for secret in ["wonderland", TestServer.clientSecret] { #expect(!text.contains(secret)) }
    }

    @Test func aRefusalWithAnEmptyBodyIsAWrongPasswordOnlyForAnAuthenticatedClient() async throws {
        let server = try TestServer.shared.get()
        // glewlwyd refuses a password with 403 and no body; its client was authenticated.
        try server.set("empty-403")
        #expect(try await login(try Self.provider(server)) == .rejected(.wrongCredentials))
        // A public client gets the same answer when it may not use the grant: not the password's fault.
        let outcome = try await login(try Self.provider(server) { $0.clientSecret = nil })
        #expect(reason(outcome) == "the identity provider's token endpoint answered HTTP 403 with an empty body")
        try server.set("good")
    }

    @Test func aKeyTheSetDoesNotHoldIsLookedForOnceAMinute() async throws {
        let server = try TestServer.shared.get()
        try server.set("rotated")
        let provider = try Self.provider(server)
        // The first fetch has no rsa-2, the second (asked for by the unknown key) has it.
        try expectAuthenticated(try await login(provider), "a rotated key was not fetched")
        #expect(try server.log().keySetFetches == 2)
        try server.set("unknown-kid")
        let other = try Self.provider(server)
        #expect(reason(try await login(other)).contains("signature"))
        #expect(reason(try await login(other)).contains("signature"))
        // Two logins with an unknown key: one fetch, and one fetch again, not one a login.
        #expect(try server.log().keySetFetches == 2)
    }

    @Test func aSlowProviderTimesOutAndAnUnreachableOneIsUnavailable() async throws {
        let server = try TestServer.shared.get()
        try server.set("slow")
        let provider = try Self.provider(server) { $0.timeout = .seconds(1) }
        #expect(reason(try await login(provider)).contains("did not answer in time"))
        try server.set("good")
        let nobody = try OIDCAuthProvider(
            .init(issuer: "http://127.0.0.1:1", clientID: "x", flow: .password, allowsPlainHTTP: true))
        #expect(reason(try await login(nobody)).contains("cannot be reached"))
    }

    @Test func cancellingStopsARequestInFlight() async throws {
        let server = try TestServer.shared.get()
        try server.set("slow")
        let provider = try Self.provider(server) { $0.timeout = .seconds(120) }
        let started = ContinuousClock.now
        let task = Task { try await login(provider) }
        try await Task.sleep(for: .milliseconds(500))
        task.cancel()
        await #expect(throws: AuthError.cancelled) { try await task.value }
        // Well before the time-out: the request was stopped, not waited for.
        #expect(ContinuousClock.now - started < .seconds(60))
        try server.set("good")
    }

    /// A server's error description is shown cut short, one letter under a megabyte of accents (one
    /// `Character`) included.
    @Test func aServersErrorDescriptionIsCutShort() throws {
        let provider = try OIDCAuthProvider(.init(issuer: "https://id.example.com", clientID: "x"))
        let accented = "a" + String(repeating: "\u{301}", count: 100_000)
        let body = Array("{\"error\":\"invalid_request\",\"error_description\":\"\(accented)\"}".utf8)
        let text = provider.errorText(
            "token", HTTPClient.Answer(status: 400, body: body, contentType: "application/json"))
        #expect(text.utf8.count < 1_000)
    }

    @Test func configurationsThatCannotBeTrustedAreRefused() throws {
        #expect(throws: (any Error).self) {
            try OIDCAuthProvider(.init(issuer: "http://id.example.com", clientID: "x", allowsPlainHTTP: true))
        }
        #expect(throws: (any Error).self) {
            try OIDCAuthProvider(.init(issuer: "http://127.0.0.1:8080", clientID: "x"))
        }
        #expect(throws: (any Error).self) { try OIDCAuthProvider(.init(issuer: "ftp://127.0.0.1", clientID: "x")) }
        #expect(throws: (any Error).self) {
            try OIDCAuthProvider(.init(issuer: "http://127.0.0.1.example.com", clientID: "x", allowsPlainHTTP: true))
        }
        _ = try OIDCAuthProvider(.init(issuer: "http://127.0.0.1:8080/realm", clientID: "x", allowsPlainHTTP: true))
        _ = try OIDCAuthProvider(.init(issuer: "http://[::1]:8080", clientID: "x", allowsPlainHTTP: true))
        _ = try OIDCAuthProvider(.init(issuer: "https://id.example.com", clientID: "x"))
    }

    @Test func thePluginReadsItsOptionsAndTheSecretFromAPrivateFile() throws {
        let directory = temporaryDirectory("gatekeeper-oidc-options")
        let secret = directory + "/secret"
        try "s3cret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let provider = try OIDCProviderPlugin.makeProvider(
            ProviderOptions([
                "issuer": "https://id.example.com", "client_id": "tool", "client_secret_file": secret,
                "flow": "password", "scopes": "profile,groups", "timeout": "2.5s", "tokens": directory + "/tokens",
            ]))
        let oidc = try #require(provider as? OIDCAuthProvider)
        #expect(oidc.configuration.flow == .password && oidc.configuration.timeout == .milliseconds(2500))
        #expect(oidc.configuration.scopes == ["openid", "profile", "groups"])
        #expect(oidc.configuration.clientSecret == Secret(copying: "s3cret".utf8))
        chmod(secret, 0o646)
        #expect(throws: ConfigurationError.self) {
            try OIDCProviderPlugin.makeProvider(
                ProviderOptions(["issuer": "https://id.example.com", "client_id": "tool", "client_secret_file": secret])
            )
        }
        #expect(throws: ConfigurationError.self) {
            try OIDCProviderPlugin.makeProvider(ProviderOptions(["issuer": "https://id.example.com", "flow": "magic"]))
        }
        #expect(throws: ConfigurationError.self) {
            try OIDCProviderPlugin.makeProvider(ProviderOptions(["client_id": "tool"]))
        }
    }

    // MARK: the device flow

    @Test func theDeviceFlowShowsTheCodeAndPollsUntilApproved() async throws {
        let server = try TestServer.shared.get()
        try server.set("good", pending: 2)
        let conversation = ScriptedConversation()
        let outcome = try await Self.provider(server, flow: .device) { $0.showsQRCode = true }.authenticate(
            AuthRequest(username: "alice", conversation: conversation))
        let identity = try expectAuthenticated(outcome, "\(outcome)")
        #expect(identity.username == "alice")
        #expect(conversation.messages.contains { $0.contains("WDJB-MJHT") && $0.contains("/activate") })
        #expect(conversation.questionCount == 0)
        // verification_uri_complete as a QR code, as qrencode draws it.
        let (status, drawn) = try shell("qrencode -t UTF8 -m 2 -l M '\(server.issuer)/activate?code=WDJB-MJHT'")
        #expect(status == 0 && conversation.messages.contains { $0 + "\n" == drawn })
        let polls = try server.log().requests.filter { ($0["grant_type"] as? String)?.hasSuffix("device_code") == true }
        #expect(polls.count == 3)
    }

    @Test func slowDownAddsFiveSecondsToTheInterval() async throws {
        let server = try TestServer.shared.get()
        try server.set("slow-down", pending: 2)
        let conversation = ScriptedConversation()
        let outcome = try await Self.provider(server, flow: .device) { $0.showsQRCode = false }.authenticate(
            AuthRequest(username: "alice", conversation: conversation))
        #expect(conversation.messages.count == 1, "no QR code when it is not asked for")
        try expectAuthenticated(outcome, "\(outcome)")
        let times = try server.log().requests.filter { ($0["grant_type"] as? String)?.hasSuffix("device_code") == true }
            .compactMap { $0["time"] as? Double }
        #expect(times.count == 3)
        // The first poll said slow_down: the next waited the interval (1 s) and five seconds more.
        if times.count == 3 { #expect(times[1] - times[0] >= 5.9) }
    }

    @Test func anExpiredOrRefusedDeviceCodeEndsTheLogin() async throws {
        let server = try TestServer.shared.get()
        try server.set("expired-token", pending: 1)
        let outcome = try await Self.provider(server, flow: .device).authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation()))
        guard case .failed(.credentialsExpired, let reason) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(reason.contains("expired before it was approved"))
        // Through a gatekeeper: its own answer and message, asked once (no second code is started), and no
        // failure counted (nothing was presented).
        try server.set("expired-token", pending: 1)
        let store = MemoryLockoutStore()
        let gatekeeper = Gatekeeper(
            provider: try Self.provider(server, flow: .device), configuration: .init(failDelay: .zero), lockout: store)
        let conversation = ScriptedConversation(.text("alice"), .text("alice"))
        do throws(AuthError) {
            _ = try await gatekeeper.signIn(conversation: conversation)
            Issue.record("an expired code signed in")
        } catch {
            #expect(error.code == .credentialsExpired)
            #expect(error.description == "The sign-in code expired before it was approved; sign in again.")
        }
        #expect(conversation.events.count { if case .asked = $0 { true } else { false } } == 1)
        #expect(store.status(of: "alice", policy: LockoutPolicy()) == .open(failures: 0))
        // Approved by someone else (the server's device flow always signs alice in): the refusal is the answer,
        // and no second code is started.
        try server.set("good", pending: 1)
        let bob = ScriptedConversation(.text("bob"), .text("bob"), .text("bob"))
        do throws(AuthError) {
            _ = try await gatekeeper.signIn(conversation: bob)
            Issue.record("a device approved by alice signed bob in")
        } catch {
            #expect(error.code == .refusedByPolicy)
        }
        #expect(bob.events.count { if case .asked = $0 { true } else { false } } == 1, "\(bob.events)")
        #expect(try server.log().requests.count { $0["path"] as? String == "/device" } == 1)
        try server.set("access-denied")
        #expect(
            try await Self.provider(server, flow: .device).authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation())) == .rejected(.refusedByPolicy))
    }

    /// One remote host starts at most five device sign-ins a minute (each asks the identity provider for a
    /// code before anyone proved anything); the sixth is refused without asking it, with a message. Another
    /// host, and a local account, are counted apart.
    @Test func deviceSignInsAreLimitedPerOrigin() async throws {
        let server = try TestServer.shared.get()
        try server.set("access-denied")
        let provider = try Self.provider(server, flow: .device)
        func start(from host: String?, by user: String? = nil) async throws -> (AuthOutcome, ScriptedConversation) {
            let conversation = ScriptedConversation()
            var request = AuthRequest(username: "alice", conversation: conversation)
            request.remoteHost = host
            request.requestingUser = user
            return (try await provider.authenticate(request), conversation)
        }
        let before = try server.log().requests.count { $0["path"] as? String == "/device" }
        for _ in 1...DeviceGrantLimiter.perOrigin {
            #expect(try await start(from: "203.0.113.7").0 == .rejected(.refusedByPolicy))
        }
        let (refused, told) = try await start(from: "203.0.113.7")
        #expect(reason(refused).contains("device sign-ins were started from 203.0.113.7 within a minute"))
        #expect(told.messages.contains { $0.contains("Too many sign-ins") })
        #expect(try await start(from: "203.0.113.8").0 == .rejected(.refusedByPolicy))
        #expect(try await start(from: nil, by: "bob").0 == .rejected(.refusedByPolicy))
        #expect(try server.log().requests.count { $0["path"] as? String == "/device" } == before + 7)
        try server.set("good")
    }

    /// The window slides: a sixth start within a minute of the first is refused, one a minute after it is
    /// not; and the table forgets the stalest origin rather than grow past its bound.
    @Test func theDeviceLimitSlidesAndItsTableIsBounded() {
        let limiter = DeviceGrantLimiter()
        let start = ContinuousClock.now
        for second in 0..<5 { #expect(limiter.admit("a", at: start + .seconds(second))) }
        #expect(!limiter.admit("a", at: start + .seconds(59)))
        #expect(limiter.admit("a", at: start + .seconds(60)))
        #expect(!limiter.admit("a", at: start + .milliseconds(60_500)))
        let later = start + .seconds(62)
        for index in 0..<(DeviceGrantLimiter.origins + 10) { #expect(limiter.admit("host \(index)", at: later)) }
        #expect(limiter.count == DeviceGrantLimiter.origins)
    }

    @Test func ctrlCDuringTheDeviceFlowStopsAtOnce() async throws {
        let server = try TestServer.shared.get()
        try server.set("good", pending: 1000)
        let provider = try Self.provider(server, flow: .device)
        let conversation = ScriptedConversation()
        let task = Task { try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        #expect(await eventually { !conversation.messages.isEmpty })
        task.cancel()
        await #expect(throws: AuthError.cancelled) { try await task.value }
        let before = try server.log().requests.count
        try await Task.sleep(for: .seconds(2))
        // Nothing more is asked once the login is cancelled.
        #expect(try server.log().requests.count == before)
        try server.set("good")
    }

    @Test func anotherPersonApprovingIsRefused() async throws {
        let server = try TestServer.shared.get()
        try server.set("bob")
        let conversation = ScriptedConversation(.secret("wonderland"))
        let outcome = try await Self.provider(server).authenticate(
            AuthRequest(username: "alice", conversation: conversation))
        #expect(outcome == .rejected(.refusedByPolicy))
        #expect(conversation.messages.contains { $0.contains("bob") })
    }

    // MARK: tokens kept

    /// A provider keeping refresh tokens in a directory of its own, and alice signed in through it.
    func signedInKeepingTokens(_ server: TestServer) async throws -> (OIDCAuthProvider, Identity, String)? {
        let directory = temporaryDirectory("gatekeeper-oidc-tokens") + "/tokens"
        let provider = try Self.provider(server) { $0.tokenDirectory = directory }
        guard case .authenticated(let identity) = try await login(provider) else {
            Issue.record("alice was refused")
            return nil
        }
        return (provider, identity, directory)
    }

    @Test func theRefreshTokenIsKeptPrivatelyRechecksAndIsRevokedAtSignOut() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        guard let (provider, identity, directory) = try await signedInKeepingTokens(server) else { return }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(files.count == 1)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + files[0])
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        guard case .valid(let again) = await provider.recheck(identity) else {
            Issue.record("a remembered login was not rechecked by its refresh token")
            return
        }
        #expect(again.username == "alice")
        let kept = try String(contentsOfFile: directory + "/" + files[0], encoding: .utf8)
        await provider.signOut(identity)
        #expect(provider.revocationProblem == nil)
        let revoked = try server.log().revoked
        #expect(revoked.count == 1 && kept.contains(revoked[0]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(await provider.recheck(identity) == .unverifiable)
    }

    @Test func aRevokedTokenRefusesTheRememberedLogin() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        guard let (_, identity, directory) = try await signedInKeepingTokens(server) else { return }
        // Revoked elsewhere (the provider's own sign-out): the next recheck is refused, and forgets it.
        let other = try Self.provider(server) { $0.tokenDirectory = directory }
        await other.signOut(identity)
        let second = try Self.provider(server) { $0.tokenDirectory = directory }
        _ = try await login(second)
        let revoked = try server.log().revoked
        #expect(revoked.count == 1)
        try server.set("invalid-grant")
        guard case .refused = await second.recheck(identity) else {
            Issue.record("a refresh the provider refuses still rechecks")
            return
        }
        #expect(await second.recheck(identity) == .unverifiable)
        try server.set("good")
    }

    @Test func aFailedRevocationIsReportedAndStillSignsOut() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        guard let (provider, identity, directory) = try await signedInKeepingTokens(server) else { return }
        try server.set("revoke-fails")
        await provider.signOut(identity)
        #expect(provider.revocationProblem?.contains("HTTP 503: temporarily_unavailable") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        try server.set("good")
    }

    // MARK: TLS

    @Test func tlsIsVerifiedAgainstTheCAGiven() async throws {
        let server = try TestServer.sharedTLS.get()
        try server.set("good")
        try expectAuthenticated(
            try await login(try Self.provider(server)), "a provider with a trusted certificate was refused")
        let untrusted = try Self.provider(server) { $0.caFile = nil }
        #expect(reason(try await login(untrusted)).contains("failed TLS"))
    }

    /// libcurl writes every TLS session's keys to the file SSLKEYLOGFILE names; a tool must not.
    @Test func noTLSKeysAreWrittenForAnyoneToRead() throws {
        let server = try TestServer.sharedTLS.get()
        try server.set("good")
        let directory = temporaryDirectory("gatekeeper-oidc-keylog")
        let secret = directory + "/secret"
        try TestServer.clientSecret.write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        let config = directory + "/oidc.conf"
        try """
        delay 0
        required oidc issuer=\(server.issuer) client_id=\(TestServer.clientID) client_secret_file=\(secret) flow=password ca=\(server.caFile)

        """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        let keys = directory + "/keys.log"
        let result = try run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "SSLKEYLOGFILE=\(keys)", builtExecutable("gatekeeper-run").path, "--config", config, "--state-dir",
                directory + "/state", "--user", "alice", "--password-stdin", "--", "sh", "-c", "echo $SSLKEYLOGFILE",
            ], input: "wonderland\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: keys), "TLS keys were written")
        // The command still gets the variable, as it was.
        #expect(result.stdout == keys + "\n")
    }

    // MARK: what an attacker tried

    @Test func onlyAPlainHostReachesLibcurl() {
        for url in [
            "http://127.0.0.1:80@192.0.2.2:18080/token", "http://[::1]@192.0.2.2/", "http://localhost:1@evil/",
            "http://127.0.0.1%2f@evil/", "http://127.0.0.1\\@evil/", "http://127.0.0.1 /", "http://127.0.0.1:/x",
            "http://127.0.0.1:99999999/", "http://0x7f.0.0.1/", "http://127.0.0.256/", "https://user@id.example.com/",
            "https://", "http://[::1/", "https://id.example.com:443:1/", "http://127.0.0.08/", "http://127.-0.0.1/",
            "http://127.0.0.010/", "http://127.00.0.1/",
        ] {
            #expect(!OIDCAuthProvider.isAllowed(url, plainHTTP: true), "\(url)")
        }
        for url in [
            "http://127.0.0.1:8080/api", "http://[::1]:80", "http://localhost/", "https://id.example.com:8443/x?y#z",
        ] {
            #expect(OIDCAuthProvider.isAllowed(url, plainHTTP: true), "\(url)")
        }
        #expect(!OIDCAuthProvider.isAllowed("http://127.0.0.1/", plainHTTP: false))
        // A provider is not made for such an issuer, and the refusal's code says why.
        let plain = OIDCAuthProvider.Configuration(
            issuer: "http://id.example.com", clientID: "c", clientSecret: nil, timeout: .seconds(5), flow: .password,
            allowsPlainHTTP: false)
        #expect { try OIDCAuthProvider(plain) } throws: { ($0 as? OIDCConfigurationProblem)?.code == .insecureIssuer }
    }

    @Test func jsonIsParsedStrictlyAndInLinearTime() {
        #expect(
            JSONValue.parse(Array("{\"a\": [1, -2.5e3, true, null, \"\\u00e9\\ud83d\\ude00\"]}".utf8))
                == .object(["a": .array([.number(1), .number(-2500), .bool(true), .null, .string("é😀")])]))
        let deep = Array(String(repeating: "[", count: 33).utf8) + Array(String(repeating: "]", count: 33).utf8)
        #expect(JSONValue.parse(deep) == nil)
        #expect(JSONValue.parse(Array(deep.dropFirst().dropLast())) != nil)
        // A megabyte of brackets is refused at once, not after minutes of trial decoding.
        #expect(JSONValue.parse(Array(repeating: UInt8(ascii: "["), count: 1 << 20)) == nil)
        for bad in [
            "{\"a\":1,\"a\":2}", "{\"a\":01}", "[1e400]", "\"\\ud800\"", "\"\u{01}\"", "[1,]", "{\"a\"}", "nul",
            "\"\\x\"", "[\"a\"] x",
        ] {
            #expect(JSONValue.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(JSONValue.parse([0x22, 0xFF, 0x22]) == nil, "invalid UTF-8")
        // Names are short: a long run of combining marks would cost its square to hash.
        let long = "{\"e" + String(repeating: "\u{301}\u{323}", count: 200) + "\": 1}"
        #expect(JSONValue.parse(Array(long.utf8)) == nil)
        #expect(JSONValue.parse(Array(("{\"" + String(repeating: "a", count: 256) + "\": 1}").utf8)) != nil)
        let flat = "[" + Array(repeating: "1", count: 200_000).joined(separator: ",") + "]"
        guard case .array(let numbers)? = JSONValue.parse(Array(flat.utf8)) else {
            Issue.record("a flat array of 200,000 numbers was refused")
            return
        }
        #expect(numbers.count == 200_000)
    }

    @Test func keysNoProviderSignsWithAreNotUsed() {
        func key(_ modulus: Int, _ exponent: Int = 3) -> JSONWebKey? {
            JSONWebKey([
                "kty": .string("RSA"), "n": .string(Base64URL.encode([UInt8](repeating: 0xC5, count: modulus))),
                "e": .string(Base64URL.encode([UInt8](repeating: 1, count: exponent))),
            ])
        }
        #expect(key(256) != nil && key(1024) != nil)
        #expect(key(255) == nil && key(1025) == nil && key(2048) == nil && key(256, 9) == nil)
        #expect(
            JSONWebKey(["kty": .string("RSA"), "use": .string("enc"), "n": .string("AQAB"), "e": .string("AQAB")])
                == nil)
    }

    @Test func aNameIsTheProvidersOnlyByteForByte() async throws {
        let server = try TestServer.shared.get()
        // Å as the Angstrom sign (U+212B), the name asked for with U+00C5: one to Swift's ==, two names.
        try server.set("as-user", user: "\u{212B}ngstr\u{F6}m")
        let outcome = try await Self.provider(server).authenticate(
            AuthRequest(username: "\u{C5}ngstr\u{F6}m", conversation: ScriptedConversation(.secret("wonderland"))))
        #expect(outcome == .rejected(.refusedByPolicy), "\(outcome)")
        try server.set("good")
    }

    @Test func aRefreshTokenOfAnotherPersonDoesNotRecheck() async throws {
        let server = try TestServer.shared.get()
        try server.set("refresh-without-id")
        let directory = temporaryDirectory("gatekeeper-oidc-tokens") + "/tokens"
        let provider = try Self.provider(server) { $0.tokenDirectory = directory }
        guard case .authenticated(let alice) = try await login(provider),
            case .authenticated = try await login(provider, "bob", "builder")
        else {
            Issue.record("alice or bob was refused")
            return
        }
        // Without an ID token in the refresh, userinfo says whose the token is.
        guard case .valid = await provider.recheck(alice) else {
            Issue.record("alice's own token did not recheck")
            return
        }
        // As a gatekeeper rechecks a remembered login: from the name alone, no attributes to carry over.
        guard case .valid(let remembered) = await provider.recheck(Identity(username: "alice", provider: provider.name))
        else {
            Issue.record("a remembered login without an ID token in its refresh was not reused")
            return
        }
        #expect(remembered.attributes["subject"] == alice.attributes["subject"] && remembered.username == "alice")
        // Bob's refresh token put in alice's file: the provider honours it, but it is bob's.
        var files: [String: [String: Any]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
            files[name] = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
        let aliceFile = try #require(files.first { $0.value["username"] as? String == "alice" }?.key)
        let bobToken = try #require(files.first { $0.value["username"] as? String == "bob" }?.value["refreshToken"])
        var tampered = try #require(files[aliceFile])
        tampered["refreshToken"] = bobToken
        try JSONSerialization.data(withJSONObject: tampered).write(
            to: URL(fileURLWithPath: directory + "/" + aliceFile))
        guard case .refused = await provider.recheck(alice) else {
            Issue.record("a remembered login was rechecked with another person's refresh token")
            return
        }
        try server.set("good")
    }

    @Test func aDeviceLoginPointingElsewhereOverPlainHTTPIsNotShown() async throws {
        let server = try TestServer.shared.get()
        try server.set("device-elsewhere")
        let conversation = ScriptedConversation()
        let outcome = try await Self.provider(server, flow: .device).authenticate(
            AuthRequest(username: "alice", conversation: conversation))
        #expect(reason(outcome).contains("malformed") && conversation.messages.isEmpty, "\(outcome)")
        try server.set("good")
    }

    @Test func aProviderEchoingTheClientSecretOrOddErrorsGetsNoWordIn() async throws {
        let server = try TestServer.shared.get()
        try server.set("echo-secret")
        let text = reason(try await login(try Self.provider(server)))
        #expect(text == "the identity provider's token endpoint answered HTTP 400: invalid_client", "\(text)")
        try server.set("odd-error")
        let odd = reason(
            try await Self.provider(server, flow: .device).authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation())))
        #expect(
            odd.hasPrefix(
                "the identity provider's device authorization endpoint answered HTTP 400 with an error of its own (Some "
            ), "\(odd)")
        #expect(!odd.unicodeScalars.contains { $0.value == 0x1B }, "\(odd)")
        try server.set("good")
    }

    /// However a name resolves, plain http:// connects to a loopback address only.
    @Test func plainHTTPConnectsOnlyToLoopback() async throws {
        // A listener on every address, reached by one of this machine's addresses that is not loopback.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        #expect(bound)
        var interfaces: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&interfaces) == 0 else { return }
        defer { freeifaddrs(interfaces) }
        var external: String?
        var cursor = interfaces
        while let entry = cursor {
            if let found = entry.pointee.ifa_addr, found.pointee.sa_family == sa_family_t(AF_INET) {
                let ipv4 = found.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                if UInt32(bigEndian: ipv4.s_addr) >> 24 != 127 {
                    var text = [CChar](repeating: 0, count: 32)
                    var copy = ipv4
                    inet_ntop(AF_INET, &copy, &text, 32)
                    external = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
            cursor = entry.pointee.ifa_next
        }
        guard let external else {
            Issue.record("this machine has no IPv4 address but loopback: nothing to reach it by")
            return
        }
        let client = HTTPClient(caFile: nil, allowsPlainHTTP: true, timeout: .seconds(5))
        let answer = await client.get("http://\(external):\(UInt16(bigEndian: address.sin_port))/")
        guard case .failure(.unreachable(_)) = answer else {
            Issue.record("plain http:// to \(external) was not refused before connecting: \(answer)")
            return
        }
        #expect(accept(listener, nil, nil) < 0, "a connection reached the listener")
    }

    @Test func aProviderEchoingThePasswordGetsNoWordIn() async throws {
        let server = try TestServer.shared.get()
        try server.set("echo-password")
        let text = reason(try await login(try Self.provider(server), "alice", "Sup3r-secret"))
        #expect(text == "the identity provider's token endpoint answered HTTP 400: invalid_request", "\(text)")
        try server.set("good")
    }

    @Test func plainHTTPNeverGoesThroughAProxy() async throws {
        let server = try TestServer.shared.get()
        try server.set("good")
        // A proxy that is not there: a request sent to it would fail.
        setenv("http_proxy", "http://127.0.0.1:1", 1)
        setenv("ALL_PROXY", "http://127.0.0.1:1", 1)
        defer {
            unsetenv("http_proxy")
            unsetenv("ALL_PROXY")
        }
        try expectAuthenticated(
            try await login(try Self.provider(server)), "a loopback login went through the environment's proxy")
    }
}
