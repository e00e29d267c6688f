import CProcessSpawn

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Turns signals (SIGINT, SIGTERM, SIGHUP …) into calls to a handler on a thread of its own, for a tool
/// that runs its work on its main thread (``ThreadExecutor``) and starts no Dispatch: the signals are
/// blocked and read from a signalfd, so a signal reaches the handler whichever thread was running.
///
/// Start it on the main thread before any other thread: threads inherit the mask, and one started
/// earlier would take a signal with its default effect. A signal sent before ``init(signals:onSignal:)``
/// has its default effect; one sent after reaches `onSignal`, until ``stop()``, which hands on any still
/// pending and then gives the signals back their default effect.
package final class SignalThread: @unchecked Sendable {
    private let signals: [Int32]
    private let signalDescriptor: Int32
    private var stopPipe: [Int32] = [-1, -1]
    private var thread = pthread_t()
    private let handler: @Sendable (Int32) -> Void
    private let stopped = Locked(false)

    /// `nil` when the system refuses a descriptor or a thread: the signals keep their default effect.
    package init?(signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        handler = onSignal
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signalDescriptor = signals.withUnsafeBufferPointer { gk_signal_fd($0.baseAddress, Int32($0.count)) }
        guard signalDescriptor >= 0, pipe(&stopPipe) == 0 else {
            if signalDescriptor >= 0 { close(signalDescriptor) }
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            return nil
        }
        for end in stopPipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
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
            for descriptor in [signalDescriptor] + stopPipe { close(descriptor) }
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            return nil
        }
    }

    private func loop() {
        _ = gk_name_thread("gatekeeper-sig")
        while true {
            let number = gk_signal_fd_wait(signalDescriptor, stopPipe[0])
            guard number > 0 else { return }
            handler(number)
        }
    }

    /// Stops watching: the thread hands on every signal already sent and ends, and the signals get their
    /// default effect back on the calling thread (the main thread), where they were blocked.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe[1], &byte, 1)
        pthread_join(thread, nil)
        while case let number = gk_signal_fd_wait(signalDescriptor, -1), number > 0 { handler(number) }
        for descriptor in [signalDescriptor] + stopPipe { close(descriptor) }
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals {
            signal(number, SIG_DFL)
            sigaddset(&set, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
