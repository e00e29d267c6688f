import Dispatch
import Foundation
import Synchronization

/// The threads PAM transactions run on, outside Swift's cooperative pool.
///
/// Each transaction runs from `pam_start` to `pam_end` on one thread. A thread that finishes is kept for
/// the next transaction (up to `maxIdle` of them), and a new one is started whenever all are busy, so a
/// transaction sleeping in a fail delay never holds up another. Starting a thread costs about as much as
/// a `pam_matrix` login, hence the reuse.
final class PAMThreads: Sendable {
    static let shared = PAMThreads(maxIdle: 4)

    private let maxIdle: Int
    private let idle = Mutex<[Worker]>([])

    init(maxIdle: Int) {
        self.maxIdle = maxIdle
    }

    /// Runs `job` on a thread of its own.
    func run(_ job: @escaping @Sendable () -> Void) {
        let worker = idle.withLock { $0.popLast() } ?? Worker(pool: self)
        worker.assign(job)
    }

    /// A worker finished its job; returns whether it should wait for another.
    fileprivate func keep(_ worker: Worker) -> Bool {
        idle.withLock { idle in
            guard idle.count < maxIdle else { return false }
            idle.append(worker)
            return true
        }
    }

    /// One thread and the job it is given.
    ///
    /// `@unchecked Sendable`: `job` is behind a mutex; the semaphore is thread-safe.
    fileprivate final class Worker: @unchecked Sendable {
        private let ready = DispatchSemaphore(value: 0)
        private let job = Mutex<(@Sendable () -> Void)?>(nil)

        init(pool: PAMThreads) {
            let thread = Thread { [self] in
                repeat {
                    ready.wait()
                    job.withLock { $0.take() }?()
                } while pool.keep(self)
            }
            thread.name = "gatekeeper.pam"
            thread.start()
        }

        func assign(_ work: @escaping @Sendable () -> Void) {
            job.withLock { $0 = work }
            ready.signal()
        }
    }
}
