import Dispatch
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Turns Ctrl-C (SIGINT) — or any of the signals given — into a call to a handler instead of ending the
/// process, for as long as the monitor lives. A login waiting on its provider uses it to cancel the task,
/// so the person gets back to where they were at once, and a tool stops what it started before it exits.
/// `@unchecked Sendable`: the dispatch sources are thread-safe; they are set once in `init`.
public final class InterruptMonitor: @unchecked Sendable {
    private let sources: [(signal: Int32, source: any DispatchSourceSignal)]

    public convenience init(onInterrupt: @escaping @Sendable () -> Void) {
        self.init(signals: [SIGINT]) { _ in onInterrupt() }
    }

    /// Watches `signals` (SIGINT, SIGTERM, SIGHUP …); `onSignal` gets the number of each that arrives.
    /// Returns once the signals are watched: one sent after that — the moment a tool shows its prompt —
    /// reaches `onSignal`; one sent before has the signal's default effect. None is lost.
    ///
    /// On Linux a Dispatch signal source is a signalfd, registered later on Dispatch's manager thread, and
    /// only the first registration for a signal in the process installs Dispatch's handler (which hands
    /// the signal on to that signalfd). So the monitor leaves the default in place until Dispatch's
    /// handler is (ignoring the signal in between lost the ones sent then), waits for the registration,
    /// and, for a signal watched before, puts that handler back at once where `stop()` had restored the
    /// default.
    ///
    /// The sources are all resumed before any registration is awaited, so the manager thread registers
    /// them as they come rather than one round trip each.
    public init(signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) {
        let started = signals.map { number in
            if var installed = Self.handlers.withLock({ $0[number] }) { sigaction(number, &installed, nil) }
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { onSignal(number) }
            let registered = DispatchSemaphore(value: 0)
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return (number, source, registered)
        }
        // Bounded, so that a starved Dispatch cannot keep a tool from starting.
        let deadline = DispatchTime.now() + .seconds(5)
        sources = started.map { number, source, registered in
            let inTime = registered.wait(timeout: deadline) == .success
            Self.handlers.withLock { handlers in
                var current = sigaction()
                sigaction(number, nil, &current)
                let address = Self.address(current.__sigaction_handler.sa_handler)
                // Only Dispatch's own handler is kept, never the default or "ignore".
                if inTime, handlers[number] == nil, address != Self.address(SIG_IGN), address != Self.address(SIG_DFL) {
                    handlers[number] = current
                }
            }
            return (number, source)
        }
    }

    private static func address(_ handler: (@convention(c) (Int32) -> Void)?) -> Int {
        handler.map { unsafeBitCast($0, to: Int.self) } ?? 0
    }

    /// The handler Dispatch installed for each signal the first time it was watched.
    private static let handlers = Locked<[Int32: sigaction]>([:])

    /// Stops watching and restores the signals' default behaviour.
    public func stop() {
        for (number, source) in sources {
            source.cancel()
            signal(number, SIG_DFL)
        }
    }

    deinit {
        if sources.contains(where: { !$0.source.isCancelled }) { stop() }
    }
}
