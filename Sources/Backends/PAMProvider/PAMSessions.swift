import Dispatch
import GatekeeperSupport
import Synchronization

/// The PAM sessions a provider holds open until sign-out. Each one's transaction waits on its thread,
/// handle open, until ``close(_:)`` lets it close the session and end.
final class PAMSessions: Sendable {
    /// The identity attribute naming an open session.
    static let attribute = "pam.session"

    private let held = Locked<[String: Session]>([:])

    /// Registers a new session; call from the transaction's thread.
    func open() -> Session {
        let session = Session()
        held.withLock { $0[session.id] = session }
        return session
    }

    /// Forgets a session nobody will sign out of; its transaction closes it at once.
    func discard(_ session: Session) {
        held.withLock { _ = $0.removeValue(forKey: session.id) }
    }

    /// Lets the session named `id` close, and waits until it has.
    func close(_ id: String?) async {
        guard let id, let session = held.withLock({ $0.removeValue(forKey: id) }) else { return }
        await session.close()
    }

    /// One open session.
    final class Session: Sendable {
        let id = Session.nextID()
        private let release = DispatchSemaphore(value: 0)
        private let closed = Locked<(done: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        private static let counter = Atomic<UInt64>(0)

        /// A name unique in this process.
        private static func nextID() -> String {
            String(counter.wrappingAdd(1, ordering: .relaxed).newValue)
        }

        /// Blocks the transaction's thread until sign-out.
        func waitUntilClosed() {
            release.wait()
        }

        /// Called by the transaction once the session is closed and the credentials deleted.
        func finish() {
            closed.withLock { state in
                state.done = true
                return state.waiter.take()
            }?.resume()
        }

        func close() async {
            release.signal()
            await withCheckedContinuation { continuation in
                let done = closed.withLock { state in
                    if state.done { return true }
                    state.waiter = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }
}
