#if GATEKEEPER_TSAN
    #if canImport(Glibc)
        public import Glibc
    #elseif canImport(Musl)
        public import Musl
    #endif
#else
    public import Synchronization
#endif

/// A value reachable only under a lock, which every shared state of this package is kept behind:
/// `Synchronization.Mutex`, or — built with `GATEKEEPER_TSAN` (`-Xswiftc -DGATEKEEPER_TSAN`, as
/// `make sanitize-thread` does) — a POSIX mutex with the same interface.
///
/// Why two: on Linux a contended `Mutex` passes from thread to thread through the kernel
/// (`FUTEX_LOCK_PI` and `FUTEX_UNLOCK_PI`, issued by `_lockSlow` and `_unlockSlow` in
/// libswiftSynchronization.so, which is not instrumented). ThreadSanitizer never sees that hand-over, so
/// for it two critical sections that met on the lock are unordered, and it reports every access in them
/// as a data race — false reports that bury real ones. It intercepts `pthread_mutex_lock` and
/// `pthread_mutex_unlock`, so with the POSIX mutex it checks this package with nothing suppressed. Built
/// as usual, `Mutex` stays: its uncontended lock and unlock are inlined atomics, where the POSIX ones are
/// calls (with them, the gatekeeper's signed-in fast path measured 142 ns where it measures 125 ns with
/// `Mutex`, and 16 LDAP logins at once ran slower; `make bench`).
///
/// `public`, in a module no product exports, rather than `package`: the Swift 6.3 optimiser does not
/// specialise a `package` `@inlinable` generic in another module, so every `withLock` was a call through
/// generic metadata (the signed-in fast path measured 155 ns; public, 131 ns).
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    #if GATEKEEPER_TSAN
        @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        @usableFromInline var guarded: Value

        public init(_ value: consuming sending Value) {
            guarded = value
            mutex.initialize(to: pthread_mutex_t())
            // A default mutex: no error checking, not recursive. It cannot fail on glibc.
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed: \(status)")
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        /// Runs `body` with the value, the lock held; `body` must not take this lock again.
        @inlinable
        public func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&guarded)
        }
    #else
        // The lock guards no value of its own: a `Mutex<Value>` made the runtime build the metadata of
        // `Mutex<Value>` and of its cell for every `Value`, about a twentieth of the instructions a host
        // tool's login runs. The value is only ever reached with the lock held, so its exclusivity needs
        // no check at run time.
        @usableFromInline let mutex = Mutex(())
        @exclusivity(unchecked) @usableFromInline var guarded: Value

        public init(_ value: consuming sending Value) { guarded = value }

        /// Runs `body` with the value, the lock held; `body` must not take this lock again.
        @inlinable @inline(__always)
        public func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            try mutex.withLock { _ throws(E) -> sending Result in try body(&guarded) }
        }
    #endif
}

extension Locked where Value: Sendable {
    /// A copy of the value as it is now.
    @inlinable public var value: Value { withLock { $0 } }

    /// Changes the value under the lock and returns what `body` returns.
    @inlinable @discardableResult
    public func update<T>(_ body: (inout Value) -> T) -> T {
        withLock { value in
            var copy = value
            defer { value = copy }
            return body(&copy)
        }
    }
}
