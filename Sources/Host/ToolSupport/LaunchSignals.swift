import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The signal mask and the ignored signals a process started with, so that a command it later `exec`s
/// gets what a shell would have given it.
///
/// `exec` keeps the calling thread's signal mask and every ignored signal. A Swift program usually
/// `exec`s from a worker thread, whose mask blocks nearly every signal, and it may have ignored SIGINT
/// while a login ran: a command started that way could not be stopped by Ctrl-C, `timeout` or a service
/// manager. Call ``record()`` first thing in `main`, and ``restoreForExec()`` on the thread that calls
/// `exec`, right before it.
public enum LaunchSignals {
    private struct Snapshot: Sendable {
        var mask: [UInt8]
        var ignored: [Int32]
    }

    private static let snapshot = Locked<Snapshot?>(nil)

    /// The signals a handler can be set for (everything but SIGKILL and SIGSTOP; numbers glibc keeps for
    /// itself are refused by `sigaction` and left alone).
    private static let catchable = (1..<65).filter { $0 != SIGKILL && $0 != SIGSTOP }.map { Int32($0) }

    /// Records the calling thread's signal mask and which signals are ignored. Call it on the main
    /// thread before anything changes them.
    public static func record() {
        var mask = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &mask)
        let ignored = catchable.filter { signal in
            var action = sigaction()
            guard sigaction(signal, nil, &action) == 0 else { return false }
            return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
                == unsafeBitCast(SIG_IGN, to: Int.self)
        }
        let bytes = withUnsafeBytes(of: mask) { Array($0) }
        snapshot.withLock { $0 = Snapshot(mask: bytes, ignored: ignored) }
    }

    /// Whether `signal` was ignored at launch (`nohup` ignores SIGHUP; a shell without job control
    /// ignores SIGINT in a background job): a tool leaves such a signal ignored rather than watch it.
    public static func wasIgnored(_ signal: Int32) -> Bool {
        snapshot.withLock { $0?.ignored.contains(signal) ?? false }
    }

    /// Gives every signal the disposition it had at launch (ignored, or the default: handlers set since
    /// are dropped) and the calling thread the mask it had; without ``record()``, the defaults and an
    /// empty mask. Call it right before `exec`, on the thread that calls it.
    public static func restoreForExec() {
        let recorded = snapshot.withLock { $0 } ?? Snapshot(mask: [], ignored: [])
        for signal in catchable {
            var action = sigaction()
            sigemptyset(&action.sa_mask)
            action.__sigaction_handler.sa_handler = recorded.ignored.contains(signal) ? SIG_IGN : SIG_DFL
            sigaction(signal, &action, nil)
        }
        var mask = sigset_t()
        sigemptyset(&mask)
        if recorded.mask.count == MemoryLayout<sigset_t>.size {
            withUnsafeMutableBytes(of: &mask) { $0.copyBytes(from: recorded.mask) }
        }
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }
}
