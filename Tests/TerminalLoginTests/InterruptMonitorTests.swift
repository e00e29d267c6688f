import Dispatch
import Glibc
import Testing

@testable import TerminalLogin

/// A signal sent the moment a monitor exists reaches it — as a tool's Ctrl-C right after its prompt —
/// and so does one sent to a monitor made after another was stopped. (SIGURG, ignored by default: a
/// signal this test fails to catch ends nothing.)
@Suite(.timeLimit(.minutes(1)), .serialized)
struct InterruptMonitorTests {
    private func caught(by monitor: (@escaping @Sendable (Int32) -> Void) -> InterruptMonitor) -> Bool {
        let arrived = DispatchSemaphore(value: 0)
        let watching = monitor { _ in arrived.signal() }
        defer { watching.stop() }
        // No pause: the monitor returns once the signal is watched.
        kill(getpid(), SIGURG)
        return arrived.wait(timeout: .now() + .seconds(5)) == .success
    }

    @Test func aSignalSentAtOnceIsCaughtAndSoIsOneAfterAStoppedMonitor() {
        for round in 0..<20 {
            #expect(caught { InterruptMonitor(signals: [SIGURG], onSignal: $0) }, "round \(round)")
        }
    }
}
