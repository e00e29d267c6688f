import Authentication
import FileProvider
import Foundation
import HostProtection
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(1)))
struct LoginCacheTests {
    let directory = temporaryDirectory("gatekeeper-cache") + "/cache"
    let session = TerminalSession(kind: .terminal, device: 34_816, leader: 4242, leaderStart: 123_456)
    let alice = Identity(username: "alice", provider: "file")

    var bootID: String {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    func bootNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    @Test func remembersALoginForItsSessionOnly() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        try cache.remember(alice, in: session)
        #expect(cache.lookup("alice", in: session)?.provider == "file")
        #expect(cache.lookup(nil, in: session)?.username == "alice")
        #expect(cache.lookup("bob", in: session) == nil)
        // The same pid, started at another time: a reused pid does not inherit the login.
        var reused = session
        reused.leaderStart += 1
        #expect(cache.lookup("alice", in: reused) == nil)
        var otherTerminal = session
        otherTerminal.device += 1
        #expect(cache.lookup("alice", in: otherTerminal) == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/alice")
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int == 0o700)
    }

    @Test func aLoginIsForgottenAfterTheTimeoutOrWhenAsked() throws {
        let brief = try LoginCache(directory: directory, timeout: .milliseconds(200))
        try brief.remember(alice, in: session)
        #expect(brief.lookup("alice", in: session) != nil)
        usleep(300_000)
        #expect(brief.lookup("alice", in: session) == nil)

        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        var other = session
        other.leader += 1
        try cache.remember(alice, in: session)
        try cache.remember(alice, in: other)
        try cache.remember(Identity(username: "bob", provider: "file"), in: session)
        // Two users remembered for one session: without a name, neither is chosen.
        #expect(cache.lookup(nil, in: session) == nil)
        cache.forget(session)
        #expect(cache.lookup("alice", in: session) == nil && cache.lookup("bob", in: session) == nil)
        #expect(cache.lookup("alice", in: other) != nil)
        cache.forgetAll(of: "alice")
        #expect(cache.lookup("alice", in: other) == nil)

        let never = try LoginCache(directory: directory, timeout: .zero)
        try never.remember(alice, in: session)
        #expect(never.lookup("alice", in: session) == nil)
    }

    /// A record line from `what`, at `now` on CLOCK_BOOTTIME of boot `boot`.
    static func record(_ what: String, boot: String, now: Int64) -> String {
        let session = "v1 tty 34816 4242 123456"
        let scope = LoginCache.scope(of: "default")
        switch what {
        case "another boot":
            return "\(session) 00000000-0000-4000-8000-000000000000 \(now - 1_000_000_000) \(scope) file\n"
        case "the future": return "\(session) \(boot) \(now + 60_000_000_000) \(scope) file\n"
        case "another configuration":
            return "\(session) \(boot) \(now - 1_000_000_000) \(LoginCache.scope(of: "other")) file\n"
        case "a damaged line": return "\(session) \(boot) \(now - 1_000_000_000) \(scope)\n"
        case "another version": return "v2 tty 34816 4242 123456 \(boot) \(now - 1_000_000_000) \(scope) file\n"
        case "binary junk": return "\u{0}\u{1}v1 tty\u{FF}"
        default: return "\(session) \(boot) \(now - 1_000_000_000) \(scope) file\n"
        }
    }

    @Test(arguments: [
        "another boot", "the future", "another configuration", "a damaged line", "another version", "binary junk",
    ])
    func aRecordThatCannotBeTrustedIsIgnored(_ what: String) throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        // The format is what the test writes: a good record is accepted…
        try Self.record("good", boot: bootID, now: bootNanoseconds())
            .write(toFile: directory + "/alice", atomically: true, encoding: .utf8)
        #expect(cache.lookup("alice", in: session) != nil)
        // …and one from elsewhere is not.
        try Self.record(what, boot: bootID, now: bootNanoseconds())
            .write(toFile: directory + "/alice", atomically: true, encoding: .utf8)
        #expect(cache.lookup("alice", in: session) == nil, "a record from \(what) was accepted")
    }

    @Test func aRecordFileOthersCouldWriteIsIgnored() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        try cache.remember(alice, in: session)
        chmod(directory + "/alice", 0o666)
        #expect(cache.lookup("alice", in: session) == nil)
    }
}

/// gatekeeper-run remembers a login for the session it ran in (here, without a terminal, its parent:
/// this test process), and rechecks the account before it uses one.
@Suite(.timeLimit(.minutes(2)))
struct RememberedLoginTests {
    let state = temporaryDirectory("gatekeeper-remembered")

