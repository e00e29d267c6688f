import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import PasswordHashing
import TestSupport
import Testing

/// Administration of a users file as an API (what gatekeeper-passwd calls), checked against the provider
/// and Apache's htpasswd.
@Suite(.timeLimit(.minutes(1)))
struct UsersFileAdministrationTests {
    private func hash(_ password: String) throws -> PasswordHash {
        try PasswordHash.make(Secret(copying: password.utf8), scheme: .bcrypt)
    }

    private func login(_ path: String, _ user: String, _ password: String) async throws -> AuthOutcome {
        try await FileAuthProvider(.init(path: path)).authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    @Test func addsSetsLocksUnlocksAndDeletes() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        let store = UsersFileStore(path: path)
        #expect(throws: UsersFileError.self) { try store.addUser("bob", hash: try hash("builder")) }  // No file.
        try store.addUser("bob", hash: try hash("builder"), groups: ["ops"], displayName: "Bob", createFile: true)
        #expect(throws: UsersFileError.self) { try store.addUser("bob", hash: try hash("again")) }
        let bob = try expectAuthenticated(try await login(path, "bob", "builder"), "bob did not log in")
        #expect(bob.groups == ["ops"] && bob.displayName == "Bob")
        // Apache's own tool agrees on the line it wrote (no extra fields on this one).
        try store.addUser("ann", hash: try hash("apache"))
        #expect(try sh("htpasswd -vb \(path) ann apache 2>&1").contains("correct"))

        try store.lockUser("bob")
        try store.lockUser("bob")  // Locking twice changes nothing.
        #expect(try await login(path, "bob", "builder") == .rejected(.locked(until: nil)))
        try store.unlockUser("bob")
        #expect(try store.read()["bob"]?.groups == ["ops"])
        try expectAuthenticated(try await login(path, "bob", "builder"), "bob did not log in after unlocking")

        try store.setPassword(of: "bob", to: try hash("new"), groups: ["ops", "web"])
        #expect(try await login(path, "bob", "builder") == .rejected(.wrongCredentials))
        #expect(try store.read()["bob"]?.groups == ["ops", "web"])
        #expect(throws: UsersFileError.self) { try store.setPassword(of: "zed", to: try hash("x")) }

        try store.deleteUser("bob")
        #expect(try await login(path, "bob", "new") == .notMine)
        #expect(throws: UsersFileError.self) { try store.deleteUser("bob") }
        #expect(throws: UsersFileError.self) { try store.lockUser("bob") }
    }

    /// A refused change leaves the file as it was, byte for byte.
    @Test func aRefusedChangeChangesNothing() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        let store = UsersFileStore(path: path)
        try store.addUser("bob", hash: try hash("builder"), createFile: true)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: UsersFileError.self) {
            try store.setPassword(of: "bob", to: try hash("x"), displayName: "Bob\u{1B}[2J")
        }
        #expect(throws: UsersFileError.self) { try store.addUser("eve", hash: try hash("x"), groups: ["a,b"]) }
        #expect(throws: UsersFileError.self) { try store.unlockUser("nobody") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
