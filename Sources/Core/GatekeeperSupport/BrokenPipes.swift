#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Keeps C libraries that write to sockets (libldap, PAM modules) from killing the host with SIGPIPE.
///
/// Writing to a connection the other end has closed raises SIGPIPE in the writing thread, and its default
/// action ends the process: a directory server restarting would take every tool that uses this package
/// down with it, unless the tool happens to ignore SIGPIPE. The package does not change the process's
/// dispositions (they belong to the tool); it blocks SIGPIPE in the threads where such writes happen,
/// so the write fails with EPIPE instead, which the libraries handle.
package enum BrokenPipes {
    /// Blocks SIGPIPE in the calling thread for good: for threads that only run the package's blocking
    /// C work (BlockingPools' `BlockingPool`'s). A SIGPIPE raised in such a thread stays pending there, harmlessly.
    package static func blockInThisThread() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Runs `body` with SIGPIPE blocked in the calling thread, discards a SIGPIPE that `body` raised, and
    /// restores the thread's mask: for writes that can happen on any thread (closing connections when
    /// an object is released).
    package static func suppressed<T>(_ body: () throws -> T) rethrows -> T {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &set, &previous)
        var pending = sigset_t()
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        defer {
            sigpending(&pending)
            if !alreadyPending && sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec(tv_sec: 0, tv_nsec: 0)
                while sigtimedwait(&set, nil, &now) == -1 && errno == EINTR {}
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        return try body()
    }
}
