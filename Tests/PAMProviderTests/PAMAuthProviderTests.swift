import Authentication
import AuthenticationTesting
import Foundation
import PAMProvider
import ProviderPlugins
import TestSupport
import Testing

/// Real libpam, without root: services in a configuration directory of the tests' own.
@Suite(.timeLimit(.minutes(1)))
struct PAMAuthProviderTests {
    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "secret")) {
        try PAMFixture.shared.get().provider()
    }

    /// The account look-ups run on the threads the configuration gives (`threads`), not the shared pool.
    @Test func theLookUpsRunOnTheThreadsGiven() async throws {
        let (queued, lookup) = try await queuesOn { threads in
            var configuration = PAMAuthProvider.Configuration(service: "login")
            configuration.threads = threads
            let provider = try PAMAuthProvider(configuration)
            return { await provider.lookUpAccount("root") }
        }
        #expect(queued)
        #expect(lookup == .known(canonicalName: "root", isSystemAdministrator: true))
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        let problems = await Self.conformance.run(check)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func signsInThroughAGatekeeper() async throws {
        let gatekeeper = Gatekeeper(
            provider: try PAMFixture.shared.get().provider(), configuration: .init(failDelay: .zero))
        let identity = try await gatekeeper.signIn(credentials("bob", "builder"))
        #expect(identity.username == "bob")
        #expect(identity.provider == "pam")
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("bob", "nope")) }
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("zed", "x")) }
    }

    @Test func theIdentityComesFromTheSystemAccount() async throws {
        let provider = try PAMFixture.shared.get().provider()
        let outcome = try await provider.authenticate(
            AuthRequest(username: "root", conversation: ScriptedConversation(.secret("rootpw")))
        )
        let identity = try expectAuthenticated(outcome, "expected authenticated, got \(outcome)")
        #expect(identity.attributes["uid"] == "0")
        #expect(identity.attributes["gid"] == "0")
        #expect(identity.attributes["home"] == "/root")
        #expect(identity.isMember(of: "root"))
    }

    /// Info and error messages reach the person and never fail the login; any number of prompts, visible
    /// and hidden, are answered in order.
    @Test func aConversationOfManyPrompts() async throws {
        let provider = try PAMFixture.shared.get().provider("gk-fixture")
        let conversation = ScriptedConversation(.text("123456"), .secret("0000"))
        let outcome = try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation))
        try expectAuthenticated(outcome, "expected authenticated, got \(outcome)")
        #expect(
            conversation.events == [
                .shown("Welcome to the fixture.", .info),
                .shown("This is only a test.", .error),
                .asked("Code: "),
                .askedSecret("PIN: "),
            ]
        )
        let wrong = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.text("123456"), .secret("9999")))
        )
        #expect(wrong == .rejected(.wrongCredentials))
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingDuringAPromptEndsTheTransaction() async throws {
        let provider = try PAMFixture.shared.get().provider("gk-fixture")
        let conversation = ScriptedConversation(.hang)
        let login = Task { try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        await conversation.waitUntilHanging()
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
    }

    /// libpam sleeps two minutes after the wrong password; the caller gets `cancelled` at once (the test
    /// may take one minute at most), and the transaction's thread is left to finish in the background.
    @Test(.timeLimit(.minutes(1)))
    func cancellingDuringTheFailDelayReturnsAtOnce() async throws {
        let fixture = try PAMFixture.shared.get()
        let provider = try fixture.provider("gk-delay")
        let marks = fixture.log("delay.log").count
        let conversation = ScriptedConversation(.secret("wrong"))
        let login = Task { try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        // The last module of the stack marks its turn; libpam's fail delay comes right after it.
        #expect(await eventually { fixture.log("delay.log").count > marks })
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
    }

    @Test(.timeLimit(.minutes(1)))
    func fiftyLoginsInParallel() async throws {
        let provider = try PAMFixture.shared.get().provider()
        let outcomes = try await withThrowingTaskGroup(of: AuthOutcome.self) { group in
            for index in 0..<50 {
                let (user, password) = PAMFixture.accounts[index % 2]
                group.addTask {
                    try await provider.authenticate(
                        AuthRequest(username: user, conversation: ScriptedConversation(.secret(password)))
                    )
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 50)
        #expect(outcomes.allSatisfy { if case .authenticated = $0 { true } else { false } })
    }

    /// An opt-in session is opened after the checks and closed at sign-out, on the same handle.
    @Test func aSessionLastsUntilSignOut() async throws {
        let fixture = try PAMFixture.shared.get()
        let gatekeeper = Gatekeeper(
            provider: try fixture.provider("gk-session", opensSession: true), configuration: .init(failDelay: .zero))
        let identity = try await gatekeeper.signIn(credentials("bob", "builder"))
        #expect(identity.attributes["pam.session"] != nil)
        #expect(fixture.sessionLog.contains("open bob\n"))
        #expect(!fixture.sessionLog.contains("close bob\n"))
        await gatekeeper.signOut()
        #expect(fixture.sessionLog.contains("open bob\nclose bob\n"))
    }

    @Test func aMissingServiceFileIsReportedNotRunUnderOther() async throws {
        let fixture = try PAMFixture.shared.get()
        let provider = try PAMAuthProvider(.init(service: "no-such-service", configurationDirectory: fixture.directory))
        let outcome = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("secret")))
        )
        #expect(outcome == .unavailable(reason: "there is no PAM service file \(fixture.directory)/no-such-service."))
    }

    /// A stack naming a module that is not installed: libpam fails the login (as pamtester shows), the
    /// provider says unavailable, not rejected, and the next login on a good service works.
    @Test func aStackNamingAMissingModuleIsUnavailableAndServingGoesOn() async throws {
        let fixture = try PAMFixture.shared.get()
        let service = "gk-missing-module"
        let file = fixture.directory + "/" + service
        try "auth required /nonexistent/pam_gatekeeper_missing.so\naccount required pam_permit.so\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        // pamtester, through pam_wrapper so it reads the same private directory.
        func pamtester(_ service: String) throws -> (status: Int32, output: String) {
            try shell(
                "PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR=\(fixture.directory) LD_PRELOAD=libpam_wrapper.so "
                    + "pamtester \(service) alice authenticate 2>&1", input: "secret\n")
        }
        let peer = try pamtester(service)
        #expect(peer.status != 0 && peer.output.contains("pamtester: Module is unknown"), "\(peer.output)")
        #expect(try pamtester("gk-matrix").output.contains("successfully authenticated"), "the peer's set-up is wrong")
        let provider = try PAMAuthProvider(.init(service: service, configurationDirectory: fixture.directory))
        let outcome = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("secret"))))
        #expect(outcome == .unavailable(reason: "PAM: Module is unknown."))
        let good = try PAMAuthProvider(.init(service: "gk-matrix", configurationDirectory: fixture.directory))
        guard
            case .authenticated = try await good.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("secret"))))
        else {
            Issue.record("a good service did not log in afterwards")
            return
        }
    }

    @Test(arguments: ["", ".", "..", "a/b", "../etc/passwd", "with space", "tab\there"])
    func refusesServiceNamesThatAreNotFileNames(_ service: String) {
        #expect(throws: PAMConfigurationError.self) { try PAMAuthProvider(.init(service: service)) }
    }

    @Test func thePluginNeedsAService() throws {
        let registry = ProviderRegistry([PAMProviderPlugin.self])
        #expect(
            throws: ConfigurationError.invalidValue(
                option: "service", value: "../x", expected: "the name of a PAM service file")
        ) {
            try registry.makeProvider(named: "pam", options: ["service": "../x"])
        }
        #expect(throws: ConfigurationError.missingOption("service", provider: "pam")) {
            try registry.makeProvider(named: "pam")
        }
        let provider = try registry.makeProvider(named: "pam", options: ["service": "other", "pam-dir": "/etc/pam.d"])
        #expect(provider.name == "pam")
        // A service file in a directory others may write is refused: anyone could put pam_permit.so there.
        #expect {
            try registry.makeProvider(named: "pam", options: ["service": "login", "pam-dir": "/tmp"])
        } throws: { ($0 as? ConfigurationError)?.code == .unusable }
    }
}
