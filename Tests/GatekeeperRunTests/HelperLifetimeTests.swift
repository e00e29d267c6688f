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
        try writeHelper(
            "hanging-checkpassword", in: directory,
            "sleep \(marker)1 &\nsetsid sleep \(marker)2 &\nexec sleep \(marker)3")
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

    /// A state directory of the test's own, so the logins it cancels count against no one else's.
    func stateDirectory() throws -> String { try makeStateDirectory(in: directory) }

    /// A helper program at `name` with `body` after `#!/bin/sh`.
    func helper(_ name: String, _ body: String) throws -> String { try writeHelper(name, in: directory, body) }

    /// A signal that comes once the login has admitted, while the tool stops what the helper left before
    /// it execs (here a child that ignores SIGTERM, which takes a second), ends the tool: the command
    /// never starts.
    @Test func aSignalBeforeTheExecKeepsTheCommandFromStarting() throws {
        let marker = "94\(Int.random(in: 100_000...999_999))"
        let ran = directory + "/ran-\(marker)"
        // The child leaves the helper's process group and its descriptors, so the helper's own end does
        // not wait for it: only the tool, its reaper, stops it, right before the exec.
        // It answers once the child is on its own and ignores SIGTERM.
        let ready = directory + "/ready-\(marker)"
        let helper = try helper(
            "escaping-checkpassword",
            """
            setsid sh -c "trap '' TERM; touch \(ready); exec sleep \(marker)" </dev/null >/dev/null 2>&1 3>&- 4>&- &
            while [ ! -e \(ready) ]; do sleep 0.01; done
            exit 0
            """)
        defer { unlink(ready) }
        let tool = try Spawned(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "checkpassword", "--program", helper, "--state-dir", try stateDirectory(),
                "--user", "alice", "--password-stdin", "--", "/bin/sh", "-c", "touch \(ran)",
            ])
        tool.write("wonderland\n")
        #expect(waitForAll(marker, count: 1), "the helper's child did not start")
        usleep(200_000)
        tool.send(SIGTERM)
        let result = tool.finish()
        #expect(result.status == 128 + SIGTERM, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ran), "the command ran after the signal")
        unlink(ran)
        for pid in Self.processes(holding: marker) { kill(pid, SIGKILL) }
    }

    /// Ctrl-C twice: the second comes while the tool stops a helper that ignores SIGTERM, and is only
    /// handed on — the tool still stops the helper before it exits.
    @Test func aSecondSignalWhileHelpersAreStoppedLeavesNoneRunning() throws {
        let marker = "95\(Int.random(in: 100_000...999_999))"
        let helper = try helper("stubborn-checkpassword", "trap '' TERM\nexec sleep \(marker)")
        let tool = try Spawned(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "checkpassword", "--program", helper, "--timeout", "60", "--state-dir",
                try stateDirectory(), "--user", "alice", "--password-stdin", "--", "true",
            ])
        tool.write("wonderland\n")
        #expect(waitForAll(marker, count: 1), "the helper did not start")
        tool.send(SIGINT)
        usleep(300_000)
        tool.send(SIGINT)
        tool.send(SIGTERM)
        let result = tool.finish()
        #expect(result.status == 130, "\(result.stderr)")
        let left = Self.processes(holding: marker)
        #expect(left.isEmpty, "left running after the tool exited: \(left)")
        for pid in left { kill(pid, SIGKILL) }
    }

    /// A signal ignored when the tool started (`nohup`'s SIGHUP) stays ignored: the login goes on and the
    /// command runs, with the signal still ignored.
    @Test func aSignalIgnoredAtLaunchStaysIgnored() throws {
        let marker = "96\(Int.random(in: 100_000...999_999))"
        let helper = try helper("slow-checkpassword", "sleep 1.\(marker)\nexit 0")
        let tool = try Spawned(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c",
                "trap '' HUP; exec \"$0\" \"$@\"", builtExecutable("gatekeeper-run").path, "--provider",
                "checkpassword",
                "--program", helper, "--state-dir", try stateDirectory(), "--user", "alice", "--password-stdin", "--",
                "/bin/sh", "-c",
                "grep SigIgn /proc/self/status",
            ])
        tool.write("wonderland\n")
        #expect(waitForAll("sleep 1.\(marker)", count: 1), "the helper did not start")
        tool.send(SIGHUP)
        let result = tool.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let ignored = result.stdout.split(separator: "\t").last.flatMap {
            UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16)
        }
        #expect(ignored.map { $0 & 1 == 1 } == true, "SIGHUP is not ignored in the command: \(result.stdout)")
    }
}
