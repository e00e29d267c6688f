/// The gatekeeper's mutable state, only ever touched inside its one lock: the session, the shared
/// login, and the observers of its state.
struct LockedState: ~Copyable {
    var session: Session?
    var login = SingleFlight()
    var observers: [UInt64: AsyncStream<Gatekeeper.State>.Continuation] = [:]
    private var lastBroadcast = Broadcast.signedOut
    private var lastObserverID: UInt64 = 0

    mutating func nextObserverID() -> UInt64 {
        lastObserverID += 1
        return lastObserverID
    }

    func state(at now: Int64, clock: SessionClock) -> Gatekeeper.State {
        broadcast(at: now).state(clock: clock)
    }

    /// The state in session time.
    private func broadcast(at now: Int64) -> Broadcast {
        if login.isInFlight { return .authenticating }
        if let session, !session.isExpired(at: now) { return .signedIn(session.identity, expiry: session.expiry) }
        return .signedOut
    }

    /// ``Gatekeeper/State`` in session time (`SessionClock`), as the last broadcast is kept: a
    /// `ContinuousClock.Instant` held here would make this state's layout, and so every access to the
    /// gatekeeper's lock, something looked up at run time (the instant's layout is the standard library's
    /// own), on the signed-in check too.
    private enum Broadcast: Equatable {
        case signedOut
        case authenticating
        case signedIn(Identity, expiry: Int64)

        func state(clock: SessionClock) -> Gatekeeper.State {
            switch self {
            case .signedOut: .signedOut
            case .authenticating: .authenticating
            case .signedIn(let identity, let expiry):
                .signedIn(identity, expires: expiry == .max ? nil : clock.instant(expiry))
            }
        }
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
        let broadcast = broadcast(at: now)
        if broadcast != lastBroadcast {
            lastBroadcast = broadcast
            let state = broadcast.state(clock: clock)
            for observer in observers.values { observer.yield(state) }
        }
        return (result, login.takeEffects())
    }
}
