/// The gatekeeper's mutable state, only ever touched inside its one lock: the session, the shared
/// login, and the observers of its state.
struct LockedState: ~Copyable {
    var session: Session?
    var login = SingleFlight()
    var observers: [UInt64: AsyncStream<Gatekeeper.State>.Continuation] = [:]
    var lastBroadcast: Gatekeeper.State = .signedOut
    private var lastObserverID: UInt64 = 0

    mutating func nextObserverID() -> UInt64 {
        lastObserverID += 1
        return lastObserverID
    }

    func state(at now: Int64, clock: SessionClock) -> Gatekeeper.State {
        if login.isInFlight { return .authenticating }
        if let session, !session.isExpired(at: now) {
            return .signedIn(session.identity, expires: session.expiry == .max ? nil : clock.instant(session.expiry))
        }
        return .signedOut
    }

    /// Runs `change`, then broadcasts the new state to every observer if it differs from the last one
    /// sent. Observers are told inside the lock, so they see transitions in the order they happened.
    /// Returns what `change` returned and the shared login's effects, to deliver once the lock is
    /// released.
    mutating func transition<T>(
        at now: Int64,
        clock: SessionClock,
        _ change: (inout LockedState) -> T
    ) -> (T, SingleFlight.Effects) {
        let result = change(&self)
        let state = state(at: now, clock: clock)
        if state != lastBroadcast {
            lastBroadcast = state
            for observer in observers.values { observer.yield(state) }
        }
        return (result, login.takeEffects())
    }
}
