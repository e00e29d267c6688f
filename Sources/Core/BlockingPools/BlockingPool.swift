import CProcessSpawn
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A bounded set of ordinary threads for blocking C work (PAM transactions, password hashing, LDAP
/// operations), apart from Swift's cooperative pool.
///
/// Backends run their blocking work that ends by itself on ``shared`` unless given a pool of their own
/// (`LDAPAuthProvider.Configuration.threads`, `OIDCAuthProvider.Configuration.threads`,
/// `PAMAuthProvider.Configuration.threads`, `FileAuthProvider.Configuration.threads`): give a service's backends one pool sized for the service, or give
/// a backend that may hang (a directory far away) a pool of its own so that it cannot hold up the rest.
///
/// At most `maxThreads` jobs run at once; later ones wait in line, first come first served, so a burst
/// of logins cannot start threads (or hash with gigabytes of memory) without limit. A job whose caller
/// stopped waiting before it started is dropped, never run (as swift-nio's `runIfActive` does).
///
/// A thread that finishes with no job waiting is kept for the next job of any pool, as long as fewer than
/// its pool's `maxIdle` threads are kept (one set for the process): pools bound the jobs they run, not
/// the threads they own. A login that looks its account up on ``shared`` and then runs its PAM
/// transaction on PAM's own pool makes one thread, not two (a first thread costs a process about 0.2 ms).
/// A pool whose work may change the thread it runs on — a PAM transaction's credentials, session keyring
/// or security context, a plugin's foreign code — keeps its threads to itself (`sharesThreads: false`):
/// it may take an idle thread of the others, which is then its own, and never hands one back. A pool that
/// keeps no idle thread (`maxIdle` 0) takes none of the others', whose next job would lose it.
public final class BlockingPool: Sendable {
    /// How many jobs may run at once.
    public let maxThreads: Int
    /// How many idle threads may be kept when one of this pool's jobs finishes.
    public let maxIdle: Int
    /// Whether the threads this pool finishes with may run other pools' jobs.
    public let sharesThreads: Bool
    /// What the pool is for, in messages.
    public let name: String
    private let state = Locked(State())

    private struct State {
        /// Jobs of this pool running now, each on a thread.
        var running = 0
        /// The idle threads of a pool that keeps its threads to itself.
        var ownIdle: [Worker] = []
        var waiting: [Job] = []
        var head = 0

        mutating func nextWaiting() -> Job? {
            while head < waiting.count {
                let job = waiting[head]
                head += 1
                if head == waiting.count {
                    waiting.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 64 && head * 2 >= waiting.count {
                    waiting.removeFirst(head)
                    head = 0
                }
                if !job.isAbandoned() { return job }
            }
            return nil
        }
    }

    /// - Parameters:
    ///   - name: What the pool is for.
    ///   - maxThreads: How many jobs may run at once.
    ///   - maxIdle: How many idle threads (of every pool, or of this one when it keeps its threads to
    ///     itself) may be kept for later jobs when one of this pool's finishes.
    ///   - sharesThreads: `false` for work that may change the thread it runs on (credentials, a session
    ///     keyring, a security context, foreign code): its threads then never run another pool's jobs.
    public init(name: String, maxThreads: Int, maxIdle: Int, sharesThreads: Bool = true) {
        precondition(maxThreads >= 1, "a pool needs a thread")
        self.name = name
        self.maxThreads = maxThreads
        self.maxIdle = min(maxIdle, maxThreads)
        self.sharesThreads = sharesThreads
    }

    /// The pool for blocking C work that ends on its own, with no person in the loop: account look-ups,
    /// LDAP operations, HTTP requests, reading files. At most 64 jobs at once, 4 threads kept.
    ///
    /// Work that can wait on a person or be held open keeps a pool of its own, so that it can never
    /// starve this one: PAM transactions (a prompt, a session held until sign-out), helper programs and
    /// shared-object plugins (their conversations), a plugin's answers to its host (a host that calls
    /// back into it from a thread of this pool would otherwise wait on itself), and password hashing,
    /// one check per processor: each its own pool (``ProcessPools``, where a host sizes or replaces them).
    public static var shared: BlockingPool { ProcessPools.pool(.shared) }

    /// The number of online processors, at least 1.
    package static var processorCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// How many threads wait for a job of any pool now.
    package static var idleThreadCount: Int { Worker.idleCount }

    /// How many idle threads this pool keeps to itself now (`sharesThreads: false`).
    package var ownIdleThreadCount: Int {
        state.withLock { $0.ownIdle.count }
    }

    /// How many jobs wait for a thread now.
    package var waitingCount: Int {
        state.withLock { $0.waiting.count - $0.head }
    }

    /// Runs `job` on a pool thread, now or when one is free.
    /// - Parameter isAbandoned: Asked just before the job would start; `true` drops it.
    package func submit(
        isAbandoned: @escaping @Sendable () -> Bool = { false },
        _ job: @escaping @Sendable () -> Void
    ) {
        let job = Job(isAbandoned: isAbandoned, body: job)
        enum Placement {
            case queued
            /// Runs now: on this pool's own idle thread if it has one.
            case runs(Worker?)
        }
        let placement = state.withLock { state -> Placement in
            guard state.running < maxThreads else {
                state.waiting.append(job)
                return .queued
            }
            state.running += 1
            return .runs(state.ownIdle.popLast())
        }
        guard case .runs(let own) = placement else { return }
        if let worker = own ?? (maxIdle > 0 ? Worker.takeIdle() : nil) {
            worker.assign(job, of: self)
        } else if !Worker.start(in: self, with: job) {
            // No thread could be made (out of resources): the job waits in line, for a running thread
            // to take it or for the next submission to try making a thread again.
            state.withLock { state in
                state.running -= 1
                state.waiting.append(job)
            }
        }
    }

    /// Runs blocking `work` on a pool thread and returns its result, or `nil` as soon as the task is
    /// cancelled: work not started yet is then dropped, and work already running finishes in the
    /// background with its result discarded. What a backend of its own calls a blocking C function with:
    ///
    /// ```swift
    /// guard let entry = await BlockingPool.shared.run({ lookUp(name) }) else { throw AuthError.cancelled }
    /// ```
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        await BlockingBridge<T>().run(on: self) { _ in work() }
    }

    /// Runs blocking `work` on a pool thread and returns its result once it has finished, cancelled or
    /// not: for work that must not be left half-way unknown to its caller (a write that, once begun, the
    /// caller must be able to report as done).
    package func runToTheEnd<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            submit { continuation.resume(returning: work()) }
        }
    }

    /// What a worker does after a job of this pool.
    fileprivate enum Next {
        /// Run this waiting job.
        case job(Job)
        /// Wait for this pool's next job: the worker is among its own idle threads.
        case parked
        /// Free for any pool's jobs, if the shared idle threads are fewer than `maxIdle`.
        case released
        /// End the thread.
        case exit
    }

    fileprivate func next(after worker: Worker) -> Next {
        state.withLock { state in
            if let job = state.nextWaiting() { return .job(job) }
            state.running -= 1
            if sharesThreads { return .released }
            guard state.ownIdle.count < maxIdle else { return .exit }
            state.ownIdle.append(worker)
            return .parked
        }
    }
}

