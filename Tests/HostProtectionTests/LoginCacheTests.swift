import Authentication
import FileProvider
import Foundation
import HostProtection
import PasswordHashing
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
        try cache.remember(alice, in: LoginPlace(session))
        #expect(cache.lookup("alice", in: LoginPlace(session))?.provider == "file")
        #expect(cache.logins(in: session).map(\.username) == ["alice"])
        #expect(cache.lookup("bob", in: LoginPlace(session)) == nil)
        // The same pid, started at another time: a reused pid does not inherit the login.
        var reused = session
        reused.leaderStart += 1
        #expect(cache.lookup("alice", in: LoginPlace(reused)) == nil)
        var otherTerminal = session
        otherTerminal.device += 1
        #expect(cache.lookup("alice", in: LoginPlace(otherTerminal)) == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/alice")
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int == 0o700)
    }

    /// The clock moved on by hand: a login is found until its age reaches the timeout, and not from then.
    @Test func aLoginIsForgottenOnceItsTimeoutHasPassed() throws {
        let clock = ManualBootClock()
        let cache = try LoginCache(directory: directory, timeout: .seconds(300), clock: clock.now)
        try cache.remember(alice, in: LoginPlace(session))
        #expect(cache.lookup("alice", in: LoginPlace(session))?.age == .zero)
        clock.advance(by: .seconds(300) - .nanoseconds(1))
        #expect(cache.lookup("alice", in: LoginPlace(session))?.age == .seconds(300) - .nanoseconds(1))
        #expect(cache.logins(in: session).map(\.username) == ["alice"])
        clock.advance(by: .nanoseconds(1))
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil, "a login as old as the timeout was used")
        #expect(cache.logins(in: session).isEmpty)
        // Remembered again, it counts from then.
        try cache.remember(alice, in: LoginPlace(session))
        clock.advance(by: .seconds(299))
        #expect(cache.lookup("alice", in: LoginPlace(session))?.age == .seconds(299))
    }

    /// A record of another boot, or from later than now (the clock read before it was written), is never
    /// used; remembering under a new boot drops the old boot's records.
    @Test func aLoginOfAnotherBootOrFromTheFutureIsIgnored() throws {
        let clock = ManualBootClock()
        let cache = try LoginCache(directory: directory, timeout: .seconds(300), clock: clock.now)
        var other = session
        other.leader += 1
        try cache.remember(alice, in: LoginPlace(session))
        clock.advance(by: .seconds(-1))
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil, "a login from the future was used")
        clock.advance(by: .seconds(1))
        #expect(cache.lookup("alice", in: LoginPlace(session)) != nil)
        let firstBoot = clock.boot
        clock.reboot()
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil, "a login of another boot was used")
        try cache.remember(alice, in: LoginPlace(other))
        clock.reboot(into: firstBoot)
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil, "the old boot's record was kept")
    }

    /// A clock that cannot be read remembers nothing and finds nothing.
    @Test func withoutATimeNothingIsRemembered() throws {
        let clock = ManualBootClock()
        let cache = try LoginCache(directory: directory, timeout: .seconds(300), clock: clock.now)
        try cache.remember(alice, in: LoginPlace(session))
        clock.stop()
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil)
        try cache.remember(alice, in: LoginPlace(session, input: "stdin-pipe-1"))
        clock.start()
        #expect(cache.lookup("alice", in: LoginPlace(session)) != nil)
        #expect(cache.lookup("alice", in: LoginPlace(session, input: "stdin-pipe-1")) == nil)
    }

    /// Without a clock given, times are CLOCK_BOOTTIME's, with this boot's id.
    @Test func theDefaultClockIsTheBootClock() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        let before = bootNanoseconds()
        try cache.remember(alice, in: LoginPlace(session))
        let after = bootNanoseconds()
        let fields =
            try String(contentsOfFile: directory + "/alice", encoding: .utf8)
            .split(separator: "\n").first?.split(separator: " ").map(String.init) ?? []
        #expect(fields.count == 11 && fields[7] == bootID, "\(fields)")
        let time = fields.count == 11 ? Int64(fields[8]) : nil
        #expect(time.map { (before...after).contains($0) } == true, "\(before) \(fields) \(after)")
    }

    @Test func aLoginIsForgottenWhenAsked() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        var other = session
        other.leader += 1
        try cache.remember(alice, in: LoginPlace(session))
        try cache.remember(alice, in: LoginPlace(other))
        try cache.remember(Identity(username: "bob", provider: "file"), in: LoginPlace(session))
        // Two users remembered for one session: a status display lists both.
        #expect(cache.logins(in: session).map(\.username).sorted() == ["alice", "bob"])
        try cache.forget(session)
        #expect(
            cache.lookup("alice", in: LoginPlace(session)) == nil && cache.lookup("bob", in: LoginPlace(session)) == nil
        )
        #expect(cache.lookup("alice", in: LoginPlace(other)) != nil)
        cache.forgetAll(of: "alice")
        #expect(cache.lookup("alice", in: LoginPlace(other)) == nil)

        let never = try LoginCache(directory: directory, timeout: .zero)
        try never.remember(alice, in: LoginPlace(session))
        #expect(never.lookup("alice", in: LoginPlace(session)) == nil)
    }

    /// A record line from `what`, at `now` on CLOCK_BOOTTIME of boot `boot`.
    static func record(_ what: String, boot: String, now: Int64) -> String {
        let session = "v2 tty 34816 4242 123456 \(getuid()) tty"
        let scope = LoginCache.scope(of: "default")
        switch what {
        case "another boot":
            return "\(session) 00000000-0000-4000-8000-000000000000 \(now - 1_000_000_000) \(scope) file\n"
        case "the future": return "\(session) \(boot) \(now + 60_000_000_000) \(scope) file\n"
        case "another configuration":
            return "\(session) \(boot) \(now - 1_000_000_000) \(LoginCache.scope(of: "other")) file\n"
        case "a damaged line": return "\(session) \(boot) \(now - 1_000_000_000) \(scope)\n"
        case "another version": return "v1 tty 34816 4242 123456 \(boot) \(now - 1_000_000_000) \(scope) file\n"
        case "another invoking user":
            return "v2 tty 34816 4242 123456 \(getuid() &+ 1) tty \(boot) \(now - 1_000_000_000) \(scope) file\n"
        case "another input":
            return "v2 tty 34816 4242 123456 \(getuid()) stdin-1-2 \(boot) \(now - 1_000_000_000) \(scope) file\n"
        case "binary junk": return "\u{0}\u{1}v1 tty\u{FF}"
        default: return "\(session) \(boot) \(now - 1_000_000_000) \(scope) file\n"
        }
    }

    @Test(arguments: [
        "another boot", "the future", "another configuration", "a damaged line", "another version", "binary junk",
        "another invoking user", "another input",
    ])
    func aRecordThatCannotBeTrustedIsIgnored(_ what: String) throws {
        let clock = ManualBootClock()
        let cache = try LoginCache(directory: directory, timeout: .seconds(300), clock: clock.now)
        // The format is what the test writes: a good record is accepted…
        try Self.record("good", boot: clock.boot, now: clock.nanoseconds)
            .write(toFile: directory + "/alice", atomically: true, encoding: .utf8)
        #expect(cache.lookup("alice", in: LoginPlace(session)) != nil)
        // …and one from elsewhere is not.
        try Self.record(what, boot: clock.boot, now: clock.nanoseconds)
            .write(toFile: directory + "/alice", atomically: true, encoding: .utf8)
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil, "a record from \(what) was accepted")
    }

    /// A login is valid only where it was made: the same invoking user and the same source of input.
    @Test func aLoginIsKeyedOnTheInvokingUserAndTheInput() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        let pipe = LoginPlace(session, invokingUser: 1000, input: "stdin-12-3456")
        try cache.remember(alice, in: pipe)
        #expect(cache.lookup("alice", in: pipe) != nil)
        #expect(cache.lookup("alice", in: LoginPlace(session, invokingUser: 1001, input: "stdin-12-3456")) == nil)
        #expect(cache.lookup("alice", in: LoginPlace(session, invokingUser: 1000, input: "stdin-12-3457")) == nil)
        #expect(cache.lookup("alice", in: LoginPlace(session, invokingUser: 1000)) == nil)
        // Through the gatekeeper's protocol: only ever by the account's name.
        let remembering = cache.remembering(at: pipe)
        #expect(remembering.lookup("alice")?.username == "alice")
        #expect(remembering.lookup("mallory") == nil)
    }

    /// Logins remembered at once for one user, from many places (as many processes would), all stay:
    /// each read and rewrite of the user's records holds the cache's lock.
    @Test func loginsRememberedAtOnceAreAllKept() async throws {
        let caches = try (0..<16).map { _ in try LoginCache(directory: directory, timeout: .seconds(300)) }
        let places = (0..<16).map { LoginPlace(session, input: "stdin-7-\($0)") }
        await withTaskGroup(of: Void.self) { group in
            for (cache, place) in zip(caches, places) {
                group.addTask { try? cache.remember(alice, in: place) }
            }
        }
        for place in places { #expect(caches[0].lookup("alice", in: place) != nil, "\(place.input) was lost") }
    }

    @Test func aRecordFileOthersCouldWriteIsIgnored() throws {
        let cache = try LoginCache(directory: directory, timeout: .seconds(300))
        try cache.remember(alice, in: LoginPlace(session))
        chmod(directory + "/alice", 0o666)
        #expect(cache.lookup("alice", in: LoginPlace(session)) == nil)
    }
}

