import Authentication
import GatekeeperSupport
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The bounded pool that PAM transactions and password checks run on.
@Suite(.timeLimit(.minutes(1)))
struct BlockingPoolTests {
    @Test(.timeLimit(.minutes(1)))
    func runsAtMostItsLimitAtOnceAndTheRestInLine() {
        let pool = BlockingPool(name: "test.pool", maxThreads: 3, maxIdle: 1)
        let running = Locked((now: 0, most: 0, done: 0))
        let gate = Locked(false)
        for _ in 0..<20 {
            pool.submit {
                running.update { state in
                    state.now += 1
                    state.most = max(state.most, state.now)
                }
                // Hold the thread until the test opens the gate, so the jobs pile up.
                while !gate.value { usleep(500) }
                running.update { state in
                    state.now -= 1
                    state.done += 1
                }
            }
        }
        #expect(eventually { running.value.now == 3 })
        #expect(pool.waitingCount == 17)
        gate.update { $0 = true }
        #expect(eventually { running.value.done == 20 })
        #expect(running.value.most == 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledCallerReturnsAtOnceAndItsWaitingJobNeverRuns() async {
        let pool = BlockingPool(name: "test.pool", maxThreads: 1, maxIdle: 1)
        let gate = Locked(false)
        let ran = Counter()
        // The only thread is busy until the gate opens.
        pool.submit { while !gate.value { usleep(500) } }
        let waiting = Task { await pool.run { ran.increment() } }
        #expect(await eventually { pool.waitingCount == 1 })
        waiting.cancel()
        #expect(await waiting.value == nil)
        gate.update { $0 = true }
        // A job queued after it runs, so the cancelled one has had its turn by then.
        #expect(await pool.run { 42 } == 42)
        #expect(ran.count == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func returnsTheResultAndReusesItsThreads() async {
        let pool = BlockingPool(name: "test.pool", maxThreads: 2, maxIdle: 2)
        for value in 0..<50 {
            #expect(await pool.run { value * 2 } == value * 2)
        }
    }
}
