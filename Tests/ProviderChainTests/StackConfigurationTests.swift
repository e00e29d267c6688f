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
            lockout deny=4 interval=5m unlock=90s dir=/var/lib/gatekeeper/faillock even_deny_root
            delay 500ms
            cache timeout=2m
            audit syslog
            audit json path=/var/log/gatekeeper/audit.jsonl

            sufficient  debug result=user_unknown   # nobody here
            [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  debug result=authinfo_unavail
            required    mock delay=0
            """)
        let gatekeeper = configuration.gatekeeperConfiguration()
        #expect(gatekeeper.idleTimeout == .seconds(15 * 60) && gatekeeper.absoluteTimeout == .seconds(8 * 3600))
        #expect(gatekeeper.maxAttempts == 2)
        #expect(
            gatekeeper.lockout
                == LockoutPolicy(deny: 4, interval: .seconds(300), unlockAfter: .seconds(90), evenDenyRoot: true))
        #expect(gatekeeper.failDelay == .milliseconds(500))
        #expect(configuration.lockoutDirectory == "/var/lib/gatekeeper/faillock")
        #expect(configuration.cacheTimeout == .seconds(120))
        #expect(
            configuration.audit == [.syslog(socket: "/dev/log"), .json(path: "/var/log/gatekeeper/audit.jsonl")])
        #expect(configuration.entries.map(\.provider) == ["debug", "debug", "mock"])
        #expect(configuration.entries[1].control.action(for: .success) == .done)
        #expect(configuration.entries[1].control.action(for: .authenticationError) == .die)
        #expect(configuration.entries[2].location.description == "test.conf:12:1")
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

    /// Numbers past every bound are refused with an error naming them, never an arithmetic trap (each of
    /// these ended the process with SIGILL).
    @Test(arguments: [
        "session idle=200000000000000d\nrequired mock",
        "session absolute=9223372036854775807s\nrequired mock",
        "lockout deny=3 interval=99999999999999999h\nrequired mock",
        "[success=9223372036854775807 default=bad] debug\nrequired mock",
        "[success=ok default=9223372036854775807] debug\nrequired mock",
    ])
    func hugeNumbersAreRefusedNotTrapped(_ text: String) {
        #expect(throws: ConfigurationError.self) { try parse(text) }
    }

    @Test func aDurationIsParsedWithItsBoundAndNoOverflow() {
        let month = Duration.seconds(30 * 86_400)
        #expect(ConfigurationValue.duration("15m", atMost: month) == .seconds(900))
        #expect(ConfigurationValue.duration("30d", atMost: month) == month)
        for text in ["31d", "200000000000000d", "9223372036854775807s", "-1s", "+5m", "5", "m", "5x", "1.5h", ""] {
            #expect(ConfigurationValue.duration(text, atMost: month) == nil, "\(text)")
        }
    }

    /// A jump as large as an Int, given to a chain directly, ends the chain instead of overflowing.
    @Test func aHugeJumpEndsTheStack() async throws {
        let chain = ProviderChain([
            .init(ChainControl(actions: [:], default: .jump(Int.max)), DebugAuthProvider(result: .success)),
            .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)),
        ])
        let outcome = try await chain.authenticate(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        #expect(outcome.pamResult != .success)
        #expect(
            ProviderChain.dispatch(
                [ChainControl(actions: [:], default: .jump(.max)), .required], answers: [.success, .success]
            )
            .ran == [0])
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

    /// A relative include is the including file's neighbour, not a file of the current directory (the same
    /// file meant different stacks depending on where the tool was started).
    @Test func aRelativeIncludeIsResolvedBesideTheIncludingFile() throws {
        var asked: [String] = []
        let configuration = try StackConfiguration.parse(
            Array("include common.conf\nrequired mock\n".utf8), file: "/etc/gatekeeper/tools.conf", registry: registry
        ) { path throws(ConfigurationError) in
            asked.append(path)
            return Array((path.hasSuffix("common.conf") ? "include /abs/other.conf\n" : "sufficient debug\n").utf8)
        }
        #expect(asked == ["/etc/gatekeeper/common.conf", "/abs/other.conf"])
        #expect(configuration.entries.map(\.provider) == ["debug", "mock"])
    }

    /// Files that include each other many times over are refused at once with a clear error (25 files each
    /// including the next twice kept --check-config busy for over 30 s), and so is a stack past its bound.
    @Test func includesAndEntriesAreBounded() {
        var files: [String: String] = [:]
        for level in 0..<25 { files["f\(level).conf"] = "include f\(level + 1).conf\ninclude f\(level + 1).conf\n" }
        files["f25.conf"] = "required mock\n"
        #expect {
            try parse("include f0.conf\n", includes: files)
        } throws: { "\($0)".contains("more than 256 includes") }
        let long = String(repeating: "optional mock\n", count: 1001)
        #expect {
            try parse(long)
        } throws: { "\($0)".contains("at most 1000 entries") }
    }

    @Test(arguments: [
        ("required", "test.conf:1:1: required: a provider's name must follow the control"),
        (
            "requird mock",
            "test.conf:1:1: requird: unknown control; expected required, requisite, sufficient, optional or [value=action …]"
        ),
        ("required ldap", "test.conf:1:10: ldap: unknown provider; available: mock, debug, or a plugin's path"),
        ("required mock users=/x", "test.conf:1:15: users: mock has no option users; its options: delay"),
        ("required mock delay=1 delay=2", "test.conf:1:23: delay: delay is given twice"),
        // libpam keeps the first of two defaults; the last would admit where libpam refuses.
        ("[default=die default=ignore] mock", "test.conf:1:14: default: default is given twice"),
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
        ("lockout deny=many", "test.conf:1:9: many: deny takes a number from 0 (off) to 1000"),
        ("lockout threshold=-1", "test.conf:1:9: -1: deny takes a number from 0 (off) to 1000"),
        ("lockout deny=3\nlockout deny=4", "test.conf:2:1: lockout: lockout is set twice"),
        ("lockout interval=0s", "test.conf:1:9: 0s: an interval is a duration such as 15m"),
        (
            "lockout dir=faillock",
            "test.conf:1:9: faillock: expected an absolute path without .."
        ),
        ("lockout dir=/var/../tmp", "test.conf:1:9: /var/../tmp: expected an absolute path without .."),
        (
            "lockout tries=3",
            "test.conf:1:9: tries: lockout takes deny=, interval=, unlock=, root_unlock=, dir= and even_deny_root"
        ),
        ("delay", "test.conf:1:1: delay: delay takes one duration, such as 2s or 0"),
        (
            "delay 2 seconds",
            "test.conf:1:1: delay: delay takes one duration, such as 2s or 0"
        ),
        (
            "delay 61s",
            "test.conf:1:7: 61s: expected a delay such as 2s, 1.5s or 500ms (at most 60s), or 0"
        ),
        ("delay nans", "test.conf:1:7: nans: expected a delay such as 2s, 1.5s or 500ms (at most 60s), or 0"),
        (
            "cache timeout=forever",
            "test.conf:1:7: forever: expected a duration such as 90s, 15m, 8h or 2d (at most 30d), or none"
        ),
        ("cache timeout=none", "test.conf:1:7: none: a cache timeout is a duration, or 0 for never"),
        ("cache ttl=1m", "test.conf:1:7: ttl: cache takes timeout= and dir="),
        ("audit", "test.conf:1:1: audit: audit takes syslog or json path=FILE"),
        ("audit email", "test.conf:1:7: email: audit takes syslog or json path=FILE"),
        ("audit json", "test.conf:1:7: json: audit json needs path=FILE"),
        ("audit json file=/x", "test.conf:1:12: file: audit json takes path= once"),
        ("audit syslog path=/x", "test.conf:1:14: path: audit syslog takes socket= once"),
        ("audit json path=log.jsonl", "test.conf:1:12: log.jsonl: expected an absolute path without .."),
        ("audit syslog\naudit syslog", "test.conf:2:1: syslog: this audit destination is set twice"),
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
