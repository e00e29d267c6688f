import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import GatekeeperSupport
import MockProvider
import Synchronization
import TestSupport
import Testing

/// 1,000 protected actions at once across 50 users (a gatekeeper each, as 50 tool instances), through
/// the mock backend, the users file and a three-entry stack: every action runs exactly once and only for
/// its own signed-in user; ten more users with wrong passwords run nothing. Counted, not timed.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LoadTests {
    static let users = (0..<50).map { ("user\($0)", "password-\($0)") }
    static let intruders = (50..<60).map { ("user\($0)", "password-\($0)") }

    static func backends() throws -> [(String, any AuthProvider)] {
        let mock = MockAuthProvider(
            users: (users + intruders).map { .init(username: $0.0, password: Secret(copying: $0.1.utf8)) }, delay: .zero
        )
        let path = temporaryDirectory("gatekeeper-load") + "/users"
        let store = UsersFileStore(path: path)
        for (index, (user, password)) in (users + intruders).enumerated() {
            try store.addUser(
                user, hash: try PasswordHash.make(Secret(copying: password.utf8), scheme: .bcrypt),
                createFile: index == 0)
        }
        let file = try FileAuthProvider(.init(path: path))
        let passOver = ChainControl(actions: [.success: .done, .userUnknown: .ignore], default: .die)
        let stack = ProviderChain([
            .init(passOver, MockAuthProvider(users: [], delay: .zero, name: "empty")),
            .init(passOver, file),
            .init(.required, mock),
        ])
        return [("mock", mock), ("users file", file), ("three-entry stack", stack)]
    }

    /// What the actions did, counted from every task.
    final class Tally: Sendable {
        let ran = Locked<[String: Int]>([:])
        let wrongIdentity = Atomic<Int>(0)
        let dismissed = Atomic<Int>(0)
    }

    @Test func everyActionRunsOnceAndOnlyForItsOwnUser() async throws {
        for (name, provider) in try Self.backends() {
            let tally = Tally()
            await withTaskGroup(of: Void.self) { group in
                for (user, password) in Self.users + Self.intruders {
                    let intruder = Self.intruders.contains { $0.0 == user }
                    let gatekeeper = Gatekeeper(
                        provider: provider, configuration: .init(maxAttempts: 1, lockout: nil, failDelay: .zero))
                    for _ in 0..<20 {
                        group.addTask {
                            let action = RequiresAuthentication(.signedIn) { identity -> Void in
                                if identity.username != user { tally.wrongIdentity.add(1, ordering: .relaxed) }
                                tally.ran.withLock { $0[user, default: 0] += 1 }
                            }
                            let conversation = ScriptedConversation(
                                .text(user), .secret(intruder ? "not-" + password : password))
                            if case .dismissed = try? await action.run(through: gatekeeper, conversation: conversation)
                            {
                                tally.dismissed.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
            }
            let counts = tally.ran.withLock { $0 }
            #expect(counts.values.reduce(0, +) == 1000, "\(name): \(counts.values.reduce(0, +)) actions ran")
            #expect(Self.users.allSatisfy { counts[$0.0] == 20 }, "\(name)")
            #expect(Self.intruders.allSatisfy { counts[$0.0] == nil }, "\(name): an intruder's action ran")
            #expect(tally.wrongIdentity.load(ordering: .relaxed) == 0, "\(name)")
            #expect(tally.dismissed.load(ordering: .relaxed) == 200, "\(name)")
        }
    }
}
