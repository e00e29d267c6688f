#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A value reachable only under a lock: `Synchronization.Mutex`'s interface over a POSIX mutex, which is
/// what every shared state of this package is kept behind.
///
/// Why not `Mutex` itself: on Linux a contended `Mutex` passes from thread to thread through the kernel
/// (`FUTEX_LOCK_PI` and `FUTEX_UNLOCK_PI`, issued by `_lockSlow` and `_unlockSlow` in
/// libswiftSynchronization.so, which is not instrumented). ThreadSanitizer never sees that hand-over, so
/// for it two critical sections that met on the lock are unordered, and it reports every access in them
/// as a data race — a false report that buries real ones. It intercepts `pthread_mutex_lock` and
/// `pthread_mutex_unlock`, so behind this lock `make sanitize` runs the concurrent tests under
/// ThreadSanitizer with nothing suppressed. Uncontended, both locks are one atomic compare-and-swap; the
/// gatekeeper's signed-in fast path is measured against a bare `Mutex` by `make bench`.
///
/// `@unchecked Sendable`: `value` is only read or written between `pthread_mutex_lock` and
/// `pthread_mutex_unlock` on a mutex at a fixed address, and `init` takes it `sending`, as `Mutex` does.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    package init(_ value: consuming sending Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        // A default mutex: no error checking, not recursive. It cannot fail on glibc.
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held; as `Mutex.withLock`, `body` must not take this lock again.
    @inline(__always)
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked where Value: Sendable {
    /// A copy of the value as it is now.
    package var value: Value { withLock { $0 } }

    /// Changes the value under the lock and returns what `body` returns.
    @discardableResult
    package func update<T>(_ body: (inout Value) -> T) -> T {
        withLock { value in
            var copy = value
            defer { value = copy }
            return body(&copy)
        }
    }
}
