import Authentication
import AuthenticationTesting
import Foundation
import OfflineCache
import PasswordHashing
import TestSupport
import Testing

/// The offline cache against a model of what it may never do: random sequences of logins (the current, an
/// earlier or a wrong password, through either of two processes sharing one file, their answers late by a
/// random few milliseconds, many in flight at once) interleaved with password changes, locks, deletions,
/// accounts made again under the same name, group changes, checks and clock moves. Once every login has
/// answered and one check has run, the directory goes down, and every password ever used is tried offline:
/// none may be admitted but an account's current password, of an account that exists and is not locked,
/// with no group the directory does not give it now.
@Suite(.timeLimit(.minutes(5)))
struct OfflineCacheModelTests {
    /// A directory as the LDAP provider sees one: accounts with an identity (entryUUID), a password and its
    /// version (the stamp), a lock and groups; a login reads the account and checks the password at once, and
    /// answers after its delay.
    final class Directory: ReachabilityReporting {
        struct Account {
            var identity: Int
            var password: String
            var version: Int
            var locked = false
            var groups: Set<String>
        }

        let name = "model"
        let offlineScope = "model"
        let accounts = Locked<[String: Account]>([:])
        let reachable = Locked(true)
        /// The next login's delays, in milliseconds, taken in turn.
        let delays = Locked<[Int]>([])

        func standingNow(_ username: String, groups: Bool) -> AccountStanding {
            guard reachable.withLock({ $0 }) else { return .cannotTell }
            guard let account = accounts.withLock({ $0[username] }) else { return .withdrawn(reason: "gone") }
            if account.locked { return .withdrawn(reason: "locked") }
            return .current(
                stamp: "entryUUID=\(account.identity)\nversion=\(account.version)",
                groups: groups ? account.groups : nil)
        }

        func standing(of username: String) async -> AccountStanding { standingNow(username, groups: false) }

        func standingWithGroups(of username: String) async -> AccountStanding { standingNow(username, groups: true) }

        func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin {
            let password = try await request.conversation.askSecret("Password: ")
            let user = request.username
            let before = standingNow(user, groups: false)
            let answer: OnlineAnswer
            if !reachable.withLock({ $0 }) {
                answer = .unreachable(reason: "down")
            } else if let account = accounts.withLock({ $0[user] }) {
                if password != Secret(copying: account.password.utf8) {
                    answer = .answered(.rejected(.wrongCredentials))
                } else if account.locked {
                    answer = .answered(.rejected(.locked(until: nil)))
                } else {
                    answer = .answered(.authenticated(Identity(username: user, groups: account.groups, provider: name)))
                }
            } else {
                answer = .answered(.notMine)
            }
            let delay = delays.withLock { $0.isEmpty ? 0 : $0.removeFirst() }
            if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            return OnlineLogin(answer, standingBefore: before)
        }

        func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer {
            try await loginOnline(request).answer
        }
    }

    final class Clock: Sendable {
        let seconds = Locked<Int64>(1_800_000_000)
        var now: @Sendable () -> Int64 { { [seconds] in seconds.withLock { $0 } } }
    }

    static let users = ["ann", "ben"]

