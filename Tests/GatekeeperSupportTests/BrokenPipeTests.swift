import Authentication
import BlockingPools
import GatekeeperSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// SIGPIPEs delivered while a test watches for them.
private let delivered = Atomic<Int>(0)

/// Writing to a connection whose other end is gone raises SIGPIPE, whose default action ends the
/// process: the package's C work (libldap, PAM modules) must get EPIPE instead, whatever the host's
/// signal settings. Each test unblocks SIGPIPE in its own thread first (threads inherit the mask, and
/// a test runner may have blocked it), and counts deliveries with a handler.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct BrokenPipeTests {
    /// Runs `body` with SIGPIPE counted and unblocked in this thread; restores both after.
    func watchingForSIGPIPE(_ body: () async -> Void) async {
        var handler = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in delivered.add(1, ordering: .relaxed) }
        sigemptyset(&handler.sa_mask)
        var previousAction = sigaction()
        sigaction(SIGPIPE, &handler, &previousAction)
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        var previousMask = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &pipeOnly, &previousMask)
        delivered.store(0, ordering: .relaxed)
        await body()
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        sigaction(SIGPIPE, &previousAction, nil)
    }

    /// A socket whose peer is closed: writing to it fails with EPIPE (after the first write, a reset).
    func brokenSocket() -> Int32 {
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        close(ends[1])
        return ends[0]
    }

    /// What writing to `socket` gives: the errno, or 0.
    func write(to socket: Int32) -> Int32 {
        let byte: [UInt8] = [1]
        return Glibc.write(socket, byte, 1) == 1 ? 0 : errno
    }

    @Test func theWatchSeesASIGPIPEWhenNothingBlocksIt() async {
        // The check of the check: without the package's protection, the write raises SIGPIPE.
        await watchingForSIGPIPE {
            let socket = brokenSocket()
            defer { close(socket) }
            #expect(write(to: socket) == EPIPE)
            #expect(delivered.load(ordering: .relaxed) == 1)
        }
    }

    @Test func aPoolThreadGetsEPIPENotSIGPIPE() async {
        await watchingForSIGPIPE {
            // A new pool: its thread is made now, from this thread, with SIGPIPE unblocked.
            let pool = BlockingPool(name: "test.pipes", maxThreads: 1, maxIdle: 1)
            let socket = brokenSocket()
            defer { close(socket) }
            let result = await pool.run { write(to: socket) }
            #expect(result == EPIPE)
            usleep(50_000)
            #expect(delivered.load(ordering: .relaxed) == 0, "SIGPIPE reached the process")
        }
    }

    @Test func suppressedDiscardsTheSIGPIPEAndRestoresTheMask() async {
        await watchingForSIGPIPE {
            let socket = brokenSocket()
            defer { close(socket) }
            let result = BrokenPipes.suppressed { write(to: socket) }
            #expect(result == EPIPE)
            #expect(delivered.load(ordering: .relaxed) == 0, "SIGPIPE reached the process")
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            #expect(sigismember(&mask, SIGPIPE) == 0, "the thread's mask was not restored")
            var pending = sigset_t()
            sigpending(&pending)
            #expect(sigismember(&pending, SIGPIPE) == 0, "a SIGPIPE was left pending")
        }
    }
}
