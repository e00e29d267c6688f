import Authentication
import AuthenticationTesting
import Foundation
import OfflineCache
import TestSupport
import Testing

/// Logins while the backend is unreachable: from a cache of online successes, with a lockout of its own.
/// The backend is a double; the LDAP provider's own use of the cache is tested against slapd in
/// LDAPProviderTests.
@Suite(.timeLimit(.minutes(2)))
struct OfflineCacheTests {
    /// alice / wonderland, reachable or not as the test says.
    final class Switchable: ReachabilityReporting {
        let name = "switchable"
        let offlineScope: String
        init(scope: String = "switchable") { offlineScope = scope }
        let reachable = Locked(true)
        let known = Locked(true)
        /// Reachable, but refusing the service account (a locked or wrong bind DN).
        let refusing = Locked(false)
        let password = Locked("wonderland")
        let groups = Locked<Set<String>>(["staff"])
        /// What ``standing(of:)`` says: the password's stamp, whether the account is locked, and the names
        /// it was asked about.
        let stamp = Locked<String?>("set 1")
        let locked = Locked(false)
        let asked = Locked<[String]>([])
        /// How long the next ``standing(of:)`` takes (once): a login whose saving is slow.
        let slowOnce = Locked<Duration?>(nil)
        /// How long the next login's answer takes once its password was checked (once): a bind answered late.
        let slowAnswerOnce = Locked<Duration?>(nil)
        /// How many logins' passwords were checked.
        let checked = Locked(0)
        /// Whether the login's caller goes away as soon as the answer is given (its task cancelled: a closed
        /// connection, ^C).
        let callerLeavesAfterAnswer = Locked(false)

        func standing(of username: String) async -> AccountStanding {
            asked.withLock { $0.append(username) }
            if let delay = slowOnce.withLock({ value in
                defer { value = nil }; return value
            }) {
                try? await Task.sleep(for: delay)
            }
            return standingNow(username)
        }

        /// The standing as the directory has it now, asked of nobody.
        func standingNow(_ username: String) -> AccountStanding {
            guard reachable.withLock({ $0 }) else { return .cannotTell }
            guard known.withLock({ $0 }), username == "alice" else { return .withdrawn(reason: "gone") }
            if locked.withLock({ $0 }) { return .withdrawn(reason: "locked") }
            return .current(stamp: stamp.withLock { $0 })
        }

        func standingWithGroups(of username: String) async -> AccountStanding {
            let standing = await standing(of: username)
            guard case .current(let stamp, _) = standing else { return standing }
            return .current(stamp: stamp, groups: groups.withLock { $0 })
        }

        func recheckOnline(_ identity: Identity) async -> OnlineRecheck {
            guard reachable.withLock({ $0 }) else { return .unreachable(reason: "the server is down") }
            if refusing.withLock({ $0 }) { return .answered(.unavailable(reason: "the service account's bind")) }
            guard known.withLock({ $0 }), identity.username == "alice" else {
                return .answered(.refused(.userNotFound))
            }
            if locked.withLock({ $0 }) { return .answered(.refused(.accountLocked(until: nil))) }
            return .answered(.valid(Identity(username: "alice", groups: groups.withLock { $0 }, provider: name)))
        }

        /// As a directory's login: the entry read, the password checked, then the answer (late, once, when the
        /// test says).
        func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin {
            let password = try await request.conversation.askSecret("Password: ")
            let before = standingNow(request.username)
            let answer = check(request.username, password)
            checked.withLock { $0 += 1 }
            if let delay = slowAnswerOnce.withLock({ value in
                defer { value = nil }; return value
            }) {
                try? await Task.sleep(for: delay)
            }
            if callerLeavesAfterAnswer.withLock({ $0 }) { withUnsafeCurrentTask { $0?.cancel() } }
            return OnlineLogin(answer, standingBefore: before)
        }

        func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer {
            try await loginOnline(request).answer
        }

        func check(_ username: String, _ password: Secret) -> OnlineAnswer {
            guard reachable.withLock({ $0 }) else { return .unreachable(reason: "the server is down") }
            if refusing.withLock({ $0 }) {
                return .answered(.unavailable(reason: "the service account's bind was refused"))
            }
            guard known.withLock({ $0 }), username == "alice" else { return .answered(.notMine) }
            return password == Secret(copying: self.password.withLock({ $0 }).utf8)
                ? .answered(
                    .authenticated(
                        Identity(
                            username: "alice", displayName: "Alice", groups: groups.withLock { $0 }, provider: name))
                )
                : .answered(.rejected(.wrongCredentials))
        }

        var changesPasswords: Bool { true }

