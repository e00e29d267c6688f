import Authentication
import AuthenticationTesting
import Dispatch
import GatekeeperSupport
import Synchronization
import TestSupport

/// alice (admin, staff) / wonderland and bob (staff) / builder, answering at once.
func accountsProvider() -> StubAuthProvider {
    StubAuthProvider(accounts: [
        "alice": ("wonderland", ["admin", "staff"]),
        "bob": ("builder", ["staff"]),
    ])
}

/// A provider that blocks a real thread (a dispatch thread, outside Swift's pool) and ignores
/// cancellation, as a C library in a fail delay does. `release()` lets every blocked call finish.
final class BlockingProvider: AuthProvider {
    let name = "blocking"
    private let gate = DispatchSemaphore(value: 0)
    /// Calls blocked now, and whether the gate is open for good.
    private let state = Locked<(blocked: Int, released: Bool)>((0, false))
    private let threads = DispatchQueue(label: "blocking-provider", attributes: .concurrent)
    let started = AsyncStream<Void>.makeStream()
    let finished = AsyncStream<Void>.makeStream()
    private let signOuts = Atomic<Int>(0)

    var signOutCount: Int { signOuts.load(ordering: .relaxed) }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        _ = try await request.conversation.askSecret("Password: ")
        await withCheckedContinuation { continuation in
            threads.async { [self] in
                let blocks = state.withLock { state in
                    if state.released { return false }
                    state.blocked += 1
                    return true
                }
                started.continuation.yield()
                if blocks { gate.wait() }  // The thread itself waits, deaf to cancellation.
                continuation.resume()
            }
        }
        finished.continuation.yield()
        return .authenticated(Identity(username: request.username, provider: name))
    }

    func signOut(_ identity: Identity) async {
        signOuts.add(1, ordering: .relaxed)
    }

    func release() {
        let blocked = state.withLock { state in
            state.released = true
            defer { state.blocked = 0 }
            return state.blocked
        }
        for _ in 0..<blocked { gate.signal() }
    }
}

/// Collects a gatekeeper's states.
final class StateRecorder: Sendable {
    private final class Log: Sendable {
        let states = Locked<[Gatekeeper.State]>([])
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

    /// Waits until `count` states arrived (20 s at most), then returns them with identities reduced to
    /// user names.
    func waitFor(_ count: Int) async -> [String] {
        _ = await eventually { log.states.withLock({ $0.count }) >= count }
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
