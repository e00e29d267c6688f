import Authentication
import AuthenticationTesting
import BlockingPools
import Foundation
import GatekeeperSupport
import OfflineCache
import PasswordHashing
import TestSupport
import Testing

/// Every password check of the process waits for the same threads, one per processor: a users file's and
/// the offline cache's alike, so the two together never hash with more memory or threads than that.
@Suite(.timeLimit(.minutes(2)))
struct OnePoolTests {
    /// alice / wonderland, always reachable.
    final class Backend: ReachabilityReporting {
        let name = "backend"
        let offlineScope = "backend"
        func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer {
            let password = try await request.conversation.askSecret("Password: ")
            guard request.username == "alice" else { return .answered(.notMine) }
            return password == Secret(copying: "wonderland".utf8)
                ? .answered(.authenticated(Identity(username: "alice", provider: name)))
                : .answered(.rejected(.wrongCredentials))
        }
        func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
            guard case .answered(let outcome) = try await authenticateOnline(request) else {
                return .unavailable(reason: "down")
            }
            return outcome
        }
    }

    @Test func theOfflineCacheHashesOnThePoolTheUsersFileChecksOn() async throws {
        let cache = try OfflineCachingProvider(
            wrapping: Backend(), directory: temporaryDirectory("gatekeeper-one-pool") + "/cache",
            maxAge: .seconds(3600))
        // Every thread of the checks' pool held.
        let held = Locked(true)
        let started = Locked(0)
        let count = PasswordHash.checks.maxThreads
        for _ in 0..<count {
            PasswordHash.checks.submit {
                started.withLock { $0 += 1 }
                while held.withLock({ $0 }) { usleep(1000) }
            }
        }
        while started.withLock({ $0 }) < count { try await Task.sleep(for: .milliseconds(1)) }
        // An online success makes the cache's verifier: it must wait in the same line.
        let login = Task {
            try await cache.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while PasswordHash.checks.waitingCount == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(PasswordHash.checks.waitingCount == 1, "the cache's hash did not wait for the checks' pool")
        held.withLock { $0 = false }
        try expectAuthenticated(try await login.value, "the login failed once the pool was free")
        #expect(PasswordHash.checks.maxThreads == BlockingPool.processorCount)
    }
}
