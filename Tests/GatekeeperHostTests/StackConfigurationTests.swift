import Authentication
import AuthenticationTesting
import DebugProvider
import Foundation
import GatekeeperHost
import MockProvider
import ProviderPlugins
import TestSupport
import Testing

/// The configuration file of a stack: a corpus of valid and broken files, each broken one with its
/// exact message.
@Suite(.timeLimit(.minutes(1)))
struct StackConfigurationTests {
    let registry = ProviderRegistry([MockProviderPlugin.self, DebugProviderPlugin.self])

    /// The file's stack, its settings read as a host reads them (``ConfigurationFile/parse(_:file:registry:read:)``),
    /// so that a setting's refusal is the file's.
    private func parse(
        _ text: String, includes: [String: String] = [:], registry: ProviderRegistry? = nil
    ) throws -> StackConfiguration {
        try parsed(text, includes: includes, registry: registry).stack
    }

    private func parsed(
        _ text: String, includes: [String: String] = [:], registry: ProviderRegistry? = nil
    ) throws -> (stack: StackConfiguration, settings: StackSettings) {
        try ConfigurationFile.parse(Array(text.utf8), file: "test.conf", registry: registry ?? self.registry) {
            path throws(ConfigurationError) in
            guard let text = includes[path] else {
                throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
            }
            return Array(text.utf8)
        }
    }

    /// The file as printed: its settings as the host normalises them, then its stack.
    private func printed(_ file: (stack: StackConfiguration, settings: StackSettings)) -> String {
        file.stack.normalized(settings: file.settings.lines)
    }

