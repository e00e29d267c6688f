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
/// (`LDAPConfiguration.threads`, `OIDCConfiguration.threads`, `PAMAuthProvider.Configuration.threads`,
/// `FileAuthProvider`'s `threads:`): give a service's backends one pool sized for the service, or give
/// a backend that may hang (a directory far away) a pool of its own so that it cannot hold up the rest.
///
/// At most `maxThreads` jobs run at once; later ones wait in line, first come first served, so a burst
/// of logins cannot start threads (or hash with gigabytes of memory) without limit. A thread that
/// finishes is kept for the next job, up to `maxIdle` of them. A job whose caller stopped waiting before
/// it started is dropped, never run (as swift-nio's `runIfActive` does).
public final class BlockingPool: Sendable {
    /// How many jobs may run at once.
    public let maxThreads: Int
    private let maxIdle: Int
    /// What the pool is for, in messages.
    public let name: String
    private let state = Locked(State())

    private struct State {
        var threads = 0
        var idle: [Worker] = []
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
    ///   - maxIdle: How many finished threads are kept for later jobs.
    public init(name: String, maxThreads: Int, maxIdle: Int) {
        precondition(maxThreads >= 1, "a pool needs a thread")
        self.name = name
        self.maxThreads = maxThreads
        self.maxIdle = min(maxIdle, maxThreads)
    }

    /// The pool for blocking C work that ends on its own, with no person in the loop: account look-ups,
    /// LDAP operations, HTTP requests, reading files. At most 64 jobs at once, 4 threads kept.
    ///
    /// Work that can wait on a person or be held open keeps a pool of its own, so that it can never
    /// starve this one: PAM transactions (a prompt, a session held until sign-out), helper programs and
    /// shared-object plugins (their conversations), a plugin's answers to its host (a host that calls
    /// back into it from a thread of this pool would otherwise wait on itself), and password hashing,
    /// one check per processor (`PasswordHash.checks`).
    public static let shared = BlockingPool(name: "gatekeeper.blocking", maxThreads: 64, maxIdle: 4)

    /// The number of online processors, at least 1.
    package static var processorCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
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
            case worker(Worker)
            case newThread
            case queued
        }
        let placement = state.withLock { state -> Placement in
            if let worker = state.idle.popLast() { return .worker(worker) }
            if state.threads < maxThreads {
                state.threads += 1
                return .newThread
            }
            state.waiting.append(job)
            return .queued
        }
        switch placement {
        case .worker(let worker):
            worker.assign(job)
        case .newThread:
            if !Worker.start(in: self, with: job) {
                // No thread could be made (out of resources): the job waits in line, for a running
                // thread to take it or for the next submission to try making a thread again.
                state.withLock { state in
                    state.threads -= 1
                    state.waiting.append(job)
                }
            }
        case .queued:
            break
        }
    }

    /// Runs blocking `work` on a pool thread and returns its result, or `nil` as soon as the task is
    /// cancelled: work not started yet is then dropped, and work already running finishes in the
    /// background with its result discarded.
    package func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
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

    /// What a worker does after a job: the next waiting job, or `nil` to park (`true`) or exit (`false`).
    fileprivate func next(after worker: Worker) -> (Job?, park: Bool) {
        state.withLock { state in
            if let job = state.nextWaiting() { return (job, false) }
            if state.idle.count < maxIdle {
                state.idle.append(worker)
                return (nil, true)
            }
            state.threads -= 1
            return (nil, false)
        }
    }
}

/// A job and how to tell that nobody waits for it any more.
private struct Job: Sendable {
    let isAbandoned: @Sendable () -> Bool
    let body: @Sendable () -> Void
}

/// One pool thread.
private final class Worker: Sendable {
    private let pool: BlockingPool
    private let wakeup = Signal()
    private let assigned = Locked<Job?>(nil)

    private init(pool: BlockingPool) {
        self.pool = pool
    }

    /// Starts a thread running `job` first; `false` if the system refused a thread.
    static func start(in pool: BlockingPool, with job: Job) -> Bool {
        let worker = Worker(pool: pool)
        worker.assigned.withLock { $0 = job }
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

    func assign(_ job: Job) {
        assigned.withLock { $0 = job }
        wakeup.post()
    }

    private func loop() {
        // Pool threads run C libraries that write to sockets; a peer that went away must not end the host.
        BrokenPipes.blockInThisThread()
        var job = assigned.withLock { $0.take() }
        while true {
            if let current = job, !current.isAbandoned() { current.body() }
            let (next, park) = pool.next(after: self)
            if let next {
                job = next
                continue
            }
            guard park else { return }
            wakeup.wait()
            job = assigned.withLock { $0.take() }
        }
    }
}