    /// One sequence: what was admitted that must not have been, if anything, and how many offline logins were
    /// admitted (a model that admits none tests nothing).
    func run(steps: Int, _ random: inout SeededGenerator) async throws -> (failure: String?, admitted: Int) {
        let directory = Directory()
        let clock = Clock()
        let path = temporaryDirectory("gatekeeper-offline-model") + "/cache"
        let processes = try (0..<2).map { _ in
            try OfflineCachingProvider(
                wrapping: directory, directory: path, maxAge: .seconds(86_400), maxOfflineFailures: 1_000,
                clock: clock.now, verifierScheme: .sha512)
        }
        var used: [String: Set<String>] = [:]
        var identities = 0
        var passwords = 0
        func newPassword(_ user: String) -> String {
            passwords += 1
            let password = "\(user)-\(passwords)"
            used[user, default: []].insert(password)
            return password
        }
        for user in Self.users {
            identities += 1
            let password = newPassword(user)
            directory.accounts.withLock {
                $0[user] = .init(identity: identities, password: password, version: 1, groups: ["staff", "admin"])
            }
        }
        var inFlight: [Task<Void, Never>] = []
        for _ in 0..<steps {
            let user = Self.users.randomElement(using: &random)!
            switch Int.random(in: 0..<12, using: &random) {
            case 0..<5:
                let current = directory.accounts.withLock { $0[user]?.password }
                let password =
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: used[user]?.randomElement(using: &random) ?? "none"
                    case 1: "wrong"
                    default: current ?? "none"
                    }
                let delay = Int.random(in: 0...6, using: &random)
                directory.delays.withLock { $0.append(delay) }
                let process = processes.randomElement(using: &random)!
                inFlight.append(
                    Task {
                        _ = try? await process.authenticate(
                            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
                    })
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...2, using: &random)))
            case 5, 6:
                let password = newPassword(user)
                directory.accounts.withLock {
                    $0[user]?.password = password
                    $0[user]?.version += 1
                }
            case 7:
                directory.accounts.withLock { $0[user]?.locked.toggle() }
            case 8:
                if directory.accounts.withLock({ $0[user] }) != nil {
                    directory.accounts.withLock { $0[user] = nil }
                } else {
                    identities += 1
                    let password = newPassword(user)
                    let identity = identities
                    directory.accounts.withLock {
                        $0[user] = .init(identity: identity, password: password, version: 1, groups: ["staff"])
                    }
                }
            case 9:
                directory.accounts.withLock { accounts in
                    if accounts[user]?.groups.contains("admin") == true {
                        accounts[user]?.groups.remove("admin")
                    } else {
                        accounts[user]?.groups.insert("admin")
                    }
                }
            case 10:
                _ = await processes.randomElement(using: &random)!.refresh(dueOnly: false)
            default:
                clock.seconds.withLock { $0 += Int64.random(in: 0...2, using: &random) }
            }
        }
        for task in inFlight { await task.value }
        _ = await processes[0].refresh(dueOnly: false)
        directory.reachable.withLock { $0 = false }
        var admitted = 0
        for user in Self.users {
            let account = directory.accounts.withLock { $0[user] }
            for password in (used[user] ?? []).sorted() + ["wrong"] {
                let outcome = try await processes[1].authenticate(
                    AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
                guard case .authenticated(let identity) = outcome else { continue }
                admitted += 1
                guard let account, !account.locked, account.password == password,
                    identity.groups.isSubset(of: account.groups)
                else {
                    let failure =
                        "\(user) admitted offline with \(password) (groups \(identity.groups.sorted())); the "
                        + "directory: \(account.map { "\($0.password), locked \($0.locked), \($0.groups.sorted())" } ?? "gone")"
                    return (failure, admitted)
                }
            }
        }
        return (nil, admitted)
    }

    /// Sequences of 24 steps, 1,000 of them in each of two tests (`make fuzz` runs 6,000: `GATEKEEPER_MODEL_SEQUENCES`).
    @Test(arguments: [0, 1])
    func noWithdrawnPasswordAccountOrGroupIsAdmittedAfterTheNextCheck(_ half: Int) async throws {
        let count = ProcessInfo.processInfo.environment["GATEKEEPER_MODEL_SEQUENCES"].flatMap(Int.init) ?? 1_000
        var random = SeededGenerator(for: "offline cache model, half \(half)")
        var admitted = 0
        for number in 0..<count {
            let (failure, admittedNow) = try await run(steps: 24, &random)
            admitted += admittedNow
            if let failure {
                Issue.record("sequence \(number) of GATEKEEPER_TEST_SEED=\(random.seed): \(failure)")
                return
            }
        }
        #expect(admitted >= count / 10, "only \(admitted) offline logins admitted in \(count) sequences")
    }
}
