import Authentication
import TestSupport

/// A provider whose login is the closure a test gives; it counts its logins, records its sign-outs and
/// says when it is freed.
final class DoubleProvider: AuthProvider {
    let name = "double"
    private let body: @Sendable (AuthRequest) async throws(AuthError) -> AuthOutcome
    let logins = Counter()
    let requests = Locked<[String]>([])
    let signOuts = Locked<[Identity]>([])
    private let freed: Locked<Bool>?

    /// - Parameter freed: Set when the provider is freed.
    init(freed: Locked<Bool>? = nil, _ body: @escaping @Sendable (AuthRequest) async throws(AuthError) -> AuthOutcome) {
        self.body = body
        self.freed = freed
    }

    deinit { freed?.withLock { $0 = true } }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        logins.increment()
        requests.withLock { $0.append(request.username) }
        return try await body(request)
    }

    func signOut(_ identity: Identity) async {
        signOuts.withLock { $0.append(identity) }
    }

    /// alice / wonderland: asks the password whoever the user, answers who she is.
    static func alice(freed: Locked<Bool>? = nil) -> DoubleProvider {
        DoubleProvider(freed: freed) { request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            guard request.username == "alice" else { return .notMine }
            guard password == Secret(copying: "wonderland".utf8) else { return .rejected(.wrongCredentials) }
            return .authenticated(
                Identity(
                    username: "alice", displayName: "Alice Liddell", groups: ["wheel", "staff"], provider: "double",
                    attributes: ["home": "/home/alice", "shell": "/bin/sh"]))
        }
    }

    /// Answers `outcome` without asking anything.
    static func answering(_ outcome: AuthOutcome) -> DoubleProvider {
        DoubleProvider { _ throws(AuthError) in outcome }
    }
}

/// Where a provider waits until the test opens it, or until its task is cancelled.
final class Gate: Sendable {
    private struct State {
        var opened = false
        var next = 0
        var waiting: [Int: CheckedContinuation<Bool, Never>] = [:]
        var cancelledWaits = 0
    }

    private let state = Locked(State())

    /// `true` once opened; `false` when the waiting task was cancelled.
    func wait() async -> Bool {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool? in
                    if state.opened { return true }
                    if Task.isCancelled {
                        state.cancelledWaits += 1
                        return false
                    }
                    state.waiting[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                let continuation = state.waiting.removeValue(forKey: id)
                if continuation != nil { state.cancelledWaits += 1 }
                return continuation
            }
            continuation?.resume(returning: false)
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.opened = true
            defer { state.waiting = [:] }
            return state.waiting.values
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// How many wait now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }
    /// How many waits ended by cancellation.
    var cancelledWaits: Int { state.withLock { $0.cancelledWaits } }
}
