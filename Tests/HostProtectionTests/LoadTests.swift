import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import GatekeeperSupport
import MockProvider
import PasswordHashing
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

    @Test func everyActionRunsOnceAndOnlyForItsOwnUser() async throws {
        let load = GatekeeperLoad(accounts: Self.users, intruders: Self.intruders, actionsPerAccount: 20)
        for (name, provider) in try Self.backends() {
            let result = await load.run(against: provider)
            #expect(result.total == 1000, "\(name): \(result.total) actions ran")
            #expect(Self.users.allSatisfy { result.ran[$0.0] == 20 }, "\(name)")
            #expect(Self.intruders.allSatisfy { result.ran[$0.0] == nil }, "\(name): an intruder's action ran")
            #expect(result.wrongIdentity == 0 && result.failed == 0, "\(name)")
            #expect(result.dismissed == 200, "\(name)")
            #expect(load.isSound(result), "\(name)")
        }
    }

    /// The count catches what it is for: a backend that lets anyone in as someone else, or lets a wrong
    /// password through, is found unsound.
    @Test func theCountFindsABackendThatMixesUpUsersOrLetsIntrudersIn() async {
        struct Liar: AuthProvider {
            let name = "liar"
            let asUser: String?
            func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
                _ = try await request.conversation.askSecret("Password: ")
                return .authenticated(Identity(username: asUser ?? request.username, provider: name))
            }
        }
        let load = GatekeeperLoad(
            accounts: Array(Self.users.prefix(5)), intruders: [Self.intruders[0]], actionsPerAccount: 4)
        let everyoneIsUser0 = await load.run(against: Liar(asUser: "user0"))
        #expect(everyoneIsUser0.wrongIdentity > 0 && !load.isSound(everyoneIsUser0))
        let anyPassword = await load.run(against: Liar(asUser: nil))
        #expect(anyPassword.ran[Self.intruders[0].0] == 4 && !load.isSound(anyPassword))
    }
}
