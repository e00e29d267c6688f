import Authentication
import AuthenticationTesting
import DebugProvider
import MockProvider
import ProviderPlugins
import Testing

/// The configuration file of a stack: a corpus of valid and broken files, each broken one with its
/// exact message.
@Suite(.timeLimit(.minutes(1)))
struct StackConfigurationTests {
    let registry = ProviderRegistry([MockProviderPlugin.self, DebugProviderPlugin.self])

    private func parse(_ text: String, includes: [String: String] = [:]) throws -> StackConfiguration {
        try StackConfiguration.parse(Array(text.utf8), file: "test.conf", registry: registry) {
            path throws(ConfigurationError) in
            guard let text = includes[path] else {
                throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
            }
            return Array(text.utf8)
        }
    }

    @Test func readsSettingsAndTheStack() throws {
        let configuration = try parse(
            """
            # admin tools
            session idle=15m absolute=8h
            attempts 2
            lockout threshold=4 duration=90s

            sufficient  debug result=user_unknown   # nobody here
            [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  debug result=authinfo_unavail
            required    mock delay=0
            """)
        let gatekeeper = configuration.gatekeeperConfiguration()
        #expect(gatekeeper.idleTimeout == .seconds(15 * 60) && gatekeeper.absoluteTimeout == .seconds(8 * 3600))
        #expect(
            gatekeeper.maxAttempts == 2 && gatekeeper.lockoutThreshold == 4
                && gatekeeper.lockoutDuration == .seconds(90))
        #expect(configuration.entries.map(\.provider) == ["debug", "debug", "mock"])
        #expect(configuration.entries[1].control.action(for: .success) == .done)
        #expect(configuration.entries[1].control.action(for: .authenticationError) == .die)
        #expect(configuration.entries[2].location.description == "test.conf:8:1")
    }

    /// bob exists only in the mock: the entries before it do not know him or are down, and are ignored.
    @Test func theStackAnswersThroughTheRightEntry() async throws {
        let chain = try parse(
            """
            [success=done user_unknown=ignore default=die]  debug result=user_unknown
            [success=done authinfo_unavail=ignore default=die]  debug result=authinfo_unavail
            required mock delay=0
            """
        ).makeChain(registry: registry)
        guard
            case .authenticated(let bob) = try await chain.authenticate(
                AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        else {
            Issue.record("bob was not admitted")
            return
        }
        #expect(bob.provider == "mock")
        #expect(chain.lastTrace?.steps.map(\.action) == [.ignore, .ignore, .ok])
    }

    @Test func includesAFileInItsPlaceAndRefusesLoops() throws {
        let configuration = try parse(
            "session idle=1m\ninclude common.conf\nrequired mock\n",
            includes: ["common.conf": "sufficient debug result=success\n"])
        #expect(configuration.entries.map(\.provider) == ["debug", "mock"])
        #expect(configuration.entries[0].location.description == "common.conf:1:1")
        #expect(throws: ConfigurationError.self) {
            try parse("include a.conf\n", includes: ["a.conf": "include b.conf\n", "b.conf": "include a.conf\n"])
        }
    }

    @Test(arguments: [
        ("required", "test.conf:1:1: required: a provider's name must follow the control"),
        (
            "requird mock",
            "test.conf:1:1: requird: unknown control; expected required, requisite, sufficient, optional or [value=action …]"
        ),
        ("required ldap", "test.conf:1:10: ldap: unknown provider; available: mock, debug"),
        ("required mock users=/x", "test.conf:1:15: users: mock has no option users; its options: delay"),
        ("required mock delay=1 delay=2", "test.conf:1:23: delay: delay is given twice"),
        ("required mock delay", "test.conf:1:15: delay: expected option=value"),
        ("[success=done default=die mock", "test.conf:1:1: [: the bracket is not closed on this line"),
        (
            "[succes=done] mock",
            "test.conf:1:2: succes: unknown value; expected default or one of success, auth_err, acct_expired, new_authtok_reqd, maxtries, perm_denied, user_unknown, authinfo_unavail, ignore"
        ),
        (
            "[success=finish] mock",
            "test.conf:1:2: finish: unknown action; expected ignore, bad, die, ok, done, reset or a jump of 1 or more"
        ),
        (
            "[success=0] mock",
            "test.conf:1:2: 0: unknown action; expected ignore, bad, die, ok, done, reset or a jump of 1 or more"
        ),
        (
            "[success=2] mock\nrequired mock",
            "test.conf:1:1: 2: a jump of 2 skips past the end of the stack (1 entries follow)"
        ),
        ("[success=ok success=bad] mock", "test.conf:1:13: success: success is given twice"),
        ("required mock\nsession idle=1m", "test.conf:2:1: session: settings come before the stack; move this line up"),
        ("session idle=1m\nsession idle=2m", "test.conf:2:1: session: session is set twice"),
        (
            "session idle=soon",
            "test.conf:1:9: soon: expected a duration such as 90s, 15m, 8h or 2d (at most 30d), or none"
        ),
        (
            "session idle=999d",
            "test.conf:1:9: 999d: expected a duration such as 90s, 15m, 8h or 2d (at most 30d), or none"
        ),
        ("session ttl=1m", "test.conf:1:9: ttl: session takes idle= and absolute="),
        ("attempts 0", "test.conf:1:10: 0: attempts takes a number from 1 to 10"),
        ("lockout threshold=many", "test.conf:1:9: many: threshold takes a number from 0 (off) to 1000"),
        ("include", "test.conf:1:1: include: include takes one file name"),
        ("include missing.conf", "missing.conf: cannot be read"),
        ("required mock\u{1B}[2J", "test.conf:1:10: mock\\u{1B}[2J: holds invalid UTF-8 or a control character"),
    ])
    func refusesBrokenFilesNamingWhereAndWhat(_ text: String, _ message: String) {
        #expect {
            try parse(text)
        } throws: { error in
            "\(error)" == message
        }
    }
}
