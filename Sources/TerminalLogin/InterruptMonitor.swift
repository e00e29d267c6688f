import Dispatch

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
    public init(signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { onSignal(number) }
            source.resume()
            return (number, source)
        }
    }

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