/// A boot clock moved on by hand: tests say how much time passes instead of waiting for it.
final class ManualBootClock: Sendable {
    private let state: Locked<(instant: BootInstant, running: Bool)>

    /// Starts an hour into a boot of its own.
    init(boot: String = ManualBootClock.newBoot(), nanoseconds: Int64 = 3_600_000_000_000) {
        state = Locked((BootInstant(nanoseconds: nanoseconds, boot: boot), true))
    }

    /// What the cache reads: the time, or `nil` while stopped.
    var now: @Sendable () -> BootInstant? {
        { [state] in state.withLock { $0.running ? $0.instant : nil } }
    }

    var boot: String { state.withLock { $0.instant.boot } }
    var nanoseconds: Int64 { state.withLock { $0.instant.nanoseconds } }

    func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        state.withLock { $0.instant.nanoseconds += seconds * 1_000_000_000 + attoseconds / 1_000_000_000 }
    }

    /// The same time, in another boot (a new one unless `boot` is given).
    func reboot(into boot: String = ManualBootClock.newBoot()) { state.withLock { $0.instant.boot = boot } }

    /// The clock cannot be read until ``start()``.
    func stop() { state.withLock { $0.running = false } }
    func start() { state.withLock { $0.running = true } }

    private static let boots = Locked(0)

    /// A boot id of the kernel's shape (36 characters), never the same twice in a run.
    static func newBoot() -> String {
        let digits = String(
            boots.withLock {
                $0 += 1; return $0
            }, radix: 16)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - digits.count) + digits
    }
}

