import GatekeeperSupport
import Synchronization

#if canImport(Glibc)
    public import Glibc
#elseif canImport(Musl)
    public import Musl
#endif

/// Puts a terminal back as it was when a signal ends the process while its settings are changed (echo
/// off at a password prompt, raw mode, a spinner hiding keys).
///
/// While settings are changed through ``change(_:on:)``, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE restore
/// the saved settings and then end the process by the same signal (as `pkttyagent` does), so the shell
/// gets its terminal back with echo on, and the parent still sees how the process died. Signals that
/// were ignored, or that the host tool handles itself, are left alone.
public enum TerminalRestoration {
    /// The signals that end a process by default and may arrive while a prompt waits.
    static let fatalSignals: [Int32] = [SIGTERM, SIGHUP, SIGQUIT, SIGPIPE]

    /// Bookkeeping, touched only outside signal handlers.
    private static let changes = Locked<(depth: Int, installed: Bool)>((0, false))

    /// Changes the settings of the terminal on `descriptor` with `modify`, remembering the old ones for
    /// the signal handlers until ``restore(_:on:)``.
    /// - Returns: the settings to restore, or `nil` when `descriptor` is not a terminal.
    public static func change(_ modify: (inout termios) -> Void, on descriptor: Int32) -> termios? {
        var saved = termios()
        guard tcgetattr(descriptor, &saved) == 0 else { return nil }
        var changed = saved
        modify(&changed)
        changes.withLock { state in
            if !state.installed {
                installHandlers()
                state.installed = true
            }
            // The first change of a nesting holds the settings to go back to.
            if state.depth == 0 {
                Saved.settings.pointee = saved
                Saved.descriptor.store(descriptor, ordering: .releasing)
            }
            state.depth += 1
        }
        tcsetattr(descriptor, TCSANOW, &changed)
        return saved
    }

    /// Puts back `saved` (from ``change(_:on:)``).
    public static func restore(_ saved: termios, on descriptor: Int32) {
        var saved = saved
        tcsetattr(descriptor, TCSANOW, &saved)
        changes.withLock { state in
            state.depth = max(0, state.depth - 1)
            if state.depth == 0 { Saved.descriptor.store(-1, ordering: .releasing) }
        }
    }

    /// Puts back the settings of a change still in effect, for a tool about to exit: a prompt whose
    /// reader, on a thread of its own, has not returned yet when a signal ends the login would otherwise
    /// leave the shell a terminal with echo off.
    public static func restoreBeforeExit() {
        changes.withLock { state in
            let descriptor = Saved.descriptor.load(ordering: .acquiring)
            if state.depth > 0 && descriptor >= 0 { tcsetattr(descriptor, TCSANOW, Saved.settings) }
        }
    }

    private static func installHandlers() {
        _ = Saved.settings  // Initialised here, never first inside a handler.
        for signal in fatalSignals {
            var current = sigaction()
            guard sigaction(signal, nil, &current) == 0,
                unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
                    == unsafeBitCast(SIG_DFL, to: Int.self)
            else { continue }
            var action = sigaction()
            sigemptyset(&action.sa_mask)
            action.sa_flags = Int32(bitPattern: UInt32(SA_RESETHAND))
            action.__sigaction_handler.sa_handler = { signal in
                // Async-signal-safe: an atomic load, tcsetattr, and raise.
                let descriptor = Saved.descriptor.load(ordering: .acquiring)
                if descriptor >= 0 { tcsetattr(descriptor, TCSANOW, Saved.settings) }
                // SA_RESETHAND made the disposition the default again: die by the same signal.
                raise(signal)
            }
            sigaction(signal, &action, nil)
        }
    }

    /// What the handlers read: a descriptor (-1 for none) and settings at a fixed address.
    private enum Saved {
        static let descriptor = Atomic<Int32>(-1)
        nonisolated(unsafe) static let settings = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    }
}
