import Authentication
import AuthenticationTesting
import Foundation
import GatekeeperSupport
import HostProtection
import TestSupport
import Testing

/// Attempts still being checked hold their account's slots, and only as long as they are checked: many right
/// passwords at once are each admitted, never refused as "locked" for answers nobody has yet, and the tally is
/// what it would be one login after another — in pam_faillock's files and in memory alike.
@Suite(.timeLimit(.minutes(2)))
struct AttemptsInFlightTests {
    let scratch = ScratchDirectory("gatekeeper-in-flight")
    var directory: String { scratch.path + "/tally" }

    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case files, memory
        var testDescription: String { rawValue }
    }

    func store(_ kind: Kind) throws -> any LockoutStore {
        switch kind {
        case .files: try FaillockStore(directory: directory)
        case .memory: MemoryLockoutStore()
        }
    }

    /// alice's password is "right"; each check takes `delay`, or until `gate` opens; `checks` counts them.
    static func slowEntry(
        delay: Duration = .milliseconds(40), gate: Locked<Bool>? = nil, checks: Locked<Int>
    ) -> StubAuthProvider {
        StubAuthProvider(lookup: { $0 == "alice" ? .known(canonicalName: "alice") : .unknown }) {
            request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            checks.withLock { $0 += 1 }
            do {
                try await Task.sleep(for: delay)
                while let gate, !gate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            } catch {
                throw .cancelled
            }
            guard request.username == "alice" else { return .notMine }
            guard password == Secret(copying: "right".utf8) else {
                return .rejected(.wrongCredentials, canonicalUsername: "alice")
            }
            return .authenticated(Identity(username: "alice", provider: "stub"))
        }
    }

    func gatekeeper(_ provider: any AuthProvider, _ store: any LockoutStore, wait: Duration = .seconds(10))
        -> Gatekeeper
    {
        var configuration = Gatekeeper.Configuration(
            maxAttempts: 1, lockout: LockoutPolicy(deny: 5), failDelay: .zero)
        configuration.attempts.lockoutWait = wait
        return Gatekeeper(provider: provider, configuration: configuration, lockout: store)
    }

    /// `count` sign-ins at once, each by a gatekeeper of its own on `store`; their answers.
    func burst(_ count: Int, _ password: String, _ provider: any AuthProvider, _ store: any LockoutStore) async
        -> [Result<Void, AuthError>]
    {
        await burst(Array(repeating: password, count: count), provider, store)
    }

    /// A sign-in with each of `passwords` at once.
    func burst(_ passwords: [String], _ provider: any AuthProvider, _ store: any LockoutStore) async
        -> [Result<Void, AuthError>]
    {
        let gatekeepers = passwords.map { (gatekeeper(provider, store), $0) }
        return await withTaskGroup(of: Result<Void, AuthError>.self) { group in
            for (gatekeeper, password) in gatekeepers {
                group.addTask {
                    do {
                        _ = try await gatekeeper.signIn(credentials("alice", password))
                        return .success(())
                    } catch {
                        return .failure(error as? AuthError ?? .cancelled)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// The case: 16 right passwords of one account at once, `deny=5` — every one admitted, the
    /// account not locked, nothing left counted. Also with 3 failures already counted (2 free slots).
    @Test(arguments: Kind.allCases)
    func rightPasswordsAtOnceAreEachAdmitted(_ kind: Kind) async throws {
        let store = try store(kind)
        let checks = Locked(0)
        let provider = Self.slowEntry(checks: checks)
        var answers = await burst(16, "right", provider, store)
        #expect(answers.count { if case .success = $0 { true } else { false } } == 16, "\(answers)")
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)) == .open(failures: 0))
        for _ in 0..<3 { _ = await burst(1, "wrong", provider, store) }
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)) == .open(failures: 3))
        answers = await burst(16, "right", provider, store)
        #expect(answers.count { if case .success = $0 { true } else { false } } == 16, "\(answers)")
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)) == .open(failures: 0))
        #expect(checks.withLock { $0 } == 35)
    }

    /// Wrong passwords at once: exactly `deny` reach the backend, however long each check takes; the rest
    /// wait for them, then are refused as locked, and the tally holds exactly `deny`.
    @Test(arguments: Kind.allCases)
    func wrongPasswordsAtOnceStillCheckOnlyDeny(_ kind: Kind) async throws {
        let store = try store(kind)
        let checks = Locked(0)
        let answers = await burst(16, "wrong", Self.slowEntry(checks: checks), store)
        #expect(checks.withLock { $0 } == 5)
        #expect(answers.count { if case .failure(.invalidCredentials) = $0 { true } else { false } } == 5)
        #expect(
            answers.count { if case .failure(let error) = $0 { error.code == .tooManyAttempts } else { false } } == 11,
            "\(answers)")
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)).isLocked)
        if kind == .files {
            #expect(try FaillockStore(directory: directory).failures(of: "alice").count { $0.valid } == 5)
        }
    }

    /// One right password among wrong ones in flight frees them all: the waiting attempts go on, and the
    /// right ones among them are admitted.
    @Test(arguments: Kind.allCases)
    func aRightPasswordFreesTheSlotsOfAttemptsStillInFlight(_ kind: Kind) async throws {
        let store = try store(kind)
        let gate = Locked(false)
        let checks = Locked(0)
        let provider = Self.slowEntry(gate: gate, checks: checks)
        // Four wrong guesses and one right password hold all five slots.
        let holding = Task { await burst(["wrong", "wrong", "wrong", "wrong", "right"], provider, store) }
        let held = Task {
            #expect(await eventually { checks.withLock { $0 } == 5 })
            return await burst(3, "right", provider, store)
        }
        #expect(await eventually { checks.withLock { $0 } == 5 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(checks.withLock { $0 } == 5, "an attempt beyond the slots reached the backend")
        gate.withLock { $0 = true }
        let first = await holding.value
        let waited = await held.value
        #expect(first.count { if case .success = $0 { true } else { false } } == 1)
        #expect(waited.count { if case .success = $0 { true } else { false } } == 3, "\(waited)")
    }

    /// A check that never ends holds its slot only as long as the gatekeeper's `lockoutWait`: the attempt
    /// waiting for it is then refused (``AuthError/loginsInFlight``) and counts nothing; one cancelled while it waits counts
    /// nothing either; and no waiting attempt reaches the backend.
    @Test(arguments: Kind.allCases)
    func waitingIsBoundedAndCountsNothing(_ kind: Kind) async throws {
        let store = try store(kind)
        let gate = Locked(false)
        let checks = Locked(0)
        let provider = Self.slowEntry(gate: gate, checks: checks)
        let holding = Task { await burst(5, "wrong", provider, store) }
        #expect(await eventually { checks.withLock { $0 } == 5 })
        let waiting = gatekeeper(provider, store, wait: .milliseconds(300))
        await #expect {
            try await waiting.signIn(credentials("alice", "right"))
        } throws: { ($0 as? AuthError)?.code == .loginsInFlight }
        let cancelled = Task { try await gatekeeper(provider, store).signIn(credentials("alice", "right")) }
        try await Task.sleep(for: .milliseconds(100))
        cancelled.cancel()
        await #expect(throws: AuthError.cancelled) { try await cancelled.value }
        #expect(checks.withLock { $0 } == 5)
        gate.withLock { $0 = true }
        _ = await holding.value
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)).failures == 5)
    }

    /// Another process's attempts in flight are what pam_faillock takes them for: failures. With its slots
    /// all held by another store on the same files, the account is refused as locked, and once they prove
    /// right it is free again.
    @Test func anotherProcesssAttemptsInFlightCountAsFailures() async throws {
        let gate = Locked(false)
        let checks = Locked(0)
        let provider = Self.slowEntry(gate: gate, checks: checks)
        let other = try FaillockStore(directory: directory, inFlight: AttemptsInFlight())
        let holding = Task { await burst(5, "right", provider, other) }
        #expect(await eventually { checks.withLock { $0 } == 5 })
        let mine = try FaillockStore(directory: directory, inFlight: AttemptsInFlight())
        await #expect {
            try await gatekeeper(provider, mine).signIn(credentials("alice", "right"))
        } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        gate.withLock { $0 = true }
        let answers = await holding.value
        #expect(answers.count { if case .success = $0 { true } else { false } } == 5)
        _ = try await gatekeeper(provider, mine).signIn(credentials("alice", "right"))
    }

    /// Two stores of one process on one directory (a reload opens it anew; a second path to it, a bind mount,
    /// is the same directory by device and inode) know each other's attempts in flight: right passwords
    /// through the second wait for the first's, and are admitted.
    @Test func storesOfOneProcessShareTheirAttemptsInFlight() async throws {
        let gate = Locked(false)
        let checks = Locked(0)
        let provider = Self.slowEntry(gate: gate, checks: checks)
        let first = try FaillockStore(directory: directory)
        let holding = Task { await burst(5, "right", provider, first) }
        #expect(await eventually { checks.withLock { $0 } == 5 })
        let reopened = try FaillockStore(directory: directory)
        let waiting = Task { await burst(3, "right", provider, reopened) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(checks.withLock { $0 } == 5)
        gate.withLock { $0 = true }
        #expect((await holding.value).count { if case .success = $0 { true } else { false } } == 5)
        #expect((await waiting.value).count { if case .success = $0 { true } else { false } } == 3)
    }

    /// A success leaves the counts of this process's attempts still being checked: those that then prove wrong
    /// stay counted (as pam_faillock, which counts a failure once checked, would have them), and never more than
    /// `deny` wrong passwords reach the backend, whatever successes come between.
    @Test(arguments: Kind.allCases)
    func aSuccessKeepsTheCountsOfAttemptsStillInFlight(_ kind: Kind) async throws {
        let store = try store(kind)
        let gate = Locked(false)
        let checks = Locked(0)
        let slow = Self.slowEntry(gate: gate, checks: checks)
        let wrong = Task { await burst(4, "wrong", slow, store) }
        #expect(await eventually { checks.withLock { $0 } == 4 })
        // A right password, checked at once, succeeds while the four are checked.
        let fastChecks = Locked(0)
        let fast = Self.slowEntry(delay: .zero, checks: fastChecks)
        #expect((await burst(1, "right", fast, store)).allSatisfy { if case .success = $0 { true } else { false } })
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)).failures == 0)
        // More wrong ones: one slot is free, the rest wait for the four, which then prove wrong.
        let more = Task { await burst(6, "wrong", fast, store) }
        #expect(await eventually { fastChecks.withLock { $0 } == 2 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(fastChecks.withLock { $0 } == 2, "more than deny wrong passwords reached the backend")
        gate.withLock { $0 = true }
        _ = await wrong.value
        _ = await more.value
        #expect(checks.withLock { $0 } + fastChecks.withLock { $0 } == 6)
        #expect(try store.status(of: "alice", policy: LockoutPolicy(deny: 5)).isLocked)
        if kind == .files {
            #expect(try FaillockStore(directory: directory).failures(of: "alice").count { $0.valid } == 5)
        }
    }
}
