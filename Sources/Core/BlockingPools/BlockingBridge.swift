import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one bridge between blocking work — a call into a C library that may block, ask questions and
/// ignore cancellation — and the async task that wants its result.
///
/// The work runs on a thread of a ``BlockingPool``, never on the cooperative pool. The caller gets the
/// work's value, or `nil` as soon as its task is cancelled: the work is told (``onCancel(_:)``,
/// ``isCancelled``) and its late value is dropped. While it runs, the work may put questions to the async
/// world (``ask(_:)``): its thread blocks until the answer comes, or until the call is cancelled.
package final class BlockingBridge<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, Never>?
        /// The delivered value, until the caller takes it.
        var value: Value?
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
    package func run(on pool: BlockingPool, _ work: @escaping @Sendable (BlockingBridge<Value>) -> Value) async
        -> Value?
    {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let alreadyCancelled = state.withLock { state in
                    if state.cancelled { return true }
                    state.continuation = continuation
                    return false
                }
                if alreadyCancelled { return continuation.resume() }
                pool.submit(isAbandoned: { [self] in isCancelled }) { [self] in deliver(work(self)) }
            }
        } onCancel: {
            cancel()
        }
        // The value crosses from the work's thread under the bridge's lock, not through the continuation:
        // ThreadSanitizer follows the lock (see `Locked`), where it does not see the runtime's hand-over.
        return state.withLock { $0.value.take() }
    }

    /// Hands `value` to the caller, if it still waits and nothing was delivered yet; the work may go on
    /// (a PAM session held open until sign-out). Returns whether the caller took it.
    @discardableResult
    package func deliver(_ value: Value) -> Bool {
        guard
            let continuation = state.withLock({ state -> CheckedContinuation<Void, Never>? in
                guard !state.delivered, let continuation = state.continuation.take() else { return nil }
                state.delivered = true
                state.value = value
                return continuation
            })
        else { return false }
        continuation.resume()
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
    ///
    /// The question's task prefers this thread as its executor, and the thread runs that task's jobs while
    /// it waits: a conversation that answers without waiting on anything else (a script, a helper's
    /// fixed credentials) is asked and answered right here, with no thread woken and no handoff; one that
    /// waits elsewhere (a terminal, an actor) comes back to this thread when it resumes.
    package func ask<T: Sendable, E: Error>(_ question: @escaping @Sendable () async throws(E) -> T) -> Result<T, E>? {
        let answer = ThreadExecutor.run(question) { task in
            let proceed = state.withLock { state in
                guard !state.cancelled else { return false }
                state.pendingQuestion = task
                return true
            }
            if !proceed { task.cancel() }
        }
        return state.withLock { state in
            state.pendingQuestion = nil
            return state.cancelled ? nil : answer
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
        continuation?.resume()
    }
}

/// An executor that is a thread lent to it: ``run(_:started:)`` starts a task preferring it, and the
/// calling thread runs the jobs of every task that prefers this executor until that task has returned.
///
/// A blocked work thread asks its questions this way (``BlockingBridge/ask(_:)``), and a one-shot tool
/// runs its whole login on its main thread this way, as swift-nio's `withCurrentThreadAsEventLoop` lends
/// a thread to an event loop: no thread of Swift's global pool starts for work that only waits on others.
/// Code isolated to an actor still runs on that actor's executor; nonisolated code, child tasks and tasks
/// made with this executor as their preference run here. Jobs that arrive between runs wait for the next.
/// Lent by the main thread, it leaves Dispatch's main queue undrained: code isolated to the main actor
/// waits until the run is over, so work run this way must not wait on the main actor.
package final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Locked<(queue: [UnownedJob], finished: Bool)>(([], false))
    private let arrived = Signal()

    package init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.queue.append(job) }
        arrived.post()
    }

    /// Runs `body` as a task on a new executor of the calling thread, and blocks until it has returned.
    package static func run<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () async throws(E) -> T,
        started: (Task<Void, Never>) -> Void = { _ in }
    ) -> Result<T, E> {
        ThreadExecutor().run(body, started: started)
    }

    /// Runs `body` as a task preferring this executor, running jobs on the calling thread until it has
    /// returned. `started` gets the task before its first job runs (to cancel it from elsewhere). One run
    /// at a time.
    package func run<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () async throws(E) -> T,
        started: (Task<Void, Never>) -> Void = { _ in }
    ) -> Result<T, E> {
        jobs.withLock { $0.finished = false }
        let result = Locked<Result<T, E>?>(nil)
        let task = Task(executorPreference: self) {
            do throws(E) {
                let value = try await body()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            self.finish()
        }
        started(task)
        runUntilFinished()
        return result.withLock { $0! }
    }

    /// Called by the run's task as its last step.
    private func finish() {
        jobs.withLock { $0.finished = true }
        arrived.post()
    }

    /// Runs jobs on this thread until the run's task has finished.
    private func runUntilFinished() {
        while true {
            let (next, finished) = jobs.withLock { state -> ([UnownedJob], Bool) in
                defer { state.queue.removeAll(keepingCapacity: true) }
                return (state.queue, state.finished)
            }
            for job in next { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if finished && next.isEmpty { return }
            if next.isEmpty { arrived.wait() }
        }
    }
}

/// A semaphore a blocked thread waits on until another thread or a task posts it (a POSIX `sem_t`, kept
/// at a stable address).
///
/// Waiters sleep at once. Spinning first (50 µs) saved about 10 µs of a sequential PAM login, but cut the
/// throughput of 16 LDAP logins at once on two cores from 0.88 to 0.69 of raw libldap's (`make bench`):
/// the spinning threads took the processor from the ones with work.
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
