import Authentication
import AuthenticationTesting
import TestSupport
import Testing

/// pam_faillock's rules (`check_tally` and `write_tally` in Linux-PAM's modules/pam_faillock), on times in
/// seconds.
@Suite(.timeLimit(.minutes(1)))
struct LockoutPolicyTests {
    let policy = LockoutPolicy(deny: 3, interval: .seconds(900), unlockAfter: .seconds(600))
    let second = Duration.seconds(1)

    @Test func failuresWithinTheIntervalOfTheLatestCount() {
        #expect(policy.status(failures: [], now: 10_000, unit: second) == .open(failures: 0))
        #expect(policy.status(failures: [9_000, 9_500], now: 10_000, unit: second) == .open(failures: 2))
        // 900 s before the latest is outside the interval (pam_faillock: latest - time < fail_interval).
        #expect(policy.status(failures: [8_600, 9_000, 9_500], now: 10_000, unit: second) == .open(failures: 2))
        #expect(
            policy.status(failures: [8_601, 9_000, 9_500], now: 10_000, unit: second)
                == .locked(failures: 3, remaining: .seconds(100)))
    }

    @Test func unlocksOnlyOnceTheUnlockTimeHasPassed() {
        let failures: [Int64] = [1_000, 1_001, 1_002]
        #expect(policy.status(failures: failures, now: 1_602, unit: second).isLocked)
        #expect(policy.status(failures: failures, now: 1_603, unit: second) == .unlockedByTime)
        let untilAdmin = LockoutPolicy(deny: 3, unlockAfter: nil)
        #expect(
            untilAdmin.status(failures: failures, now: 1_000_000, unit: second)
                == .locked(failures: 3, remaining: nil))
    }

    @Test func rootIsExemptUnlessEvenDenyRoot() {
        let failures: [Int64] = [1_000, 1_001, 1_002]
        #expect(
            policy.status(failures: failures, now: 1_003, unit: second, isAdministrator: true) == .open(failures: 0))
        let strict = LockoutPolicy(
            deny: 3, unlockAfter: .seconds(600), evenDenyRoot: true, rootUnlock: .after(.seconds(60)))
        #expect(
            strict.status(failures: failures, now: 1_003, unit: second, isAdministrator: true)
                == .locked(failures: 3, remaining: .seconds(59)))
        #expect(strict.status(failures: failures, now: 1_003, unit: second).isLocked)
    }

    @Test func denyZeroNeverLocksAndFarFutureTimesNeverWrap() {
        #expect(LockoutPolicy(deny: 0).status(failures: [1, 2, 3, 4], now: 5, unit: second) == .open(failures: 4))
        let status = policy.status(failures: [.max, .max, .max], now: 1_000, unit: second)
        #expect(status.isLocked)
    }

    @Test func theMemoryStoreFollowsTheSameRules() throws {
        let clock = ManualClock()
        let store = MemoryLockoutStore(now: clock.now)
        for _ in 0..<2 {
            _ = store.recordFailure(of: LockoutAccount("bob", known: true), source: .service("t"), policy: policy)
        }
        clock.advance(by: .seconds(901))
        // The first two are outside the interval of the third: not locked.
        #expect(
            store.recordFailure(of: LockoutAccount("bob", known: true), source: .service("t"), policy: policy)
                == .open(failures: 1))
        _ = store.recordFailure(of: LockoutAccount("bob", known: true), source: .service("t"), policy: policy)
        #expect(
            store.recordFailure(of: LockoutAccount("bob", known: true), source: .service("t"), policy: policy).isLocked)
        clock.advance(by: .seconds(601))
        #expect(store.status(of: "bob", policy: policy) == .unlockedByTime)
        // After an unlock by time, old failures no longer count.
        #expect(
            store.recordFailure(of: LockoutAccount("bob", known: true), source: .service("t"), policy: policy)
                == .open(failures: 1))
        store.unlock("bob")
        #expect(store.status(of: "bob", policy: policy) == .open(failures: 0))
    }

    /// Names no look-up recognised are counted by their folded form, apart from the accounts: `BOB`
    /// typed where nothing could tell shares a count with `Bob`, never with the account bob.
    @Test func theMemoryStoreKeepsUnrecognisedNamesApart() {
        let store = MemoryLockoutStore()
        for spelling in ["BOB", "Bob", "ｂｏｂ"] {
            // Each checked and found wrong: settled, its count a failure.
            if case .counted(let ticket, _) = store.beginAttempt(
                LockoutAccount(spelling, known: false), source: .service("t"), policy: policy)
            {
                store.settled(ticket)
            }
        }
        #expect(store.status(of: LockoutAccount("bOb", known: false), policy: policy).isLocked)
        #expect(store.status(of: "bob", policy: policy) == .open(failures: 0))
        // A withdrawn attempt leaves nothing of its own behind.
        guard
            case .counted(let ticket, _) = store.beginAttempt(
                LockoutAccount("carol"), source: .service("t"), policy: policy)
        else {
            Issue.record("carol's attempt was not counted")
            return
        }
        store.withdraw(ticket)
        #expect(store.status(of: "carol", policy: policy) == .open(failures: 0))
    }
}