    @Test func readsSettingsAndTheStack() throws {
        let (configuration, settings) = try parsed(
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
        let gatekeeper = settings.gatekeeperConfiguration()
        #expect(
            gatekeeper.sessions.idleTimeout == .seconds(15 * 60)
                && gatekeeper.sessions.absoluteTimeout == .seconds(8 * 3600))
        #expect(gatekeeper.attempts.perLogin == 2)
        #expect(
            gatekeeper.attempts.lockout
                == LockoutPolicy(deny: 4, interval: .seconds(300), unlockAfter: .seconds(90), evenDenyRoot: true))
        #expect(gatekeeper.attempts.failDelay == .milliseconds(500))
        #expect(settings.lockoutDirectory == "/var/lib/gatekeeper/faillock")
        #expect(settings.cacheTimeout == .seconds(120))
        #expect(settings.audit == [.syslog(socket: "/dev/log"), .json(path: "/var/log/gatekeeper/audit.jsonl")])
        // The grammar keeps the lines as written, in order; their meaning is the host's.
        #expect(
            configuration.settings.map(\.name) == [
                "session", "attempts", "lockout", "delay", "cache", "audit", "audit",
            ])
        #expect(configuration.settings[3].text == "delay 500ms" && configuration.settings[3].location.line == 5)
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
        let answer = try await chain.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        let bob = try expectAuthenticated(answer.outcome, "bob was not admitted")
        #expect(bob.provider == "mock")
        #expect(answer.trace?.steps.map(\.action) == [.ignore, .ignore, .ok])
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

    /// One grammar for every duration: a number (at most three decimals) and a unit, a bare number being
    /// seconds, a whole number of milliseconds, inside the bound; nothing can overflow.
    @Test func aDurationIsParsedWithItsBoundAndNoOverflow() throws {
        let month = Duration.zero...Duration.seconds(30 * 86_400)
        let read = { (text: String) in try ConfigurationValue.duration(text, in: month) }
        #expect(try read("15m") == .seconds(900))
        #expect(try read("2.5m") == .seconds(150))
        #expect(try read("1.5s") == .milliseconds(1500))
        #expect(try read("500ms") == .milliseconds(500))
        #expect(try read("0.5") == .milliseconds(500))
        #expect(try read("90") == .seconds(90))
        #expect(try read("0") == .zero)
        #expect(try read("30d") == .seconds(30 * 86_400))
        #expect(try read("1.5h") == .seconds(5400))
        for text in [
            "31d", "200000000000000d", "9223372036854775807s", "9223372036854775807", "-1s", "+5m", "m", "5x", "",
            "1.", ".5s", "1.2345s", "0.5ms", "1e3s", "5 s", "١٢s", "nan", "inf", "5M", "1..5s", "0x10s",
        ] {
            #expect(throws: ConfigurationError.invalid(expected: ""), "\(text)") { try read(text) }
        }
    }

    /// What a duration prints as is read back as the same duration, and is the shortest exact form.
    @Test func aDurationPrintsAsItIsRead() throws {
        for milliseconds: Int64 in [0, 1, 999, 1000, 1500, 60_000, 150_000, 3_600_000, 86_400_000, 2_592_000_000] {
            let duration = Duration.milliseconds(milliseconds)
            let text = ConfigurationValue.describe(duration)
            #expect(try ConfigurationValue.duration(text, in: .zero ... .seconds(30 * 86_400)) == duration, "\(text)")
        }
        #expect(ConfigurationValue.describe(.seconds(900)) == "15m")
        #expect(ConfigurationValue.describe(.milliseconds(1500)) == "1500ms")
        #expect(ConfigurationValue.describe(.seconds(7 * 86_400)) == "7d")
        // Any duration at all prints without trapping.
        #expect(ConfigurationValue.describe(.seconds(Int64.max)) == "\(Int64.max)s")
        #expect(ConfigurationValue.describe(.seconds(Int64.min)) == "\(Int64.min)s")
    }

    /// A jump as large as an Int, given to a chain directly, fails the stack as libpam's bad jump does,
    /// instead of overflowing.
    @Test func aHugeJumpEndsTheStack() async throws {
        let chain = ProviderChain([
            .init(ChainControl(actions: [:], default: .jump(Int.max)), DebugAuthProvider(result: .success)),
            .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)),
        ])
        let outcome = try await chain.authenticate(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        #expect(outcome.pamResult != .success)
        let huge = ProviderChain.dispatch(
            [.entry(ChainControl(actions: [:], default: .jump(.max))), .entry(.required)],
            answers: [.success, .success])
        #expect(huge.ran == [0])
        #expect(huge.result == .permissionDenied)
    }

    /// Printing a configuration and parsing the text again gives the same configuration: random files of
    /// every setting, keywords and brackets written any way libpam reads them, options, includes and
    /// substacks.
    @Test func whatIsPrintedParsesAsTheSameConfiguration() throws {
        var generator = SeededGenerator(for: "whatIsPrintedParsesAsTheSameConfiguration", fixedSeed: 20_261_201)
        for round in 0..<2000 {
            var includes: [String: String] = [:]
            let text = Self.randomFile(depth: 0, settings: true, includes: &includes, using: &generator)
            let first = try parsed(text, includes: includes)
            let printed = printed(first)
            let second = try parsed(printed, includes: includes)
            #expect(
                second.stack.normalizedLines(annotated: true, settings: second.settings.lines)
                    == first.stack.normalizedLines(annotated: true, settings: first.settings.lines), "round \(round)")
            #expect(second.stack.layout == first.stack.layout, "round \(round)")
            let (a, b) = (first.settings.gatekeeperConfiguration(), second.settings.gatekeeperConfiguration())
            #expect(
                a.sessions.idleTimeout == b.sessions.idleTimeout
                    && a.sessions.absoluteTimeout == b.sessions.absoluteTimeout, "round \(round)")
            #expect(
                a.attempts.lockout == b.attempts.lockout && a.attempts.failDelay == b.attempts.failDelay
                    && a.attempts.perLogin == b.attempts.perLogin)
            #expect(second.settings.cacheTimeout == first.settings.cacheTimeout)
            #expect(second.settings.audit == first.settings.audit)
            #expect(self.printed(second) == printed, "round \(round):\n\(text)\n---\n\(printed)")
        }
    }

    static func randomFile(
        depth: Int,
        settings: Bool,
        includes: inout [String: String],
        using generator: inout SeededGenerator
    ) -> String {
        func pick(_ items: [String]) -> String { items.randomElement(using: &generator)! }
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &generator) < percent }
        var lines: [String] = []
        let durations = ["0", "90", "2.5m", "1.5s", "500ms", "15m", "8h", "2d", "30d", "0.001"]
        if settings {
            if chance(40) {
                lines.append("session idle=\(pick(durations + ["none"])) absolute=\(pick(durations + ["none"]))")
            }
            if chance(30) { lines.append("attempts \(Int.random(in: 1...10, using: &generator))") }
            if chance(40) {
                var words = ["lockout", "deny=\(Int.random(in: 0...1000, using: &generator))"]
                if chance(50) { words.append("interval=\(pick(["1s", "15m", "2.5h"]))") }
                if chance(50) { words.append("unlock=\(pick(durations + ["never"]))") }
                if chance(30) { words.append("root_unlock=\(pick(durations + ["never"]))") }
                if chance(30) { words.append("even_deny_root") }
                if chance(30) { words.append("dir=/var/lib/gatekeeper/faillock") }
                lines.append(words.shuffled(using: &generator).sorted { a, _ in a == "lockout" }.joined(separator: " "))
            }
            if chance(30) { lines.append("delay \(pick(["0", "2s", "1.5s", "500ms", "60s"]))") }
            if chance(30) { lines.append("cache timeout=\(pick(durations)) dir=/run/gatekeeper/cache") }
            if chance(30) { lines.append("audit syslog") }
            if chance(20) { lines.append("audit json path=/var/log/gatekeeper/audit.jsonl") }
            if lines.contains(where: { $0.hasPrefix("audit ") }) && chance(30) { lines.append("audit required") }
        }
        let codes = PAMResult.allCases.map(\.rawValue)
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            if depth < 2 && chance(15) {
                let name = "inc\(includes.count).conf"
                includes[name] = ""
                includes[name] = randomFile(depth: depth + 1, settings: false, includes: &includes, using: &generator)
                lines.append("\(chance(50) ? "include" : "substack") \(name)")
                continue
            }
            var control = pick(["required", "requisite", "sufficient", "optional"])
            if chance(60) {
                let keys = Array(Set((0..<Int.random(in: 0...4, using: &generator)).map { _ in pick(codes) })).sorted()
                var pairs = keys.map {
                    "\($0)\(chance(10) ? " = " : "=")\(pick(["ok", "done", "bad", "die", "ignore", "reset", "1", "3"]))"
                }
                if chance(60) { pairs.insert("default=\(pick(["bad", "die", "ignore", "ok", "2"]))", at: 0) }
                control = "[ " + pairs.shuffled(using: &generator).joined(separator: "  ") + " ]"
            }
            let entry = chance(50) ? "debug result=\(pick(codes))" : "mock delay=\(pick(["0", "0.25", "1s", "250ms"]))"
            lines.append("\(control)\t\(entry)\(chance(20) ? "  # note" : "")")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// What goes to syslog about a file that cannot be included is a place in the including file, never
    /// the name written there.
    @Test func aMissingIncludeIsNamedWhereItIsIncluded() {
        #expect {
            try parse("delay 0\nsubstack hunter2-secret-token\n")
        } throws: { error in
            let refused = error as! ConfigurationError
            return refused.withoutContents == "test.conf:2:10: the file is refused (include error)"
                && "\(refused)" == "test.conf:2:10: hunter2-secret-token: cannot be read"
        }
    }

    /// libpam fails a login through a 16th nested substack; 15 are used.
    @Test func substacksNestAtMostFifteenDeep() throws {
        func nested(_ depth: Int) -> [String: String] {
            var files = ["s\(depth).conf": "required mock delay=0\n"]
            for level in 1..<depth { files["s\(level).conf"] = "substack s\(level + 1).conf\n" }
            return files
        }
        let fifteen = try parse("substack s1.conf\n", includes: nested(15))
        #expect(fifteen.providerEntries.map(\.depth) == [15])
        #expect {
            try parse("substack s1.conf\n", includes: nested(16))
        } throws: { "\($0)".contains("substacks nest at most 15 deep") }
    }

    /// A relative file named by a provider's option is beside the configuration, as an include is — not
    /// in whatever directory the tool was started from (where the invoker could put a users file).
    @Test func aRelativeFileOptionIsBesideTheConfiguration() throws {
        let registry = ProviderRegistry([PathPlugin.self])
        let configuration = try StackConfiguration.parse(
            Array("required paths users=users other=/abs/x name=users\n".utf8), file: "/etc/gatekeeper/tools.conf",
            registry: registry)
        #expect(
            configuration.entries[0].options == [
                "users": "/etc/gatekeeper/users", "other": "/abs/x", "name": "users",
            ])
    }

    /// A value ending in `\` in the middle of a line is a value; written back at the end of a line, it is
    /// followed by a comment, so that the printed file does not continue onto the next line.
    @Test func aValueEndingInABackslashIsWrittenBackAsItWas() throws {
        let registry = ProviderRegistry([PathPlugin.self])
        let text = "required paths other=/x\\ name=a\nrequired paths\n"
        let first = try StackConfiguration.parse(Array(text.utf8), file: "t.conf", registry: registry)
        #expect(first.entries.count == 2 && first.entries[0].options["other"] == "/x\\")
        let printed = first.normalized()
        #expect(printed.contains("other=/x\\ #\n"), "\(printed)")
        let second = try StackConfiguration.parse(Array(printed.utf8), file: "t.conf", registry: registry)
        #expect(second.entries.count == 2 && second.entries[0].options == first.entries[0].options, "\(printed)")
    }

    @Test func aTabInsideABracketSeparatesPairs() throws {
        let configuration = try parse("[success=ok\tdefault=die]\tdebug\n")
        #expect(configuration.entries[0].control == ChainControl(actions: [.success: .ok], default: .die))
    }

    /// A provider's refusal of an option's value names the option where it was written, and a
    /// megabyte-long word is not echoed whole.
    @Test func anOptionsErrorIsTheOptions() {
        #expect {
            try parse("required mock delay=999d\n").makeChain(registry: registry)
        } throws: { error in
            let refused = error as! ConfigurationError
            return refused.code == .value && "\(refused)".hasPrefix("test.conf:1:15: delay: --delay \"999d\" is not")
        }
        #expect {
            try parse("required mock delay=" + String(repeating: "9", count: 100_000) + "\n").makeChain(
                registry: registry)
        } throws: { "\($0)".utf8.count < 400 }
        #expect {
            try parse("required mock " + String(repeating: "x", count: 100_000) + "=1\n")
        } throws: { "\($0)".utf8.count < 600 }
        // One character long: a letter and a hundred thousand accents on it.
        let accented = "a" + String(repeating: "\u{301}", count: 100_000)
        #expect {
            try parse("required mock delay=\(accented)\n").makeChain(registry: registry)
        } throws: { "\($0)".utf8.count < 600 }
        #expect { try parse("required \(accented)\n") } throws: { "\($0)".utf8.count < 600 }
        #expect { try parse("\(accented) mock\n") } throws: { "\($0)".utf8.count < 600 }
    }

    /// A backend's own refusal (an option it needs, a resource it cannot use) keeps its code in a file and
    /// is placed where it was written; given outside a file, the same error has no place and says only
    /// its message.
    @Test func aBackendsRefusalKeepsItsCodeAndGainsItsPlace() {
        let registry = ProviderRegistry([NeedyPlugin.self, DebugProviderPlugin.self])
        #expect {
            try parse("required debug\nrequired needy\n", registry: registry).makeChain(registry: registry)
        } throws: { error in
            let refused = error as! ConfigurationError
            return refused.code == .missingOption && refused.option == "service"
                && refused.location?.description == "test.conf:2:1"
                && "\(refused)" == "test.conf:2:1: service: The needy provider needs --service."
                && refused.withoutContents == "test.conf:2:1: the file is refused (missingOption error)"
        }
        #expect {
            try parse("required needy service=broken\n", registry: registry).makeChain(registry: registry)
        } throws: { error in
            let refused = error as! ConfigurationError
            return refused.code == .unusable && refused.location?.line == 1
                && "\(refused)".hasPrefix("test.conf:1:1: needy: The needy provider cannot start")
        }
        #expect {
            try registry.makeProvider(named: "needy", options: [:])
        } throws: { error in
            let refused = error as! ConfigurationError
            return refused.code == .missingOption && refused.location == nil
                && "\(refused)" == "The needy provider needs --service."
                && refused.withoutContents == "the configuration is refused (missingOption error)"
        }
    }

    /// `audit required` asks the gatekeeper to refuse logins it cannot audit, and is written back as it was.
    @Test func auditRequiredReachesTheGatekeeper() throws {
        let file = try parsed("audit required\naudit syslog\nrequired mock\n")
        #expect(file.settings.auditRequired && file.settings.gatekeeperConfiguration().login.requiresAudit)
        #expect(printed(file).contains("audit syslog socket=/dev/log\naudit required\n"))
        #expect(try !parsed("audit syslog\nrequired mock\n").settings.gatekeeperConfiguration().login.requiresAudit)
    }

    /// A stack parsed without the host's reader keeps its setting lines as written; the host reads them
    /// afterwards to the same settings, and refuses a bad one where it is.
    @Test func settingsReadAfterTheParseAreTheSame() throws {
        let text = "session idle=15m\nlockout deny=3 dir=/var/lib/gk\naudit syslog\naudit required\nrequired mock\n"
        let stack = try StackConfiguration.parse(Array(text.utf8), file: "test.conf", registry: registry)
        #expect(
            stack.settings.map(\.text) == [
                "session idle=15m", "lockout deny=3 dir=/var/lib/gk", "audit syslog", "audit required",
            ])
        #expect(try StackSettings(stack).lines == parsed(text).settings.lines)
        let bad = try StackConfiguration.parse(
            Array("delay forever\nrequired mock\n".utf8), file: "test.conf", registry: registry)
        #expect {
            try StackSettings(bad)
        } throws: { ($0 as? ConfigurationError)?.location?.description == "test.conf:1:7" }
    }

    /// Two spellings of one file are one destination.
    @Test func pathsHaveOneSpelling() throws {
        #expect(
            try parsed("audit json path=//var/log/./gk.jsonl/\n").settings.audit == [.json(path: "/var/log/gk.jsonl")])
        #expect {
            try parse("audit json path=/x\naudit json path=//x/\n")
        } throws: { "\($0)".contains("this audit destination is set twice") }
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
        (
            "[default=die default=ignore] mock",
            "test.conf:1:14: default: default is given twice (libpam would keep the first; keep one)"
        ),
        ("required mock delay", "test.conf:1:15: delay: expected name=value"),
        ("[success=done default=die mock", "test.conf:1:1: [: the bracket is not closed on this line"),
        (
            "[succes=done] mock",
            "test.conf:1:2: succes: unknown value; expected default or one of PAM's return codes (success, auth_err, user_unknown, …)"
        ),
        (
            "[success=finish] mock",
            "test.conf:1:10: finish: unknown action; expected ignore, bad, die, ok, done, reset or a jump from 1 to 2147483647"
        ),
        (
            "[success=0] mock",
            "test.conf:1:10: 0: unknown action; expected ignore, bad, die, ok, done, reset or a jump from 1 to 2147483647"
        ),
        (
            "[success=2 success = ok] mock",
            "test.conf:1:12: success: success is given twice (libpam would keep the last; keep one)"
        ),
        (
            "[success=+2] mock",
            "test.conf:1:10: +2: unknown action; expected ignore, bad, die, ok, done, reset or a jump from 1 to 2147483647"
        ),
        (
            "[success=2147483648] mock",
            "test.conf:1:10: 2147483648: unknown action; expected ignore, bad, die, ok, done, reset or a jump from 1 to 2147483647"
        ),
        ("[success] mock", "test.conf:1:2: success: expected value=action"),
        ("[success=] mock", "test.conf:1:2: success: expected value=action"),
        ("lockout deny=3 threshold=4", "test.conf:1:16: threshold: threshold is another name of deny, given too"),
        ("lockout even_deny_root even_deny_root", "test.conf:1:24: even_deny_root: even_deny_root is given twice"),
        ("substack", "test.conf:1:1: substack: substack takes one file name"),
        ("substack missing.conf", "test.conf:1:10: missing.conf: cannot be read"),
        (
            "[success=ok success=bad] mock",
            "test.conf:1:13: success: success is given twice (libpam would keep the last; keep one)"
        ),
        ("required mock\nsession idle=1m", "test.conf:2:1: session: settings come before the stack; move this line up"),
        ("session idle=1m\nsession idle=2m", "test.conf:2:1: session: session is set twice"),
        (
            "session idle=soon",
            "test.conf:1:9: soon: idle takes a duration from 0 to 30d, such as 90s, 2.5m, 8h or 7d, or none"
        ),
        (
            "session idle=999d",
            "test.conf:1:9: 999d: idle takes a duration from 0 to 30d, such as 90s, 2.5m, 8h or 7d, or none"
        ),
        ("session ttl=1m", "test.conf:1:9: ttl: session takes idle= and absolute="),
        ("attempts 0", "test.conf:1:10: 0: attempts takes a number from 1 to 10"),
        ("lockout deny=many", "test.conf:1:9: many: deny takes a number from 0 (off) to 1000"),
        ("lockout threshold=-1", "test.conf:1:9: -1: deny takes a number from 0 (off) to 1000"),
        ("lockout deny=3\nlockout deny=4", "test.conf:2:1: lockout: lockout is set twice"),
        (
            "lockout interval=0s",
            "test.conf:1:9: 0s: interval takes a duration from 1ms to 30d, such as 90s, 2.5m, 8h or 7d"
        ),
        (
            "lockout dir=faillock",
            "test.conf:1:9: faillock: dir takes an absolute path without .."
        ),
        ("lockout dir=/var/../tmp", "test.conf:1:9: /var/../tmp: dir takes an absolute path without .."),
        (
            "lockout tries=3",
            "test.conf:1:9: tries: lockout takes deny=, interval=, unlock=, root_unlock=, dir=, threshold=, duration= and even_deny_root"
        ),
        ("delay", "test.conf:1:1: delay: delay takes one value, such as 2s or 0"),
        (
            "delay 2 seconds",
            "test.conf:1:1: delay: delay takes one value, such as 2s or 0"
        ),
        (
            "delay 61s",
            "test.conf:1:7: 61s: delay takes a duration from 0 to 1m, such as 2s, 1.5s or 500ms"
        ),
        ("delay nans", "test.conf:1:7: nans: delay takes a duration from 0 to 1m, such as 2s, 1.5s or 500ms"),
        (
            "cache timeout=forever",
            "test.conf:1:7: forever: timeout takes a duration from 0 to 30d, such as 90s, 2.5m, 8h or 7d"
        ),
        (
            "cache timeout=none",
            "test.conf:1:7: none: timeout takes a duration from 0 to 30d, such as 90s, 2.5m, 8h or 7d"
        ),
        ("cache ttl=1m", "test.conf:1:7: ttl: cache takes timeout= and dir="),
        ("audit", "test.conf:1:1: audit: audit takes syslog [socket=PATH], json path=PATH, or required"),
        ("audit email", "test.conf:1:7: email: audit takes syslog [socket=PATH], json path=PATH, or required"),
        ("audit required", "test.conf:1:7: required: audit required needs an audit json or audit syslog line"),
        ("audit syslog\naudit required\naudit required", "test.conf:3:1: audit: audit is set twice"),
        ("audit syslog\naudit required now", "test.conf:2:16: now: audit required takes nothing more"),
        ("audit json", "test.conf:1:7: json: audit json needs path=PATH"),
        ("audit json file=/x", "test.conf:1:12: file: audit json takes path="),
        ("audit syslog path=/x", "test.conf:1:14: path: audit syslog takes socket="),
        ("audit json path=log.jsonl", "test.conf:1:12: log.jsonl: path takes an absolute path without .."),
        ("audit syslog\naudit syslog", "test.conf:2:1: syslog: this audit destination is set twice"),
        ("include", "test.conf:1:1: include: include takes one file name"),
        ("include missing.conf", "test.conf:1:9: missing.conf: cannot be read"),
        ("attempts 3.0", "test.conf:1:10: 3.0: attempts takes a number from 1 to 10"),
        ("attempts +3", "test.conf:1:10: +3: attempts takes a number from 1 to 10"),
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

