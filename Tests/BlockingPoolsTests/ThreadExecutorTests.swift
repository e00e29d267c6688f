import Authentication
import BlockingPools
import GatekeeperSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A thread lent to a task as its executor runs all of that task's work — its child tasks, and other
/// tasks made to prefer the executor — and nothing else runs it: no thread of Swift's pool is needed.
@Suite(.timeLimit(.minutes(1)))
struct ThreadExecutorTests {
    /// The calling thread's id, comparable across threads.
    static func currentThread() -> UInt { UInt(bitPattern: Int(pthread_self())) }

    @Test func everyJobOfARunRunsOnTheCallingThread() {
        let caller = Self.currentThread()
        let executor = ThreadExecutor()
        let seen = Locked<[UInt]>([])
        let result = executor.run { () async -> Int in
            seen.withLock { $0.append(Self.currentThread()) }
            // A child task, a task made to prefer the executor (as the Gatekeeper's own login is), and a
            // wait on work another thread finishes.
            async let child = { () async -> Int in
                seen.withLock { $0.append(Self.currentThread()) }
                return 1
            }()
            let other = Task(executorPreference: executor) { () async -> Int in
                seen.withLock { $0.append(Self.currentThread()) }
                return 2
            }
            let pool = BlockingPool(name: "test", maxThreads: 1, maxIdle: 0)
            let fromPool = await pool.run { Self.currentThread() } ?? 0
            seen.withLock { $0.append(Self.currentThread()) }
            return await child + other.value + (fromPool == caller ? 100 : 0)
        }
        #expect(result == .success(3), "the pool's thread was the caller's, or a task failed")
        let threads = seen.withLock { $0 }
        #expect(threads.count == 4)
        #expect(threads.allSatisfy { $0 == caller }, "a job ran on another thread")
    }

    /// A sleep (a login's fail delay) comes back to the thread.
    @Test func aSleepingTaskWakesOnTheCallingThread() {
        let caller = Self.currentThread()
        let result = ThreadExecutor.run { () async -> UInt in
            try? await Task.sleep(for: .milliseconds(20))
            return Self.currentThread()
        }
        #expect(result == .success(caller))
    }

    @Test func aRunReturnsWhatItsTaskThrows() {
        struct Refused: Error, Equatable {}
        let result = ThreadExecutor.run { () async throws(Refused) -> Int in throw Refused() }
        #expect(result == .failure(Refused()))
    }

    /// The task is handed out before it runs, so that a signal can cancel it from another thread; a task
    /// cancelled before its first job sees it.
    @Test func theStartedTaskCanBeCancelledFromElsewhere() {
        let result = ThreadExecutor.run { () async -> Bool in
            Task.isCancelled
        } started: { task in
            task.cancel()
        }
        #expect(result == .success(true))
    }

    /// One executor serves one run after another (a tool's account lookup, then its login).
    @Test func anExecutorServesRunAfterRun() {
        let executor = ThreadExecutor()
        for round in 0..<3 {
            #expect(
                executor.run { () async -> Int in
                    await Task.yield(); return round
                } == .success(round))
        }
    }
}