    func configuration(_ lines: String = "", provider: String = "required mock delay=0") throws -> String {
        let path = state + "/gatekeeper.conf"
        try """
        delay 0
        audit json path=\(state)/audit.jsonl
        \(lines)
        \(provider)

        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func gatekeeperRun(_ config: String, _ arguments: [String] = [], input: String = "") throws -> RunResult {
        try run(
            HostProtectionTests.gatekeeperRun,
            ["--config", config, "--state-dir", state] + arguments + ["--", "echo", "ran"],
            input: input)
    }

    func auditEvents() throws -> [String] {
        try String(contentsOfFile: state + "/audit.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func aSecondRunFromTheSameSessionDoesNotAsk() throws {
        let config = try configuration()
        let first = try gatekeeperRun(config, input: "alice\nwonderland\n")
        #expect(first.status == 0 && first.stderr.contains("Password:"))
        let second = try gatekeeperRun(config)
        #expect(second.status == 0 && second.stdout == "ran\n")
        #expect(!second.stderr.contains("Password:") && !second.stderr.contains("Username:"))
        #expect(
            try auditEvents().contains { $0.contains("\"event\":\"cachedLogin\"") && $0.contains("\"user\":\"alice\"") }
        )
        // -k forgets it: the next run asks again (and, with no answer, is cancelled).
        #expect(try gatekeeperRun(config, ["-k"]).status == 130)
        #expect(try gatekeeperRun(config).status == 130)
    }

    @Test func aPasswordOnStandardInputIsAlwaysChecked() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, input: "alice\nwonderland\n").status == 0)
        let wrong = try gatekeeperRun(config, ["--user", "alice", "--password-stdin"], input: "wrong\n")
        #expect(wrong.status == 77)
    }

    @Test func aTimeoutOfZeroNeverRemembers() throws {
        let config = try configuration("cache timeout=0")
        #expect(try gatekeeperRun(config, input: "alice\nwonderland\n").status == 0)
        #expect(try gatekeeperRun(config).status == 130)
    }

    @Test func anAccountLockedOutSinceLosesItsRememberedLogin() throws {
        let config = try configuration("lockout deny=2 unlock=10m")
        #expect(try gatekeeperRun(config, input: "alice\nwonderland\n").status == 0)
        let store = try FaillockStore(directory: state + "/faillock")
        let policy = LockoutPolicy(deny: 2)
        for _ in 0..<2 { _ = try store.recordFailure(of: "alice", known: true, source: .service("t"), policy: policy) }
        #expect(try gatekeeperRun(config).status == 130)
        // Once unlocked (gatekeeper-run --unlock), it is remembered again.
        let unlock = try run(
            HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "--unlock", "alice"],
            input: "")
        #expect(unlock.status == 0)
        #expect(try gatekeeperRun(config).status == 0)
        #expect(try auditEvents().contains { $0.contains("\"event\":\"unlocked\"") })
    }

    @Test func anAccountDeletedOrLockedInTheBackendLosesItsRememberedLogin() throws {
        let users = UsersFileStore(path: state + "/users")
        try users.addUser(
            "erin", hash: try PasswordHash.make(Secret(copying: "erin-2026".utf8), scheme: .bcrypt), createFile: true)
        let config = try configuration(provider: "required file users=\(state)/users")
        #expect(try gatekeeperRun(config, input: "erin\nerin-2026\n").status == 0)
        #expect(try gatekeeperRun(config).status == 0)
        try users.lockUser("erin")
        #expect(try gatekeeperRun(config).status == 130)
        try users.unlockUser("erin")
        #expect(try gatekeeperRun(config).status == 0)
        try users.deleteUser("erin")
        #expect(try gatekeeperRun(config).status == 130)
    }

    @Test func aLoginRememberedUnderOneConfigurationIsNotUsedUnderAnother() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, input: "alice\nwonderland\n").status == 0)
        // The same provider with other options, or another stack: asked again.
        let stricter = try configuration(provider: "required mock delay=0.01")
        #expect(try gatekeeperRun(stricter).status == 130)
        let single = try run(
            HostProtectionTests.gatekeeperRun,
            ["--provider", "mock", "--delay", "0", "--state-dir", state, "--", "true"],
            input: "")
        #expect(single.status == 130)
    }

    @Test func aRememberedLoginStillNeedsTheGroup() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, input: "bob\nbuilder\n").status == 0)
        let refused = try gatekeeperRun(config, ["--group", "admin"])
        #expect(refused.status == 77 && refused.stdout.isEmpty)
    }
}

enum HostProtectionTests {
    static let gatekeeperRun = builtExecutable("gatekeeper-run")
}
