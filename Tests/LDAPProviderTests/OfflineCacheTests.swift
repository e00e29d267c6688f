import Authentication
import AuthenticationTesting
import Foundation
import LDAPProvider
import OfflineCache
import TestSupport
import Testing

/// Logins while the backend is unreachable: from a cache of online successes, with a lockout of its own.
@Suite(.timeLimit(.minutes(2)))
struct OfflineCacheTests {
    /// alice / wonderland, reachable or not as the test says.
    final class Switchable: AuthProvider {
        let name = "switchable"
        let reachable = Locked(true)
        let known = Locked(true)

        func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
            let password = try await request.conversation.askSecret("Password: ")
            guard reachable.withLock({ $0 }) else { return .unavailable(reason: "the server is down") }
            guard known.withLock({ $0 }), request.username == "alice" else { return .notMine }
            return password == Secret(copying: "wonderland".utf8)
                ? .authenticated(Identity(username: "alice", displayName: "Alice", groups: ["staff"], provider: name))
                : .rejected(.wrongCredentials)
        }
    }

    let directory = temporaryDirectory("gatekeeper-offline") + "/cache"

    func login(_ provider: any AuthProvider, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret(password))))
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
        guard case .authenticated = try await login(cache, "wonderland") else {
            Issue.record("the online login failed")
            return
        }
        backend.reachable.withLock { $0 = false }
        guard case .authenticated(let identity) = try await login(cache, "wonderland") else {
            Issue.record("the cached login was refused offline")
            return
        }
        #expect(
            identity.attributes["offline"] == "yes" && identity.groups == ["staff"] && identity.displayName == "Alice")
        #expect(try await login(cache, "wrong") == .rejected(.wrongCredentials))
        // The cache is private, and holds no password.
        let file = directory + "/offline-logins"
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
        guard case .authenticated = try await login(cache, "wonderland") else {
            Issue.record("the online login failed")
            return
        }
        backend.reachable.withLock { $0 = false }
        guard case .authenticated = try await login(cache, "wonderland") else {
            Issue.record("an online success did not reset the offline count")
            return
        }
    }

    @Test func anOldEntryOrAnAccountGoneIsNotUsed() async throws {
        let backend = Switchable()
        let brief = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(1))
        _ = try await login(brief, "wonderland")
        backend.reachable.withLock { $0 = false }
        try await Task.sleep(for: .seconds(2.1))
        guard case .unavailable = try await login(brief, "wonderland") else {
            Issue.record("an entry past its age was used")
            return
        }
        // The backend says the account is gone: its entry goes too.
        let cache = try OfflineCachingProvider(wrapping: backend, directory: directory, maxAge: .seconds(86_400))
        backend.reachable.withLock { $0 = true }
        _ = try await login(cache, "wonderland")
        backend.known.withLock { $0 = false }
        #expect(try await login(cache, "wonderland") == .notMine)
        backend.reachable.withLock { $0 = false }
        guard case .unavailable = try await login(cache, "wonderland") else {
            Issue.record("the entry of an account the backend no longer knows was used")
            return
        }
    }

    @Test func theDirectoryDownLogsInFromTheCache() async throws {
        let slapd = try SlapdFixture.shared.get()
        func ldap(_ uri: String) throws -> OfflineCachingProvider {
            try OfflineCachingProvider(
                wrapping: LDAPAuthProvider(
                    .init(uris: [uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3))),
                directory: directory, maxAge: .seconds(86_400))
        }
        guard case .authenticated = try await login(try ldap(slapd.uri), "wonderland") else {
            Issue.record("the directory login failed")
            return
        }
        guard case .authenticated(let identity) = try await login(try ldap("ldap://127.0.0.1:1"), "wonderland") else {
            Issue.record("the cached directory login was refused while the directory was down")
            return
        }
        #expect(identity.provider == "ldap" && identity.attributes["offline"] == "yes")
    }
}