/// gatekeeper-run remembers a login for the place it ran in — here, without a terminal, its parent (this
/// test process), the invoking user, and its standard input (one pipe kept open across runs, as a
/// long-lived parent hands each run the same input) — and uses it only once the name read names the
/// account, after rechecking the account.
@Suite(.serialized, .timeLimit(.minutes(2)))
final class RememberedLoginTests {
    let state = temporaryDirectory("gatekeeper-remembered")
    /// The one pipe every run reads its answers from; the test holds the writing end.
    let pipe: (read: Int32, write: Int32)

    init() {
        var ends: [Int32] = [-1, -1]
        Glibc.pipe(&ends)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        pipe = (ends[0], ends[1])
    }

    deinit {
        close(pipe.read)
        close(pipe.write)
    }

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

    /// Starts gatekeeper-run on the shared pipe and writes `answers` to it.
    func start(_ config: String, _ arguments: [String] = [], answers: String) throws -> Spawned {
        let process = try Spawned(
            HostProtectionTests.gatekeeperRun,
            ["--config", config, "--state-dir", state] + arguments + ["--", "echo", "ran"],
            standardInputDescriptor: pipe.read)
        _ = answers.utf8CString.withUnsafeBytes { write(pipe.write, $0.baseAddress, $0.count - 1) }
        return process
    }

    /// A run that answers everything it is asked and ends by itself.
    func gatekeeperRun(_ config: String, _ arguments: [String] = [], answers: String) throws -> RunResult {
        try start(config, arguments, answers: answers).finish()
    }

