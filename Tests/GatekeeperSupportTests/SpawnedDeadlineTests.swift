import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test helper that runs tools: a tool that hangs fails its test within the time given, killed with
/// whatever it started, instead of hanging the whole run.
@Suite(.timeLimit(.minutes(1)))
struct SpawnedDeadlineTests {
    @Test func aProcessStillRunningAtItsDeadlineIsKilledWithWhatItStarted() throws {
        let marker = "93\(Int.random(in: 100_000...999_999))"
        let started = ContinuousClock.now
        let process = try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", "sleep \(marker) & exec sleep \(marker)1"])
        let result = process.finish(timeout: .milliseconds(300))
        #expect(started.duration(to: .now) < .seconds(20))
        #expect(result.status == -1)
        #expect(result.stderr.contains("[killed: still running after"))
        usleep(100_000)
        let left = try run(URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", "sleep \(marker)"], input: "")
        #expect(left.stdout.isEmpty, "left running: \(left.stdout)")
    }

    @Test func aProcessThatEndsInTimeAnswersItsStatus() throws {
        let result = try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", "exit 7"]).finish(timeout: .seconds(10))
        #expect(result.status == 7)
    }
}