/// The wait after a failed login, as pam_faildelay's.
@Suite(.timeLimit(.minutes(1)))
struct FailDelayTests {
    @Test func aFailedLoginWaitsBeforeItAnswers() async throws {
        let gatekeeper = Gatekeeper(
            provider: accountsProvider(), configuration: .init(lockout: nil, failDelay: .milliseconds(400)))
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("alice", "no")) }
        // At least the delay less its 25 % spread: a lower bound, which load can only lengthen.
        #expect(clock.now - start >= .milliseconds(300))
    }

    /// A backend that takes 1.5 s to refuse `alice`'s password (a slow hash) and refuses any other name at
    /// once, noting when the password reached it.
    static func slowForKnownNames(answered: Locked<ContinuousClock.Instant?>) -> StubAuthProvider {
        StubAuthProvider(lookup: { $0 == "alice" ? .known(canonicalName: "alice") : .unknown }) {
            request throws(AuthError) in
            _ = try await request.conversation.askSecret("Password: ")
            answered.withLock { $0 = .now }
            guard request.username == "alice" else { return .notMine }
            try? await Task.sleep(for: .milliseconds(1_500))
            return .rejected(.wrongCredentials)
        }
    }

    /// The delay runs from the moment the password was handed over, not from the refusal: a known name
    /// whose refusal took the backend 1.5 s answers no later than an unknown one refused at once (2 s ±25 %
    /// from the answer: a refusal counted from the backend's answer could not come before 3 s).
    @Test(arguments: ["alice", "nobody"])
    func aRefusalTakesTheDelayFromTheAnswerWhateverTheBackendTook(_ name: String) async throws {
        let answered = Locked<ContinuousClock.Instant?>(nil)
        let gatekeeper = Gatekeeper(
            provider: Self.slowForKnownNames(answered: answered),
            configuration: .init(lockout: nil, failDelay: .seconds(2)))
        await #expect(throws: AuthError.self) { try await gatekeeper.signIn(credentials(name, "no")) }
        let elapsed = try #require(answered.withLock { $0 }).duration(to: .now)
        #expect(elapsed >= .milliseconds(1_500), "less than the delay's lower end: \(elapsed)")
        // 2.5 s is the delay's upper end; what is left to 3 s is room for a loaded machine.
        #expect(elapsed < .milliseconds(2_900), "the delay ran from the refusal: \(elapsed)")
    }

    /// A backend slower than the delay: its refusal waits the whole delay again, so the clock tells only
    /// "slower than the delay" (a lower bound, which load can only lengthen).
    @Test func aBackendSlowerThanTheDelayIsDelayedAgain() async throws {
        let answered = Locked<ContinuousClock.Instant?>(nil)
        let gatekeeper = Gatekeeper(
            provider: Self.slowForKnownNames(answered: answered),
            configuration: .init(lockout: nil, failDelay: .milliseconds(400)))
        await #expect(throws: AuthError.invalidCredentials) { try await gatekeeper.signIn(credentials("alice", "no")) }
        let elapsed = try #require(answered.withLock { $0 }).duration(to: .now)
        #expect(elapsed >= .milliseconds(1_500 + 300))
    }

    @Test func cancellingTheLoginEndsTheWait() async throws {
        let audit = RecordingAuditSink()
        let gatekeeper = Gatekeeper(
            provider: accountsProvider(), configuration: .init(lockout: nil, failDelay: .seconds(3600)), audit: audit)
        let login = Task { try await gatekeeper.signIn(credentials("alice", "no")) }
        // Cancelled only once the failure is recorded, that is, in its delay: a cancellation that came
        // earlier would end the login before the wait and prove nothing of it.
        #expect(await eventually { audit.events.contains { $0.kind == .signInFailed } })
        let cancelled = ContinuousClock.now
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(cancelled.duration(to: .now) < .seconds(30), "the wait went on after the cancellation")
    }

    /// The wait is an async sleep: a hundred logins in their delay hold no thread, and another login
    /// still runs on the two-thread pool.
    @Test func theWaitHoldsNoThread() async throws {
        let audit = RecordingAuditSink()
        // A gatekeeper each: one gatekeeper runs one login at a time.
        let logins = (0..<100).map { _ in
            let waiting = Gatekeeper(
                provider: accountsProvider(), configuration: .init(lockout: nil, failDelay: .seconds(3600)),
                audit: audit)
            return Task { try await waiting.signIn(credentials("bob", "no")) }
        }
        #expect(await eventually { audit.events.filter { $0.kind == .signInFailed }.count == 100 })
        let other = Gatekeeper(provider: accountsProvider(), configuration: .init(failDelay: .zero))
        #expect(try await other.signIn(credentials("alice", "wonderland")).username == "alice")
        for login in logins { login.cancel() }
        for login in logins { await #expect(throws: AuthError.cancelled) { try await login.value } }
    }
}
