import GatekeeperSupport

extension Gatekeeper {
    /// The gatekeeper's state, now and at every change, for as long as the stream is iterated.
    ///
    /// Any number of observers may listen. Each stream starts with the current state. An observer that
    /// falls more than 16 changes behind skips to the newest ones. A session that times out is reported
    /// as ``State/signedOut`` when the gatekeeper notices, at the next check.
    public func states() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(16))
        let now = clock.now()
        let id = core.withLock { core in
            let id = core.nextObserverID()
            core.observers[id] = continuation
            continuation.yield(core.state(at: now, clock: clock))
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.core.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }
}
