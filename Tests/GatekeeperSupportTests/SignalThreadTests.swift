import GatekeeperSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Signals reach a SignalThread's handler however they arrive: sent to the process (read from the
/// signalfd), sent to a thread that was running before and does not block them (handed on by the
/// handler), or pending on the watching thread when it stops. SIGUSR1 and SIGUSR2 stand for SIGINT and
/// SIGTERM, which would end the test runner once the watch is over.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SignalThreadTests {
    /// Waits up to five seconds for `received` to hold `count` numbers.
    static func wait(for received: Locked<[Int32]>, count: Int) -> [Int32] {
        for _ in 0..<500 {
            let now = received.withLock { $0 }
            if now.count >= count { return now }
            usleep(10_000)
        }
        return received.withLock { $0 }
    }

    @Test func aSignalToTheProcessOrToAnEarlierThreadReachesTheHandler() throws {
        // A thread started before the watch, not blocking the signals: it would take them with their
        // default effect, ending the process, were they not handed on.
        var earlier = pthread_t()
        let started = pthread_create(
            &earlier, nil,
            { _ in
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                sleep(2)
                return nil
            }, nil)
        try #require(started == 0)
        usleep(50_000)
        let received = Locked<[Int32]>([])
        let watch = try #require(
            SignalThread(signals: [SIGUSR1, SIGUSR2]) { number in
                received.withLock { $0.append(number) }
            })
        kill(getpid(), SIGUSR1)
        #expect(Self.wait(for: received, count: 1) == [SIGUSR1])
        pthread_kill(earlier, SIGUSR2)
        #expect(Self.wait(for: received, count: 2) == [SIGUSR1, SIGUSR2])
        // Pending on this thread, which blocks it, when the watch stops: handed on, not its default effect.
        pthread_kill(pthread_self(), SIGUSR1)
        watch.stop()
        #expect(received.withLock { $0 } == [SIGUSR1, SIGUSR2, SIGUSR1])
        pthread_join(earlier, nil)
        // Stopped: the default action is back (SIGUSR1's is to end the process, so it is only looked at).
        var action = sigaction()
        sigaction(SIGUSR1, nil, &action)
        #expect(
            unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_DFL, to: Int.self))
        var mask = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &mask)
        #expect(sigismember(&mask, SIGUSR1) == 0, "still blocked after the watch")
    }
}