        /// The current password, then in the update the new one twice.
        func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
            let current = try await request.conversation.askSecret(PasswordPrompt.current)
            guard current == Secret(copying: password.withLock({ $0 }).utf8) else {
                return .rejected(.wrongCurrentPassword)
            }
            guard request.pass == .update else { return .changed }
            guard case .success(let new) = try await PasswordPrompt.askNewPassword(request.conversation) else {
                return .rejected(.unacceptable("the two entries differ"))
            }
            new.withUnsafeBytes { bytes in password.withLock { $0 = String(decoding: bytes, as: UTF8.self) } }
            return .changed
        }
    }

    /// The system's clock as the cache reads it (seconds since the epoch), moved on by hand.
    final class ManualClock: Sendable {
        private let seconds = Locked<Int64>(1_800_000_000)

        var now: @Sendable () -> Int64 { { [seconds] in seconds.withLock { $0 } } }

        func advance(by delta: Int64) { seconds.withLock { $0 += delta } }
    }

    let directory = temporaryDirectory("gatekeeper-offline") + "/cache"

    func login(_ provider: any AuthProvider, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret(password))))
    }

    /// A group's name is kept whole offline: a posixGroup `cn: ops,admin` is one group online and offline
    /// (it was two offline, and `--group admin` admitted), and `%` and tabs in names survive too.
    @Test func groupNamesSurviveTheCacheWhole() async throws {
        let backend = Switchable()
        let groups: Set<String> = ["ops,admin", "50%,off", "staff", "a%2Cb"]
        backend.groups.withLock { $0 = groups }
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        backend.reachable.withLock { $0 = false }
        let identity = try expectAuthenticated(
            try await login(cache, "wonderland"), "the cached login was refused offline")
        #expect(identity.groups == groups)
        #expect(!identity.groups.contains("admin"))
    }

    /// Once the password is changed, the old one cannot sign in offline: its cached verifier is gone.
    @Test func aChangedPasswordForgetsTheCachedOne() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        #expect(cache.changesPasswords)
        let outcome = try await cache.changePassword(
            of: "alice",
            conversation: ScriptedConversation(
                .secret("wonderland"), .secret("looking-glass"), .secret("looking-glass")))
        #expect(outcome == .changed)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "wonderland").pamResult != .success)
        // Online again, the new password is cached and serves offline.
        backend.reachable.withLock { $0 = true }
        #expect(try await login(cache, "looking-glass").pamResult == .success)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "looking-glass").pamResult == .success)
    }

    @Test func anOnlineSuccessLetsTheSamePasswordInWhileTheBackendIsDown() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400))
        // Nothing cached yet: down is down.
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("an offline login without a cached one was admitted")
            return
        }
        backend.reachable.withLock { $0 = true }
        try expectAuthenticated(try await login(cache, "wonderland"), "the online login failed")
        backend.reachable.withLock { $0 = false }
        let identity = try expectAuthenticated(
            try await login(cache, "wonderland"), "the cached login was refused offline")
        #expect(
            identity.attributes["offline"] == "yes" && identity.groups == ["staff"] && identity.displayName == "Alice")
        #expect(try await login(cache, "wrong") == .rejected(.wrongCredentials))
        // The cache is private, and holds no password.
        let file = cache.filePath
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int == 0o700)
        #expect(!(try String(contentsOfFile: file, encoding: .utf8)).contains("wonderland"))
    }

    @Test func offlineGuessingIsLockedOutUntilTheNextOnlineSuccess() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), maxOfflineFailures: 3)
        _ = try await login(cache, "wonderland")
        backend.reachable.withLock { $0 = false }
        for _ in 0..<3 { #expect(try await login(cache, "guess") == .rejected(.wrongCredentials)) }
        // The right password no longer helps offline — another process (a new cache object) agrees.
        #expect(try await login(cache, "wonderland") == .rejected(.locked(until: nil)))
        let again = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), maxOfflineFailures: 3)
        #expect(try await login(again, "wonderland") == .rejected(.locked(until: nil)))
        backend.reachable.withLock { $0 = true }
        try expectAuthenticated(try await login(cache, "wonderland"), "the online login failed")
        backend.reachable.withLock { $0 = false }
        try expectAuthenticated(
            try await login(cache, "wonderland"), "an online success did not reset the offline count")
    }

    /// The review's chain: alice's password is reset online, and the directory then refuses the service
    /// account (locked by someone's wrong binds). Reachable is not offline: her old password is refused,
    /// and so is the new one, until the configuration is mended.
    @Test func aDirectoryThatRefusesIsNotOffline() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        try expectAuthenticated(try await login(cache, "wonderland"), "the online login failed")
        backend.refusing.withLock { $0 = true }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a directory refusing the service account was taken for offline")
            return
        }
    }

    /// The cached password refused online (it was changed in the directory) drops the cached verifier: the
    /// old one is never admitted offline. A wrong guess online does not: anyone who can try a name could
    /// otherwise wipe its offline login before an outage. Both told by this process's note and, in another
    /// process (a cache made anew), by checking the verifier.
    @Test(arguments: [false, true])
    func onlyTheCachedPasswordRefusedOnlineDropsTheVerifier(_ anotherProcess: Bool) async throws {
        let backend = Switchable()
        let first = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        _ = try await login(first, "wonderland")
        let cache =
            anotherProcess
            ? try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400)) : first
        #expect(try await login(cache, "a-guess") == .rejected(.wrongCredentials))
        #expect(try await login(cache, "another-guess") == .rejected(.wrongCredentials))
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "wonderland").pamResult == .success, "a wrong guess online wiped the entry")
        backend.reachable.withLock { $0 = true }
        backend.password.withLock { $0 = "looking-glass" }
        #expect(try await login(cache, "wonderland") == .rejected(.wrongCredentials))
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("the old password was admitted offline after the directory refused it")
            return
        }
    }

    /// Thirty guesses at once, from as many caches on the same file (as from as many processes): at most
    /// the limit is ever checked, and the count on file is exactly that.
    @Test func parallelOfflineGuessesAreCountedBeforeTheyAreChecked() async throws {
        let backend = Switchable()
        let first = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), maxOfflineFailures: 5)
        _ = try await login(first, "wonderland")
        backend.reachable.withLock { $0 = false }
        let caches = try (0..<30).map { _ in
            try OfflineCachingProvider(
                wrapping: backend, directory: directory, maxAge: .seconds(86_400), maxOfflineFailures: 5)
        }
        let answers = await withTaskGroup(of: AuthOutcome?.self) { group in
            for cache in caches { group.addTask { try? await self.login(cache, "guess") } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let checked = answers.filter { $0 == .rejected(.wrongCredentials) }.count
        let refused = answers.filter { $0 == .rejected(.locked(until: nil)) }.count
        #expect(checked == 5 && refused == 25, "\(checked) checked, \(refused) refused")
        let file = try String(contentsOfFile: first.filePath, encoding: .utf8)
        #expect(file.split(separator: "\t").dropFirst(3).first == "5", "\(file)")
        // And the right password is no help now, offline.
        #expect(try await login(first, "wonderland") == .rejected(.locked(until: nil)))
    }

    /// The clock moved on by hand: an entry serves offline until its age reaches the maximum, and not
    /// from then.
    @Test func anEntryServesUntilItsMaximumAge() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(60), clock: clock.now)
        try expectAuthenticated(try await login(cache, "wonderland"), "the online login failed")
        backend.reachable.withLock { $0 = false }
        clock.advance(by: 59)
        try expectAuthenticated(
            try await login(cache, "wonderland"), "an entry younger than its maximum age was refused")
        clock.advance(by: 1)
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("an entry as old as its maximum age was used")
            return
        }
        // An online success saves it anew, and its age counts from then.
        backend.reachable.withLock { $0 = true }
        _ = try await login(cache, "wonderland")
        backend.reachable.withLock { $0 = false }
        clock.advance(by: 59)
        try expectAuthenticated(try await login(cache, "wonderland"), "an entry saved again online was refused")
    }

    /// An entry saved later than now (the clock was set back) is not used until its time has come.
    @Test func anEntryFromTheFutureIsNotUsed() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(60), clock: clock.now)
        _ = try await login(cache, "wonderland")
        backend.reachable.withLock { $0 = false }
        clock.advance(by: -1)
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("an entry from the future was used")
            return
        }
        clock.advance(by: 1)
        try expectAuthenticated(try await login(cache, "wonderland"), "the entry was refused once its time had come")
    }

    /// A saved time so far in the past or future that its age cannot be counted refuses the entry, rather
    /// than trapping on the subtraction (the cache file is the running user's to damage).
    @Test(arguments: [Int64.min, Int64.min + 1, -1, Int64.max])
    func anEntrySavedAtATimeOutOfRangeIsNotUsed(_ savedAt: Int64) async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        _ = try await login(cache, "wonderland")
        let file = cache.filePath
        var fields = try String(contentsOfFile: file, encoding: .utf8).dropLast().split(
            separator: "\t", omittingEmptySubsequences: false)
        try #require(fields.count == 8)
        fields[2] = "\(savedAt)"
        try rewrite(file, fields.joined(separator: "\t") + "\n")
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("an entry saved at \(savedAt) was used")
            return
        }
    }

    /// Without a clock given, entries are saved at the system's time (seconds since the epoch).
    @Test func theDefaultClockIsTheSystemClock() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(60))
        let before = Int64(time(nil))
        _ = try await login(cache, "wonderland")
        let after = Int64(time(nil))
        let line = try String(contentsOfFile: cache.filePath, encoding: .utf8)
        let savedAt = line.split(separator: "\t").dropFirst(2).first.flatMap { Int64($0) }
        #expect(savedAt.map { (before...after).contains($0) } == true, "\(before) \(line) \(after)")
    }

    /// The backend says the account is gone: its entry goes too.
    @Test func anAccountTheBackendNoLongerKnowsLosesItsEntry() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        _ = try await login(cache, "wonderland")
        backend.known.withLock { $0 = false }
        #expect(try await login(cache, "wonderland") == .notMine)
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("the entry of an account the backend no longer knows was used")
            return
        }
    }

    func login(_ provider: any AuthProvider, as username: String, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: username, conversation: ScriptedConversation(.secret(password))))
    }

    /// An administrator's reset, lock or deletion, made while the backend is reachable, ends the cached
    /// login once the entry is next checked: a login of anyone checks entries not checked for
    /// `refreshInterval` (the old password admitted offline for up to the maximum age, whoever logged in
    /// meanwhile). An entry not yet due is not asked about, and one that nothing withdrew stays.
    @Test(arguments: ["reset", "lock", "delete"])
    func aWithdrawnLoginEndsAtTheNextCheck(_ withdrawal: String) async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400), refreshInterval: .seconds(900),
            clock: clock.now)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        switch withdrawal {
        case "reset": backend.stamp.withLock { $0 = "set 2" }
        case "lock": backend.locked.withLock { $0 = true }
        default: backend.known.withLock { $0 = false }
        }
        // Another person's login before the entry is due asks nothing about alice.
        clock.advance(by: 899)
        backend.asked.withLock { $0 = [] }
        #expect(try await login(cache, as: "bob", "builder") == .notMine)
        #expect(backend.asked.withLock { $0 }.isEmpty)
        // Once due, it is asked about, and the entry goes.
        clock.advance(by: 1)
        #expect(try await login(cache, as: "bob", "builder") == .notMine)
        #expect(backend.asked.withLock { $0 } == ["alice"])
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a login withdrawn by \(withdrawal) was admitted offline after a check")
            return
        }
    }

    /// A check that confirms the account moves its check time on and keeps the entry; one made while the
    /// backend is unreachable changes nothing (the entry counted as not checked, and still due).
    @Test func aConfirmedEntryStaysAndAnUnreachableCheckChangesNothing() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400), refreshInterval: .seconds(900),
            clock: clock.now)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        clock.advance(by: 1_000)
        #expect(await cache.refresh() == .init(confirmed: 1, removed: 0, unchecked: 0))
        #expect(await cache.refresh() == .init(confirmed: 0, removed: 0, unchecked: 0), "not due again yet")
        clock.advance(by: 1_000)
        backend.reachable.withLock { $0 = false }
        #expect(await cache.refresh() == .init(confirmed: 0, removed: 0, unchecked: 1))
        try expectAuthenticated(try await login(cache, "wonderland"), "an unreachable check removed the entry")
        // Every entry, due or not, when asked to.
        backend.reachable.withLock { $0 = true }
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1, removed: 0, unchecked: 0))
    }

    /// An entry written before entries had a check time and a stamp (six fields) is read, serves offline,
    /// and adopts the backend's stamp at its first check; a stamp holding the file's separators survives.
    @Test func anEntryOfTheEarlierFormatAdoptsTheStamp() async throws {
        let backend = Switchable()
        backend.stamp.withLock { $0 = "tab\there,comma%and\nline" }
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        let file = cache.filePath
        let fields = try String(contentsOfFile: file, encoding: .utf8).dropLast().split(
            separator: "\t", omittingEmptySubsequences: false)
        try #require(fields.count == 8)
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1, removed: 0, unchecked: 0))
        try rewrite(file, fields.prefix(6).joined(separator: "\t") + "\n")
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1, removed: 0, unchecked: 0))
        backend.stamp.withLock { $0 = "another" }
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 0, removed: 1, unchecked: 0))
    }

    /// A success whose account the backend calls withdrawn a moment later is not cached.
    @Test func aLoginWithdrawnAsItIsSavedIsNotCached() async throws {
        let backend = Switchable()
        backend.locked.withLock { $0 = true }
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a login the backend withdrew was cached")
            return
        }
    }

    /// Several accounts, each with password `pw-NAME` unless changed, its own stamp, and standings the test
    /// sets: what an attack on the checks needs.
    final class Accounts: ReachabilityReporting {
        let name = "accounts"
        let offlineScope = "accounts"
        let reachable = Locked(true)
        let stamps = Locked<[String: String]>([:])
        /// Accounts whose standing cannot be told; and how many next questions answer "cannot tell".
        let untellable = Locked<Set<String>>([])
        let hiccups = Locked(0)
        let displayNames = Locked<[String: String]>([:])
        let groups = Locked<[String: Set<String>]>([:])
        let passwords = Locked<[String: String]>([:])

        func standing(of username: String) async -> AccountStanding {
            guard reachable.withLock({ $0 }), !untellable.withLock({ $0.contains(username) }) else {
                return .cannotTell
            }
            let hiccup = hiccups.withLock { count in
                defer { count = max(0, count - 1) }
                return count > 0
            }
            return hiccup ? .cannotTell : .current(stamp: stamps.withLock { $0[username] } ?? "set 1")
        }

        /// As a directory's login, which reads the account with the entry it binds to: what ``untellable`` says,
        /// never a hiccup (those are of the checks' own questions).
        func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin {
            let user = request.username
            let before: AccountStanding =
                !reachable.withLock({ $0 }) || untellable.withLock({ $0.contains(user) })
                ? .cannotTell : .current(stamp: stamps.withLock { $0[user] } ?? "set 1")
            return OnlineLogin(try await authenticateOnline(request), standingBefore: before)
        }

        func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer {
            let password = try await request.conversation.askSecret("Password: ")
            guard reachable.withLock({ $0 }) else { return .unreachable(reason: "the server is down") }
            let user = request.username
            let expected = passwords.withLock { $0[user] } ?? "pw-\(user)"
            guard password == Secret(copying: expected.utf8) else { return .answered(.rejected(.wrongCredentials)) }
            return .answered(
                .authenticated(
                    Identity(
                        username: user, displayName: displayNames.withLock { $0[user] },
                        groups: groups.withLock { $0[user] } ?? [], provider: name)))
        }
    }

    /// An account the backend cannot tell about — checked longest ago, so first in line — holds up no
    /// other check: bob's reset is found by other people's logins and by a full refresh (it stopped every
    /// check after the first "cannot tell", and the old password stayed good offline).
    @Test func anEntryTheBackendCannotTellAboutHoldsUpNoOther() async throws {
        let backend = Accounts()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400), refreshInterval: .seconds(900),
            clock: clock.now)
        #expect(try await login(cache, as: "mallory", "pw-mallory").pamResult == .success)
        clock.advance(by: 1)
        #expect(try await login(cache, as: "bob", "pw-bob").pamResult == .success)
        backend.untellable.withLock { $0 = ["mallory"] }
        backend.stamps.withLock { $0["bob"] = "set 2" }
        clock.advance(by: 3_600)
        #expect(try await login(cache, as: "carol", "pw-carol").pamResult == .success)
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, as: "bob", "pw-bob") else {
            Issue.record("bob's reset was not found by another person's login")
            return
        }
        backend.reachable.withLock { $0 = true }
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1, removed: 0, unchecked: 1))
    }

    /// An entry saved when the backend could not give a stamp is not confirmed by a later check that finds
    /// one: that stamp may be a reset's (the first check adopted it, and the old password stayed good).
    @Test func anEntrySavedWithoutAStampIsNotConfirmedByALaterOne() async throws {
        let backend = Accounts()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400))
        backend.untellable.withLock { $0 = ["bob"] }
        #expect(try await login(cache, as: "bob", "pw-bob").pamResult == .success)
        backend.untellable.withLock { $0 = [] }
        backend.stamps.withLock { $0["bob"] = "set 2" }
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 0, removed: 1, unchecked: 0))
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, as: "bob", "pw-bob") else {
            Issue.record("an old password was admitted offline after a stamp appeared")
            return
        }
    }

    /// An account whose values would make a line of megabytes is not cached, and crowds nobody out; a line
    /// cut short (the file past the read's limit, or damaged) is no entry, even where its fields would
    /// parse as the earlier format — a group name cut to a shorter one (`wheel-users` → `wheel`).
    @Test func oversizedAndCutLinesAreNoEntries() async throws {
        let backend = Accounts()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(7 * 86_400))
        #expect(try await login(cache, as: "alice", "pw-alice").pamResult == .success)
        backend.displayNames.withLock { $0["mallory"] = String(repeating: "M", count: 17 << 20) }
        #expect(try await login(cache, as: "mallory", "pw-mallory").pamResult == .success)
        backend.groups.withLock { $0["carol"] = ["staff", "wheel-users"] }
        #expect(try await login(cache, as: "carol", "pw-carol").pamResult == .success)
        let file = cache.filePath
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.utf8.count < 4_096 && !text.contains("mallory"))
        // carol's line cut inside her groups, with no line break after it.
        let carol = try #require(text.split(separator: "\n").first { $0.hasPrefix("carol\t") })
        let cut = carol.split(separator: "\t", omittingEmptySubsequences: false).prefix(6).joined(separator: "\t")
        let shortened = String(cut.dropLast("-users".count))
        try #require(shortened.hasSuffix("wheel"))
        let others = text.split(separator: "\n").filter { !$0.hasPrefix("carol\t") }.map { $0 + "\n" }.joined()
        try rewrite(file, others + shortened)
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, as: "carol", "pw-carol") else {
            Issue.record("a cut line was read as an entry")
            return
        }
        #expect(try await login(cache, as: "alice", "pw-alice").pamResult == .success)
    }

    /// Writes the cache file as the cache itself does, private to its owner: one others may read is refused whole.
    func rewrite(_ file: String, _ text: String) throws {
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        try #require(chmod(file, 0o600) == 0)
    }

    /// alice's line of the cache file, split into its fields (name, verifier, saved, failures, ...).
    func aliceFields(_ cache: OfflineCachingProvider) throws -> [String] {
        let text = try String(contentsOfFile: cache.filePath, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("alice\t") })
        return line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
    }

    /// An online login of the password this cache hashed renews its entry — saved and checked now, its
    /// offline failures cleared — with the verifier it has (no second yescrypt on the login's path); a
    /// password set online since is hashed anew, and only it serves offline.
    @Test func anUnchangedPasswordRenewsItsEntryWithoutHashingAgain() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(3_600), clock: clock.now)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        let first = try aliceFields(cache)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "wrong") == .rejected(.wrongCredentials))
        #expect(try await login(cache, "wrong") == .rejected(.wrongCredentials))
        #expect(try aliceFields(cache)[3] == "2")
        backend.reachable.withLock { $0 = true }
        backend.stamp.withLock { $0 = "set 1 again" }
        backend.groups.withLock { $0 = ["staff", "ops"] }
        clock.advance(by: 600)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        let renewed = try aliceFields(cache)
        #expect(renewed[1] == first[1], "the same password was hashed again")
        #expect(renewed[2] == String(Int64(first[2])! + 600) && renewed[6] == renewed[2])
        #expect(renewed[3] == "0" && renewed[5] == "ops,staff" && renewed[7] == "=set 1 again")
        // Its age counts from the renewal.
        backend.reachable.withLock { $0 = false }
        clock.advance(by: 3_599)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        // A password set online since: hashed anew; the old one no longer serves.
        backend.reachable.withLock { $0 = true }
        backend.password.withLock { $0 = "looking-glass" }
        #expect(try await login(cache, "looking-glass").pamResult == .success)
        #expect(try aliceFields(cache)[1] != first[1])
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "wonderland") == .rejected(.wrongCredentials))
        #expect(try await login(cache, "looking-glass").pamResult == .success)
    }

    /// An entry another process (or cache) wrote since is never renewed on this one's word: its verifier
    /// may be of another password. Here it is of an older password, which must not serve offline once this
    /// cache's login proved another.
    @Test func anEntryAnotherProcessWroteIsHashedAgain() async throws {
        let backend = Switchable()
        // Each answer a second after the one before (answers of two processes in one second are a tie).
        let clock = ManualClock()
        let mine = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(3_600), clock: clock.now)
        let other = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(3_600), clock: clock.now)
        #expect(try await login(mine, "wonderland").pamResult == .success)
        let first = try aliceFields(mine)[1]
        backend.password.withLock { $0 = "looking-glass" }
        clock.advance(by: 1)
        #expect(try await login(other, "looking-glass").pamResult == .success)
        let others = try aliceFields(mine)[1]
        #expect(others != first)
        backend.password.withLock { $0 = "wonderland" }
        clock.advance(by: 1)
        #expect(try await login(mine, "wonderland").pamResult == .success)
        #expect(try aliceFields(mine)[1] != others && aliceFields(mine)[1] != first)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(mine, "looking-glass") == .rejected(.wrongCredentials))
        #expect(try await login(mine, "wonderland").pamResult == .success)
    }

    /// Two configurations naming one directory keep a file each: a login cached through one (here a
    /// backend for everyone) is no offline login through the other (one for admins only), while another
    /// process of the same configuration shares it.
    @Test func twoScopesSharingADirectoryNeverAdmitEachOthersLogins() async throws {
        let everyone = Switchable(scope: "everyone")
        let admins = Switchable(scope: "admins only")
        let broad = try OfflineCachingProvider(wrapping: everyone, directory: directory, maxAge: .seconds(3_600))
        let narrow = try OfflineCachingProvider(wrapping: admins, directory: directory, maxAge: .seconds(3_600))
        #expect(broad.filePath != narrow.filePath)
        #expect(try await login(broad, "wonderland").pamResult == .success)
        everyone.reachable.withLock { $0 = false }
        admins.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(narrow, "wonderland") else {
            Issue.record("a login cached by another configuration was admitted offline")
            return
        }
        let sameScope = try OfflineCachingProvider(
            wrapping: Switchable(scope: "everyone"), directory: directory, maxAge: .seconds(3_600))
        #expect(sameScope.filePath == broad.filePath)
    }

    /// Two online answers for one account, the older one's saving slower: a login with the password of
    /// before a change, still saving when the new password's login (or the old password's refusal) has
    /// answered, never puts the old password back — offline, only the newest answer holds.
    @Test(arguments: [false, true])
    func anOlderLoginNeverOverwritesANewerAnswer(_ refusedSince: Bool) async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        backend.slowOnce.withLock { $0 = .seconds(2) }
        let older = Task { try await login(cache, "wonderland") }
        #expect(await eventually { backend.asked.withLock { $0.count } == 1 })
        backend.password.withLock { $0 = "looking-glass" }
        if refusedSince {
            #expect(try await login(cache, "wonderland") == .rejected(.wrongCredentials))
        } else {
            #expect(try await login(cache, "looking-glass").pamResult == .success)
        }
        #expect(try await older.value.pamResult == .success)
        backend.reachable.withLock { $0 = false }
        let old = try await login(cache, "wonderland")
        #expect(old.pamResult != .success, "the older login's password was put back: \(old)")
        if !refusedSince { #expect(try await login(cache, "looking-glass").pamResult == .success) }
    }

    /// Two caches on one file (as two processes), one clock, and a login through the first with "wonderland"
    /// whose saving waits 2 s: it has answered and is saving when this returns.
    func twoProcessesTheFirstSlow() async throws -> (
        Switchable, ManualClock, OfflineCachingProvider, OfflineCachingProvider, Task<AuthOutcome, any Error>
    ) {
        let backend = Switchable()
        let clock = ManualClock()
        let mine = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), clock: clock.now)
        let other = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), clock: clock.now)
        backend.slowOnce.withLock { $0 = .seconds(2) }
        let older = Task { try await login(mine, "wonderland") }
        #expect(await eventually { backend.asked.withLock { $0.count } == 1 })
        return (backend, clock, mine, other, older)
    }

    /// The same across processes: an entry another process saved from a later answer is not overwritten by an
    /// older answer saved after it; one saved "in the future" (a clock set back since) does not hold it up.
    @Test func anOlderLoginOfAnotherProcessNeverOverwritesANewerAnswer() async throws {
        let (backend, clock, mine, other, older) = try await twoProcessesTheFirstSlow()
        clock.advance(by: 10)
        backend.password.withLock { $0 = "looking-glass" }
        #expect(try await login(other, "looking-glass").pamResult == .success)
        #expect(try await older.value.pamResult == .success)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(mine, "wonderland").pamResult != .success, "an older answer overwrote a newer one")
        #expect(try await login(mine, "looking-glass").pamResult == .success)
        // An entry from the future does not stop a login now from saving its own.
        backend.reachable.withLock { $0 = true }
        let ahead = ManualClock()
        ahead.advance(by: 1_000)
        let fast = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), clock: ahead.now)
        backend.password.withLock { $0 = "jabberwocky" }
        #expect(try await login(fast, "jabberwocky").pamResult == .success)
        backend.password.withLock { $0 = "wonderland" }
        #expect(try await login(mine, "wonderland").pamResult == .success)
        backend.reachable.withLock { $0 = false }
        #expect(try await login(mine, "wonderland").pamResult == .success)
    }

    /// A login of the old password whose answer comes late, the password reset while it is in flight (the
    /// directory checked it before the reset): the success is not saved under the new password's stamp, so
    /// the next check does not confirm the old password (it did: the stamp was read after the answer).
    @Test func aResetWhileALoginIsInFlightIsNotLentToTheOldPassword() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        backend.slowAnswerOnce.withLock { $0 = .seconds(1) }
        let inFlight = Task { try await login(cache, "wonderland") }
        #expect(await eventually { backend.checked.withLock { $0 } == 1 })
        backend.password.withLock { $0 = "looking-glass" }
        backend.stamp.withLock { $0 = "set 2" }
        #expect(try await inFlight.value.pamResult == .success)
        _ = await cache.refresh(dueOnly: false)
        backend.reachable.withLock { $0 = false }
        let old = try await login(cache, "wonderland")
        #expect(old.pamResult != .success, "the reset password was admitted offline: \(old)")
    }

    /// A login of the old password begun before a reset, its answer late, and the new password's login after
    /// the reset, answered first: the late answer does not overwrite the new password's entry — saves are
    /// ordered by when the password went to the backend, not by when the answer came. In one process, and
    /// across two (their clock moving on between). The directory keeps no password stamp here, so that only
    /// the order can tell (with one, the late answer's stamps, before and after, differ as well).
    @Test(arguments: [false, true])
    func aLateAnswerBegunBeforeAResetNeverOverwritesTheNewPassword(_ twoProcesses: Bool) async throws {
        let backend = Switchable()
        backend.stamp.withLock { $0 = nil }
        let clock = ManualClock()
        let mine = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), clock: clock.now)
        let other =
            twoProcesses
            ? try OfflineCachingProvider(
                wrapping: backend, directory: directory, maxAge: .seconds(86_400), clock: clock.now) : mine
        backend.slowAnswerOnce.withLock { $0 = .seconds(1) }
        let old = Task { try await login(mine, "wonderland") }
        #expect(await eventually { backend.checked.withLock { $0 } == 1 })
        clock.advance(by: 10)
        backend.password.withLock { $0 = "looking-glass" }
        #expect(try await login(other, "looking-glass").pamResult == .success)
        clock.advance(by: 10)
        #expect(try await old.value.pamResult == .success)
        backend.reachable.withLock { $0 = false }
        let stale = try await login(mine, "wonderland")
        #expect(stale.pamResult != .success, "the old password's late answer was saved over the new one: \(stale)")
        #expect(try await login(mine, "looking-glass").pamResult == .success)
    }

    /// A group the directory took the account out of admits it no more offline once the entry is checked (it
    /// survived every check: `--group admin` kept admitting offline someone no longer in admin).
    @Test func aGroupTakenAwayInTheDirectoryIsGoneOfflineAfterTheCheck() async throws {
        let backend = Switchable()
        backend.groups.withLock { $0 = ["staff", "admin"] }
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        backend.groups.withLock { $0 = ["staff"] }
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1))
        backend.reachable.withLock { $0 = false }
        guard case .authenticated(let identity) = try await login(cache, "wonderland") else {
            Issue.record("the offline login failed")
            return
        }
        #expect(identity.groups == ["staff"], "the groups offline: \(identity.groups)")
    }

    /// A wrong guess whose caller goes away as soon as the directory refused it (a closed connection, ^C) leaves
    /// the entry another process wrote, as any wrong guess does: the check of whether the refused password is
    /// the cached one runs to its end (cancelled, it read as "cannot be checked", which forgets: anyone could
    /// wipe anyone's offline login so).
    @Test func aWrongGuessWhoseCallerLeavesWipesNothing() async throws {
        let backend = Switchable()
        let writer = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        #expect(try await login(writer, "wonderland").pamResult == .success)
        let other = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        backend.callerLeavesAfterAnswer.withLock { $0 = true }
        _ = try? await Task { try await login(other, "a-guess") }.value
        backend.callerLeavesAfterAnswer.withLock { $0 = false }
        backend.reachable.withLock { $0 = false }
        #expect(try await login(other, "wonderland").pamResult == .success, "the entry was wiped by a guess")
    }

    /// While the backend answers, the checks run whether or not anyone logs in (gatekeeperd runs them): an
    /// entry is asked about once it is three quarters of `refreshInterval` old, not before, and a lock made in
    /// the directory meanwhile ends it — within the interval of its last check, with no login at all.
    @Test func theBackgroundChecksFindAWithdrawalWithoutALogin() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(86_400), refreshInterval: .seconds(4),
            clock: clock.now)
        #expect(try await login(cache, "wonderland").pamResult == .success)
        let asked = backend.asked.withLock { $0.count }
        let checks = Task { await cache.checkInBackground() }
        defer { checks.cancel() }
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(backend.asked.withLock { $0.count } == asked, "an entry was checked before it was due")
        backend.locked.withLock { $0 = true }
        clock.advance(by: 3)
        let file = cache.filePath
        #expect(
            await eventually(within: 5) {
                !((try? String(contentsOfFile: file, encoding: .utf8)) ?? "alice").contains("alice\t")
            }, "the locked account's entry was kept")
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a locked account was admitted offline after the background check")
            return
        }
    }

    /// A cache file others may read (0644 in a 0755 directory: a copy, a restore) is refused as a bind
    /// password's file is: a cache made on it says why at once, and one already running admits nothing
    /// offline from it. The next online success replaces it with a private file holding only that entry.
    @Test func aCacheFileOthersMayReadIsRefused() async throws {
        let backend = Switchable()
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        #expect(try await login(cache, "wonderland").pamResult == .success)
        let file = cache.filePath
        try #require(chmod(directory, 0o755) == 0 && chmod(file, 0o644) == 0)
        do {
            _ = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
            Issue.record("a cache file others may read was accepted")
        } catch {
            #expect(error.code == .providerUnavailable && "\(error)".contains("chmod go-r"), "\(error)")
        }
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a login was admitted offline from a file others may read")
            return
        }
        // Read by a group other than root's: refused too; by root's group only: the file is private enough.
        try #require(chmod(file, 0o640) == 0 && chown(file, 0, 4) == 0 || getuid() != 0)
        if getuid() == 0 {
            guard case .unavailable = try await login(cache, "wonderland") else {
                Issue.record("a login was admitted offline from a file a group may read")
                return
            }
            try #require(chown(file, 0, 0) == 0)
            #expect(try await login(cache, "wonderland").pamResult == .success)
        }
        // Private by its mode, but readable by another user through an access ACL: refused too.
        try #require(chmod(file, 0o600) == 0)
        try #require(try grantReadThroughACL(file, toUID: 65534), "the file system took no ACL")
        do {
            _ = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
            Issue.record("a cache file others may read through an ACL was accepted")
        } catch {
            #expect(error.code == .providerUnavailable && "\(error)".contains("access ACL"), "\(error)")
        }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("a login was admitted offline from a file another user may read through an ACL")
            return
        }
        try #require(chmod(file, 0o644) == 0)
        backend.reachable.withLock { $0 = true }
        #expect(try await login(cache, "wonderland").pamResult == .success)
        var info = stat()
        try #require(stat(file, &info) == 0)
        #expect(info.st_mode & 0o077 == 0, "the file was left readable: \(String(info.st_mode, radix: 8))")
        backend.reachable.withLock { $0 = false }
        #expect(try await login(cache, "wonderland").pamResult == .success)
    }

    /// Two processes' answers in the same second: which is the newer cannot be told. Of the same password, the
    /// entry stands; of two passwords (changed in that second), neither is trusted offline.
    @Test(arguments: [false, true])
    func twoProcessesAnsweringInTheSameSecond(_ changedBetween: Bool) async throws {
        let (backend, _, mine, other, older) = try await twoProcessesTheFirstSlow()
        let newer = changedBetween ? "looking-glass" : "wonderland"
        backend.password.withLock { $0 = newer }
        #expect(try await login(other, newer).pamResult == .success)
        #expect(try await older.value.pamResult == .success)
        backend.reachable.withLock { $0 = false }
        if changedBetween {
            for password in ["wonderland", "looking-glass"] {
                guard case .unavailable = try await login(mine, password) else {
                    Issue.record("\(password) was admitted offline though which answer was newer could not be told")
                    return
                }
            }
        } else {
            #expect(try await login(mine, "wonderland").pamResult == .success)
        }
    }

    /// The account check without a password: the backend's answer while it can be reached (a lock refused, a
    /// refused service account `unavailable`, never the cache's); while it cannot, the cache's — valid, offline,
    /// for an account it holds and not too old, even after offline guesses; `unavailable` for any other.
    @Test func theAccountCheckOfflineIsTheCaches() async throws {
        let backend = Switchable()
        let clock = ManualClock()
        let cache = try OfflineCachingProvider(
            wrapping: backend, directory: directory, maxAge: .seconds(3_600), clock: clock.now)
        let alice = Identity(username: "alice", provider: "switchable")
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = await cache.recheck(alice) else {
            Issue.record("an account never cached was vouched for offline")
            return
        }
        backend.reachable.withLock { $0 = true }
        #expect(try await login(cache, "wonderland").pamResult == .success)
        backend.locked.withLock { $0 = true }
        #expect(await cache.recheck(alice) == .refused(.accountLocked(until: nil)))
        backend.locked.withLock { $0 = false }
        backend.refusing.withLock { $0 = true }
        guard case .unavailable = await cache.recheck(alice) else {
            Issue.record("the cache answered for a directory that refused its service account")
            return
        }
        backend.refusing.withLock { $0 = false }
        backend.reachable.withLock { $0 = false }
        for _ in 0..<6 { _ = try await login(cache, "a-guess") }
        guard case .valid(let offline) = await cache.recheck(alice) else {
            Issue.record("a cached account was not vouched for offline")
            return
        }
        #expect(offline.attributes["offline"] == "yes" && offline.groups == ["staff"])
        clock.advance(by: 3_600)
        guard case .unavailable = await cache.recheck(alice) else {
            Issue.record("an entry past its age vouched for the account")
            return
        }
    }
}
