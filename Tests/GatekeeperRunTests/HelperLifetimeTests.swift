import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Medium 9: nothing a helper starts outlives gatekeeper-run — not the helper, not its children, not a
/// child that left the helper's process group with `setsid` — whether a signal ends the tool or the
/// login ends by itself.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HelperLifetimeTests {
    /// Helper programs must live where nobody else can write (not under /tmp).
    let directory: String

    init() throws { directory = try trustedDirectory() }

    /// A checkpassword program that starts a child, a child in a session of its own, and then never
    /// answers. Each sleeps for a time no other process on the machine uses: the marker.
    func hangingHelper(_ marker: String) throws -> String {
        let path = directory + "/hanging-checkpassword"
        try """
        #!/bin/sh
        sleep \(marker)1 &
        setsid sleep \(marker)2 &
        exec sleep \(marker)3

        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    /// The pids of live processes whose command line holds `marker`.
    static func processes(holding marker: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: bytes.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self).contains(marker)
        }
    }

    func waitForAll(_ marker: String, count: Int) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if Self.processes(holding: marker).count >= count { return true }
            usleep(20_000)
        }
        return false
    }

    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aSignalStopsEveryHelperBeforeTheToolExits(_ signal: Int32) throws {
        let marker = "97\(Int.random(in: 100_000...999_999))."
        let helper = try hangingHelper(marker)
        let tool = try Spawned(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "checkpassword", "--program", helper, "--timeout", "60", "--user", "alice",
                "--password-stdin", "--", "true",
            ])
        tool.write("wonderland\n")
        #expect(waitForAll(marker, count: 3), "the helper and its children did not start")
        tool.send(signal)
        let result = tool.finish()
        #expect(result.status == 128 + signal || (signal == SIGINT && result.status == 130), "\(result.stderr)")
        let left = Self.processes(holding: marker)
        #expect(left.isEmpty, "left running after the tool exited: \(left)")
        for pid in left { kill(pid, SIGKILL) }
    }

    /// The helper's time limit ends the login: its children go with it, the escapee included.
    @Test func aHelperThatTimesOutTakesEverythingItStartedWithIt() throws {
        let marker = "98\(Int.random(in: 100_000...999_999))."
        let helper = try hangingHelper(marker)
        let result = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "checkpassword", "--program", helper, "--timeout", "1", "--user", "alice",
                "--password-stdin", "--", "true",
            ],
            input: "wonderland\n")
        // The helper ran and was stopped at its time limit: the provider is unavailable (69).
        #expect(result.status == 69 && result.stderr.contains("took longer than"), "\(result.stderr)")
        let left = Self.processes(holding: marker)
        #expect(left.isEmpty, "left running after the tool exited: \(left)")
        for pid in left { kill(pid, SIGKILL) }
    }
}
