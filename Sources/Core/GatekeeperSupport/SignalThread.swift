import CProcessSpawn

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Turns signals (SIGINT, SIGTERM, SIGHUP …) into calls to a handler on a thread of its own, for a tool
/// that runs its work on its main thread (BlockingPools' `ThreadExecutor`) and starts no Dispatch.
///
/// The signals are blocked on the calling thread — the main thread, whose mask every thread it starts
/// later inherits — and read from a signalfd. A thread that was already running and does not block them
/// (one a plugin's library started as it loaded) runs a handler instead, which hands the number on
/// through a pipe the same thread reads. A signal sent before ``init(signals:onSignal:)`` has its default
/// effect; one sent after reaches `onSignal`, in order, until ``stop()``, which hands on any still pending
/// and then gives the signals the dispositions they had before. A tool that exits rather than `exec`s
/// need not stop it: signals that come while it stops its helpers are only handed on. One watch at a time
/// in a process (the handler's pipe is the process's).
package final class SignalThread: @unchecked Sendable {
    private let signals: [Int32]
    private let handler: @Sendable (Int32) -> Void
    private var signalDescriptor: Int32 = -1
    private var forwardPipe: [Int32] = [-1, -1]
    private var stopPipe: [Int32] = [-1, -1]
    private var thread = pthread_t()
    private let stopped = Locked(false)
    /// The dispositions before the watch, put back by ``stop()``.
    private var previous: [sigaction] = []

    /// `nil` when the system refuses a descriptor or a thread: the signals keep their default effect.
    package init?(signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        handler = onSignal
        guard pipe(&forwardPipe) == 0 else { return nil }
        guard pipe(&stopPipe) == 0 else {
            closeAll()
            return nil
        }
        for end in forwardPipe + stopPipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        for end in forwardPipe { _ = fcntl(end, F_SETFL, O_NONBLOCK) }
        previous = signals.map { number in
            var action = sigaction()
            sigaction(number, nil, &action)
            return action
        }
        signalDescriptor = signals.withUnsafeBufferPointer { gk_signal_fd($0.baseAddress, Int32($0.count)) }
        let forwarding = signals.withUnsafeBufferPointer {
            gk_signal_forward(forwardPipe[1], $0.baseAddress, Int32($0.count))
        }
        guard signalDescriptor >= 0, forwarding == 0 else {
            restorePrevious()
            closeAll()
            return nil
        }
        setMask(SIG_BLOCK)
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { context in
                let watcher = Unmanaged<SignalThread>.fromOpaque(context!).takeRetainedValue()
                watcher.loop()
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<SignalThread>.fromOpaque(context).release()
            restorePrevious()
            setMask(SIG_UNBLOCK)
            closeAll()
            return nil
        }
    }

    private func loop() {
        _ = gk_name_thread("gatekeeper-sig")
        while case let number = gk_signal_fd_wait(signalDescriptor, forwardPipe[0], stopPipe[0]), number > 0 {
            handler(number)
        }
    }

    /// Stops watching: the thread hands on every signal already sent and ends, and the signals get the
    /// dispositions they had before, on the calling thread (the main thread) unblocked again.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe[1], &byte, 1)
        pthread_join(thread, nil)
        while case let number = gk_signal_fd_wait(signalDescriptor, forwardPipe[0], -1), number > 0 { handler(number) }
        restorePrevious()
        closeAll()
        setMask(SIG_UNBLOCK)
    }

    private func setMask(_ how: Int32) {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(how, &set, nil)
    }

    private func restorePrevious() {
        for (number, action) in zip(signals, previous) {
            var action = action
            sigaction(number, &action, nil)
        }
        gk_signal_forward_end()
    }

    private func closeAll() {
        for descriptor in [signalDescriptor] + forwardPipe + stopPipe where descriptor >= 0 { close(descriptor) }
    }
}
