import Authentication
import AuthenticationTesting
import TestSupport
import Testing

/// A login's origin is one value: the gatekeeper's configuration hands it whole to the providers, the
/// lockout records its source, and a request's field-by-field accessors (`LoginOriginCarrying`) read and
/// write that one value.
struct LoginOriginTests {
    @Test func theProviderIsAskedWithTheGatekeepersOrigin() async throws {
        let seen = Locked<LoginOrigin?>(nil)
        let provider = StubAuthProvider { request throws(AuthError) in
            seen.withLock { $0 = request.origin }
            _ = try await request.conversation.askSecret("Password: ")
            return .authenticated(Identity(username: request.username, provider: "stub"))
        }
        let origin = LoginOrigin(service: "sudo", terminal: "pts/3", remoteHost: "192.0.2.7", requestingUser: "alice")
        var configuration = Gatekeeper.Configuration(lockout: nil, failDelay: .zero)
        configuration.origin = origin
        let gatekeeper = Gatekeeper(provider: provider, configuration: configuration)
        try await gatekeeper.signIn(credentials("bob", "secret"))
        #expect(seen.withLock { $0 } == origin)
    }

    @Test func theFieldsAreTheOriginsOwn() {
        var configuration = Gatekeeper.Configuration(
            origin: LoginOrigin(service: "login", terminal: "tty1", remoteHost: "host.example", requestingUser: "carol")
        )
        #expect(
            configuration.origin
                == LoginOrigin(service: "login", terminal: "tty1", remoteHost: "host.example", requestingUser: "carol"))
        configuration.origin.terminal = "pts/9"
        #expect(configuration.origin.terminal == "pts/9")
        var request = AuthRequest(username: "dave", conversation: ScriptedConversation(), origin: configuration.origin)
        request.remoteHost = nil
        #expect(request.origin.remoteHost == nil && request.terminal == "pts/9" && request.origin.service == "login")
        request.service = "su"
        request.requestingUser = "erin"
        #expect(request.origin == LoginOrigin(service: "su", terminal: "pts/9", requestingUser: "erin"))
        var change = PasswordChangeRequest(
            username: "dave", conversation: ScriptedConversation(), pass: .update, origin: request.origin)
        #expect(change.service == "su" && change.terminal == "pts/9" && change.requestingUser == "erin")
        change.terminal = nil
        change.remoteHost = "192.0.2.9"
        #expect(change.origin == LoginOrigin(service: "su", remoteHost: "192.0.2.9", requestingUser: "erin"))
        // pam_faillock's source: the remote host, else the terminal, else the service.
        #expect(LoginSource(configuration.origin) == .remoteHost("host.example"))
        #expect(LoginSource(request.origin) == .terminal("pts/9"))
        #expect(LoginSource(LoginOrigin(service: "cron")) == .service("cron"))
    }
}
