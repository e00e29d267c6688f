import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Turns Ctrl-C (SIGINT) into a call to `onInterrupt` instead of ending the process, for as long as the
/// monitor lives. A login waiting on its provider uses it to cancel the task, so the person gets back
/// to where they were at once.
/// `@unchecked Sendable`: the dispatch source is thread-safe; it is set once in `init`.
public final class InterruptMonitor: @unchecked Sendable {
    private let source: any DispatchSourceSignal

    public init(onInterrupt: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler(handler: onInterrupt)
        source.resume()
    }

    /// Stops watching and restores the default Ctrl-C behaviour.
    public func stop() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }

    deinit {
        if !source.isCancelled { stop() }
    }
}
