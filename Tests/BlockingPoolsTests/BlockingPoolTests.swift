import Authentication
import BlockingPools
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

    @Test(.timeLimit(.minutes(1)))
    func aThreadLeftIdleByOnePoolRunsAnothersJob() async {
        // Other tests' pools share the idle threads too, and may take the one parked here first: the
        // hand-over has to be seen once in twenty tries (never, when each pool keeps its own threads).
        let lookUps = BlockingPool(name: "test.look-ups", maxThreads: 4, maxIdle: 4)
        let transactions = BlockingPool(name: "test.transactions", maxThreads: 4, maxIdle: 4)
        var handedOver = false
        for _ in 0..<20 where !handedOver {
            let first = await lookUps.run { Self.threadID() }
            #expect(await eventually { BlockingPool.idleThreadCount > 0 })
            let second = await transactions.run { Self.threadID() }
            handedOver = first != nil && first != -1 && first == second
        }
        #expect(handedOver, "the second pool never ran on the thread the first had left idle")
    }

    @Test(.timeLimit(.minutes(1)))
    func aPoolKeepingNoIdleThreadLetsItsThreadEnd() async {
        let once = BlockingPool(name: "test.no-idle", maxThreads: 1, maxIdle: 0)
        let (thread, threadsBefore) = await once.run { (Self.threadID(), Self.threads()) } ?? (0, [])
        #expect(threadsBefore.contains(thread))
        // The thread ends once its job is done: no pool keeps it.
        #expect(await eventually { !Self.threads().contains(thread) })
    }

    @Test(.timeLimit(.minutes(1)))
    func aPoolKeepingItsThreadsNeverHandsOneToAnother() async {
        // A thread a PAM transaction may have changed (credentials, a session keyring) must never run a
        // job of another pool: it is parked for its own pool's next job, and only for that.
        let transactions = BlockingPool(name: "test.own", maxThreads: 1, maxIdle: 1, sharesThreads: false)
        let others = BlockingPool(name: "test.others", maxThreads: 4, maxIdle: 4)
        let own = await transactions.run { Self.threadID() }
        #expect(own != nil && own != -1)
        #expect(await eventually { transactions.ownIdleThreadCount == 1 })
        for _ in 0..<20 {
            let other = await others.run { Self.threadID() }
            #expect(other != own, "another pool ran on the thread a pool keeping its threads had finished with")
        }
        #expect(await transactions.run { Self.threadID() } == own)
    }

    @Test(.timeLimit(.minutes(1)))
    func aPoolKeepingNoIdleThreadTakesNoneOfTheOthers() async {
        // Its thread ends after the job: taking another pool's idle thread would end that one.
        let lookUps = BlockingPool(name: "test.look-ups", maxThreads: 4, maxIdle: 4)
        let reads = BlockingPool(name: "test.reads", maxThreads: 1, maxIdle: 0)
        for _ in 0..<5 {
            let parked = await lookUps.run { Self.threadID() }
            #expect(await eventually { BlockingPool.idleThreadCount > 0 })
            let read = await reads.run { Self.threadID() }
            #expect(read != nil && read != -1 && read != parked)
        }
    }

    /// The calling thread's id, from /proc/thread-self (PID/task/TID).
    private static func threadID() -> Int32 {
        var target = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &target, target.count - 1)
        guard length > 0 else { return -1 }
        let path = String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Int32(path.split(separator: "/").last ?? "") ?? -1
    }

    /// The ids of this process's threads now.
    private static func threads() -> Set<Int32> {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var found: Set<Int32> = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let id = Int32(name) { found.insert(id) }
        }
        return found
    }
}