/// A job and how to tell that nobody waits for it any more.
private struct Job: Sendable {
    let isAbandoned: @Sendable () -> Bool
    let body: @Sendable () -> Void
}

/// One pool thread, running the jobs of one pool at a time, and kept idle between pools.
private final class Worker: Sendable {
    private let wakeup = Signal()
    private let assigned = Locked<(job: Job, pool: BlockingPool)?>(nil)

    /// The threads waiting for a job, of every pool.
    private static let idle = Locked<[Worker]>([])

    static var idleCount: Int { idle.withLock { $0.count } }

    /// An idle thread, taken for a job, if there is one.
    static func takeIdle() -> Worker? {
        idle.withLock { $0.popLast() }
    }

    /// Starts a thread running `job` of `pool` first; `false` if the system refused a thread.
    static func start(in pool: BlockingPool, with job: Job) -> Bool {
        let worker = Worker()
        worker.assigned.withLock { $0 = (job, pool) }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(worker).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread,
            &attributes,
            { context in
                let worker = Unmanaged<Worker>.fromOpaque(context!).takeRetainedValue()
                worker.loop()
                return nil
            },
            context
        )
        if created != 0 {
            Unmanaged<Worker>.fromOpaque(context).release()
            return false
        }
        return true
    }

    func assign(_ job: Job, of pool: BlockingPool) {
        assigned.withLock { $0 = (job, pool) }
        wakeup.post()
    }

    private func loop() {
        // Pool threads run C libraries that write to sockets; a peer that went away must not end the host.
        BrokenPipes.blockInThisThread()
        guard var (job, pool) = assigned.withLock({ $0.take() }) else { return }
        while true {
            if !job.isAbandoned() { job.body() }
            switch pool.next(after: self) {
            case .job(let next):
                job = next
                continue
            case .parked:
                break
            case .exit:
                return
            case .released:
                // Kept while fewer than the finishing pool's `maxIdle` threads wait, else the thread ends.
                let parked = Self.idle.withLock { idle in
                    guard idle.count < pool.maxIdle else { return false }
                    idle.append(self)
                    return true
                }
                guard parked else { return }
            }
            wakeup.wait()
            guard let assignment = assigned.withLock({ $0.take() }) else { return }
            (job, pool) = assignment
        }
    }
}