    /// A run that is left waiting at its `count`th `prompt`: it is then interrupted (exit 130).
    func waitingRun(_ config: String, _ arguments: [String] = [], answers: String, at prompt: String, count: Int = 1)
        throws -> RunResult
    {
        let process = try start(config, arguments, answers: answers)
        #expect(eventually { process.stderr.components(separatedBy: prompt).count - 1 >= count }, "\(process.stderr)")
        process.interrupt()
        return process.finish()
    }

    func auditEvents() throws -> [String] {
        try String(contentsOfFile: state + "/audit.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func aSecondRunFromTheSamePlaceAsksTheNameButNotThePassword() throws {
        let config = try configuration()
        let first = try gatekeeperRun(config, answers: "alice\nwonderland\n")
        #expect(first.status == 0 && first.stderr.contains("Password:"))
        let second = try gatekeeperRun(config, answers: "alice\n")
        #expect(second.status == 0 && second.stdout == "ran\n")
        #expect(second.stderr.contains("Username:") && !second.stderr.contains("Password:"))
        #expect(
            try auditEvents().contains { $0.contains("\"event\":\"cachedLogin\"") && $0.contains("\"user\":\"alice\"") }
        )
        // -k forgets it: the next run asks again.
        #expect(
            try run(HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "-k"], input: "")
                .status == 0)
        let asked = try waitingRun(config, answers: "alice\n", at: "Password:")
        #expect(asked.status == 130 && asked.stdout.isEmpty)
    }

    /// The review's chain: one parent runs gatekeeper-run for several people, name and password on
    /// standard input. The second person's command never runs as the first.
    @Test func aRememberedLoginNeverRidesAcrossPeople() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, answers: "alice\nwonderland\n").status == 0)
        // Asked for a password, refused, asked for a name again: the command never ran.
        let mallory = try waitingRun(config, answers: "mallory\nwrong\n", at: "Username:", count: 2)
        #expect(mallory.status == 130 && mallory.stdout.isEmpty && mallory.stderr.contains("Password:"))
        let bob = try waitingRun(config, answers: "bob\n", at: "Password:")
        #expect(bob.status == 130 && bob.stdout.isEmpty)
        #expect(!(try auditEvents().contains { $0.contains("cachedLogin") && !$0.contains("\"user\":\"alice\"") }))
        // Input from elsewhere (a pipe of its own, or a file): alice's login is not lent to it.
        let piped = try run(
            HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "--", "echo", "ran"],
            input: "alice\n")
        #expect(piped.status == 130 && piped.stdout.isEmpty)
        let named = try run(
            HostProtectionTests.gatekeeperRun,
            ["--config", config, "--state-dir", state, "--user", "alice", "--", "echo", "ran"], input: "")
        #expect(named.status == 130 && named.stdout.isEmpty)
    }

    /// From attacking the first fix: a file's inode is reused as soon as it is removed, so a parent giving
    /// each person a fresh file of answers must not lend one login to the next. A file is never an input
    /// a login is remembered for.
    @Test func aLoginReadFromAFileIsNeverRemembered() throws {
        let config = try configuration()
        let answers = state + "/answers"
        try "alice\nwonderland\n".write(toFile: answers, atomically: false, encoding: .utf8)
        let first = try run(
            HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "--", "echo", "ran"],
            inputFile: answers)
        #expect(first.status == 0)
        unlink(answers)
        try "alice\n".write(toFile: answers, atomically: false, encoding: .utf8)
        let second = try run(
            HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "--", "echo", "ran"],
            inputFile: answers)
        #expect(second.status == 130 && second.stdout.isEmpty, "\(second.stderr)")
    }

    @Test func aPasswordOnStandardInputIsAlwaysChecked() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, answers: "alice\nwonderland\n").status == 0)
        let wrong = try gatekeeperRun(config, ["--user", "alice", "--password-stdin"], answers: "wrong\n")
        #expect(wrong.status == 77)
    }

    @Test func aTimeoutOfZeroNeverRemembers() throws {
        let config = try configuration("cache timeout=0")
        #expect(try gatekeeperRun(config, answers: "alice\nwonderland\n").status == 0)
        #expect(try waitingRun(config, answers: "alice\n", at: "Password:").status == 130)
    }

    @Test func anAccountLockedOutSinceLosesItsRememberedLogin() throws {
        let config = try configuration("lockout deny=2 unlock=10m")
        #expect(try gatekeeperRun(config, answers: "alice\nwonderland\n").status == 0)
        let store = try FaillockStore(directory: state + "/faillock")
        let policy = LockoutPolicy(deny: 2)
        for _ in 0..<2 {
            _ = try store.recordFailure(of: LockoutAccount("alice"), source: .service("t"), policy: policy)
        }
        let locked = try gatekeeperRun(config, ["--user", "alice"], answers: "")
        #expect(locked.status == 77 && locked.stdout.isEmpty)
        // Once unlocked (gatekeeper-run --unlock), it is remembered again.
        let unlock = try run(
            HostProtectionTests.gatekeeperRun, ["--config", config, "--state-dir", state, "--unlock", "alice"],
            input: "")
        #expect(unlock.status == 0)
        #expect(try gatekeeperRun(config, answers: "alice\n").status == 0)
        #expect(try auditEvents().contains { $0.contains("\"event\":\"unlocked\"") })
    }

    @Test func anAccountDeletedOrLockedInTheBackendLosesItsRememberedLogin() throws {
        let users = UsersFileStore(path: state + "/users")
        try users.addUser(
            "erin", hash: try PasswordHash.make(Secret(copying: "erin-2026".utf8), scheme: .bcrypt), createFile: true)
        let config = try configuration(provider: "required file users=\(state)/users")
        #expect(try gatekeeperRun(config, answers: "erin\nerin-2026\n").status == 0)
        #expect(try gatekeeperRun(config, answers: "erin\n").status == 0)
        try users.lockUser("erin")
        #expect(try waitingRun(config, answers: "erin\n", at: "Password:").status == 130)
        try users.unlockUser("erin")
        #expect(try gatekeeperRun(config, answers: "erin\n").status == 0)
        try users.deleteUser("erin")
        #expect(try waitingRun(config, answers: "erin\n", at: "Password:").status == 130)
    }

    @Test func aLoginRememberedUnderOneConfigurationIsNotUsedUnderAnother() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, answers: "alice\nwonderland\n").status == 0)
        // The same provider with other options, or another stack: asked again.
        let stricter = try configuration(provider: "required mock delay=0.01")
        #expect(try waitingRun(stricter, answers: "alice\n", at: "Password:").status == 130)
        let single = try Spawned(
            HostProtectionTests.gatekeeperRun,
            ["--provider", "mock", "--delay", "0", "--state-dir", state, "--", "true"],
            standardInputDescriptor: pipe.read)
        _ = write(pipe.write, "alice\n", 6)
        #expect(eventually { single.stderr.contains("Password:") })
        single.interrupt()
        #expect(single.finish().status == 130)
    }

    /// From attacking the fix: `--users users` in two directories names two files; a login remembered
    /// through one is not used through the other. One parent shell runs both, on one standard input.
    @Test func aRelativePathNamesItsOwnFileInTheScope() throws {
        let passwd = builtExecutable("gatekeeper-passwd").path
        for (directory, password) in [("d1", "weak-2026"), ("d2", "Strong-2026")] {
            try FileManager.default.createDirectory(atPath: state + "/" + directory, withIntermediateDirectories: true)
            let added = try shell(
                "'\(passwd)' add '\(state)/\(directory)/users' alice --password-stdin --create", input: password + "\n")
            #expect(added.status == 0, "\(added.output)")
        }
        let tool = HostProtectionTests.gatekeeperRun.path
        let arguments = "--provider file --users users --state-dir '\(state)' -- echo"
        let result = try shell(
            "cd '\(state)/d1' && '\(tool)' \(arguments) first; cd '\(state)/d2' && '\(tool)' \(arguments) second; echo \"status $?\"",
            input: "alice\nweak-2026\nalice\n")
        #expect(result.output.contains("first") && !result.output.contains("second"), "\(result.output)")
        #expect(result.output.contains("status 130"), "\(result.output)")
    }

    @Test func aRememberedLoginStillNeedsTheGroup() throws {
        let config = try configuration()
        #expect(try gatekeeperRun(config, answers: "bob\nbuilder\n").status == 0)
        let refused = try gatekeeperRun(config, ["--group", "admin"], answers: "bob\n")
        #expect(refused.status == 77 && refused.stdout.isEmpty)
        #expect(!refused.stderr.contains("Password:"))
    }
}

enum HostProtectionTests {
    static let gatekeeperRun = builtExecutable("gatekeeper-run")
}
