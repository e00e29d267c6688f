import Authentication
import AuthenticationTesting
import Synchronization

/// alice (admin, staff) / wonderland and bob (staff) / builder, answering at once.
func accountsProvider() -> StubAuthProvider {
    StubAuthProvider(accounts: [
        "alice": ("wonderland", ["admin", "staff"]),
        "bob": ("builder", ["staff"]),
    ])
}

/// A provider that blocks a thread outside Swift's pool and ignores cancellation, as a C library in a
/// fail delay does. `release()` lets every blocked call finish.
final class BlockingProvider: AuthProvider {
    let name = "blocking"
    private let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let released = Atomic<Bool>(false)
    let started = AsyncStream<Void>.makeStream()
    let finished = AsyncStream<Void>.makeStream()
    private let signOuts = Atomic<Int>(0)

    var signOutCount: Int { signOuts.load(ordering: .relaxed) }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        _ = try await request.conversation.askSecret("Password: ")
        started.continuation.yield()
        await withCheckedContinuation { continuation in
            let releaseNow = gate.withLock { waiting in
                if released.load(ordering: .relaxed) { return true }
                waiting.append(continuation)
                return false
            }
            if releaseNow { continuation.resume() }
        }
        finished.continuation.yield()
        return .authenticated(Identity(username: request.username, provider: name))
    }

    func signOut(_ identity: Identity) async {
        signOuts.add(1, ordering: .relaxed)
    }

    func release() {
        released.store(true, ordering: .relaxed)
        for continuation in gate.withLock({ $0 }) { continuation.resume() }
        gate.withLock { $0 = [] }
    }
}

/// Collects a gatekeeper's states.
final class StateRecorder: Sendable {
    private final class Log: Sendable {
        let states = Mutex<[Gatekeeper.State]>([])
    }

    private let log = Log()
    private let task: Task<Void, Never>

    init(_ gatekeeper: Gatekeeper) async {
        let stream = gatekeeper.states()
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        let log = self.log
        task = Task {
            var first = true
            for await state in stream {
                log.states.withLock { $0.append(state) }
                if first {
                    first = false
                    readyContinuation.yield()
                }
            }
        }
        for await _ in ready { break }
    }

    /// Waits until `count` states arrived, then returns them with identities reduced to user names.
    func waitFor(_ count: Int) async -> [String] {
        while log.states.withLock({ $0.count }) < count { await Task.yield() }
        return log.states.withLock { $0 }.map { state in
            switch state {
            case .signedOut: "signedOut"
            case .authenticating: "authenticating"
            case .signedIn(let identity, _): "signedIn(\(identity.username))"
            }
        }
    }

    deinit { task.cancel() }
}