/// A provider with a file option, a file option given absolutely, and a name that is no file.
private enum PathPlugin: AuthProviderPlugin {
    static let name = "paths"
    static let summary = "options that name files"
    static let options = [
        ProviderOption("users", valueName: "PATH", help: "a file"),
        ProviderOption("other", valueName: "DIR", help: "a directory"),
        ProviderOption("name", valueName: "NAME", help: "a name"),
    ]

    static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        DebugAuthProvider()
    }
}

/// A backend that needs `service=` and cannot start with `service=broken`.
private enum NeedyPlugin: AuthProviderPlugin {
    static let name = "needy"
    static let summary = "a backend that needs an option"
    static let options = [ProviderOption("service", valueName: "NAME", help: "a service")]

    static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        guard let service = options["service"] else { throw .missingOption("service", provider: name) }
        guard service != "broken" else { throw .unusable(provider: name, reason: "the service is broken") }
        return DebugAuthProvider()
    }
}

/// A file that holds a secret (`client_secret_file=`, `bindpw_file=`) others may read is refused, as ssh
/// refuses a private key others can read; a private one is read.
struct SecretFileTests {
    @Test func aSecretOthersCanReadIsRefused() throws {
        let directory = temporaryDirectory("gatekeeper-secret")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/client-secret"
        try "s3cret#with=marks\n".write(toFile: path, atomically: true, encoding: .utf8)
        let options = ProviderOptions(["client_secret_file": path])
        chmod(path, 0o644)
        #expect(throws: ConfigurationError.self) { try options.secretFile("client_secret_file", provider: "oidc") }
        do {
            _ = try options.secretFile("client_secret_file", provider: "oidc")
        } catch {
            #expect(error.description.contains("may be read by others"), "\(error)")
            #expect(!error.description.contains("s3cret"))
        }
        // Readable by a group other than root's: refused too (as root, chown to nogroup).
        if getuid() == 0 {
            chmod(path, 0o640)
            chown(path, 0, 65534)
            #expect(throws: ConfigurationError.self) { try options.secretFile("client_secret_file", provider: "oidc") }
            chown(path, 0, 0)
        }
        // Readable by another user through an access ACL, its mode private: refused too.
        chmod(path, 0o600)
        try #require(try grantReadThroughACL(path, toUID: 65534), "the file system took no ACL")
        do {
            _ = try options.secretFile("client_secret_file", provider: "oidc")
            Issue.record("a secret file others may read through an ACL was read")
        } catch {
            #expect(error.description.contains("access ACL"), "\(error)")
        }
        try "s3cret#with=marks\n".write(toFile: path + ".new", atomically: false, encoding: .utf8)
        #expect(rename(path + ".new", path) == 0)
        chmod(path, 0o600)
        let secret = try #require(try options.secretFile("client_secret_file", provider: "oidc"))
        #expect(secret == Secret(copying: "s3cret#with=marks".utf8))
    }
}
