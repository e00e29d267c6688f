#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one bridge between blocking work — a call into a C library that may block, ask questions and
/// ignore cancellation — and the async task that wants its result.
///
/// The work runs on a thread of a ``ThreadPool``, never on the cooperative pool. The caller gets the
/// work's value, or `nil` as soon as its task is cancelled: the work is told (``onCancel(_:)``,
/// ``isCancelled``) and its late value is dropped. While it runs, the work may put questions to the async
/// world (``ask(_:)``): its thread blocks until the answer comes, or until the call is cancelled.
package final class BlockingBridge<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value?, Never>?
        var cancelled = false
        var delivered = false
        /// The question in progress, cancelled with the call.
        var pendingQuestion: Task<Void, Never>?
        var cancelHandlers: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    package init() {}

    /// Whether the caller stopped waiting.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `work` on `pool` and returns its value (or the one it ``deliver(_:)``s first), or `nil` as soon
    /// as the calling task is cancelled. Work cancelled before a thread took it never starts.
    package func run(on pool: ThreadPool, _ work: @escaping @Sendable (BlockingBridge<Value>) -> Value) async -> Value?
    {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let alreadyCancelled = state.withLock { state in
                    if state.cancelled { return true }
                    state.continuation = continuation
                    return false
                }
                if alreadyCancelled { return continuation.resume(returning: nil) }
                pool.submit(isAbandoned: { [self] in isCancelled }) { [self] in deliver(work(self)) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Hands `value` to the caller, if it still waits and nothing was delivered yet; the work may go on
    /// (a PAM session held open until sign-out). Returns whether the caller took it.
    @discardableResult
    package func deliver(_ value: Value) -> Bool {
        guard
            let continuation = state.withLock({ state -> CheckedContinuation<Value?, Never>? in
                guard !state.delivered else { return nil }
                state.delivered = true
                return state.continuation.take()
            })
        else { return false }
        continuation.resume(returning: value)
        return true
    }

    /// Calls `handler` when the call is cancelled (at once, on this thread, if it already is).
    package func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.cancelled { return true }
            state.cancelHandlers.append(handler)
            return false
        }
        if now { handler() }
    }

    /// From the work's thread: runs `question` as a task and blocks until it answers. `nil` when the call
    /// is cancelled before or while it is asked.
    package func ask<T: Sendable, E: Error>(_ question: @escaping @Sendable () async throws(E) -> T) -> Result<T, E>? {
        let answered = Signal()
        let answer = Locked<Result<T, E>?>(nil)
        let task = Task {
            do throws(E) {
                let value = try await question()
                answer.withLock { $0 = .success(value) }
            } catch {
                answer.withLock { $0 = .failure(error) }
            }
            answered.post()
        }
        let proceed = state.withLock { state in
            guard !state.cancelled else { return false }
            state.pendingQuestion = task
            return true
        }
        if !proceed { task.cancel() }
        answered.wait()
        return state.withLock { state in
            state.pendingQuestion = nil
            return state.cancelled ? nil : answer.withLock { $0 }
        }
    }

    private func cancel() {
        let (continuation, question, handlers) = state.withLock { state in
            state.cancelled = true
            let handlers = state.cancelHandlers
            state.cancelHandlers = []
            return (state.delivered ? nil : state.continuation.take(), state.pendingQuestion, handlers)
        }
        question?.cancel()
        for handler in handlers { handler() }
        continuation?.resume(returning: nil)
    }
}

/// A semaphore a blocked thread waits on until a task posts it (a POSIX `sem_t`, kept at a stable address).
package final class Signal: @unchecked Sendable {
    private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    package init() { sem_init(semaphore, 0, 0) }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    package func post() { sem_post(semaphore) }

    package func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }
}
