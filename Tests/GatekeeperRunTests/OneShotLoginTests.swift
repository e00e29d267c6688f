import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// gatekeeper-run runs its login on its main thread, lent to the login's tasks as their executor, with
/// one thread of its own for signals: while a backend works, the process holds that thread and the
/// backend's, and no thread of Swift's pool or of Dispatch (whose threads are named `…-qos…`).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct OneShotLoginTests {
    /// Helper programs must live where nobody else can write (not under /tmp).
    let directory: String

    init() throws { directory = try trustedDirectory() }

    /// With the password on standard input, and asked by a prompt (read line by line without a terminal,
    /// on the conversation's reading thread).
    @Test(arguments: [true, false])
    func aLoginStartsOnlyTheThreadsItsBackendNeeds(_ passwordFromStandardInput: Bool) throws {
        let report = directory + "/threads-\(getpid())"
        // A checkpassword program that accepts the login once it has written down the names of its
        // parent's threads: gatekeeper-run's, in the middle of a login.
        let helper = try writeHelper(
            "thread-reporting-checkpassword", in: directory, "cat /proc/$PPID/task/*/comm > \(report)\nexit 0")
        defer { unlink(report) }
        let result = try run(
            builtExecutable("gatekeeper-run"),
            ["--provider", "checkpassword", "--program", helper, "--user", "alice"]
                + (passwordFromStandardInput ? ["--password-stdin"] : []) + ["--", "true"],
            input: "wonderland\n")
        #expect(result.status == 0, "\(result.stderr)")
        let names = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(!names.isEmpty)
        #expect(!names.contains { $0.contains("qos") }, "a thread of Swift's pool ran: \(names)")
        // The main thread, the signal thread and the thread that runs the helper (and the prompt's,
        // which may not have ended yet).
        #expect(names.count <= (passwordFromStandardInput ? 3 : 4), "more threads than the login needs: \(names)")
    }

    /// The lockout's file locked by another process: the login waits for it (up to 5 s) on the main
    /// thread, and a signal still ends the tool at once, without the rest of the wait.
    @Test func aSignalEndsALoginWaitingForTheLockoutsLock() throws {
        let state = try makeStateDirectory(in: directory)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let tool = builtExecutable("gatekeeper-run")
        let options = [
            "--provider", "mock", "--delay", "0", "--state-dir", state, "--user", "alice", "--password-stdin",
        ]
        // A first login makes alice's tally file; then another process holds its lock.
        #expect(try run(tool, options + ["--", "true"], input: "wonderland\n").status == 0)
        let tally = state + "/faillock/alice"
        try #require(FileManager.default.fileExists(atPath: tally))
        // flock itself becomes the sleep (--no-fork), so the kill below ends the lock's holder, not only flock.
        let holder = try Spawned(URL(fileURLWithPath: "/usr/bin/flock"), ["--no-fork", tally, "sleep", "30"])
        defer {
            holder.send(SIGKILL)
            _ = holder.finish()
        }
        usleep(200_000)
        let login = try Spawned(tool, options + ["--", "true"])
        login.write("wonderland\n")
        usleep(500_000)
        let signalled = ContinuousClock.now
        login.send(SIGTERM)
        let result = login.finish()
        #expect(result.status == 128 + SIGTERM, "\(result.stderr)")
        #expect(signalled.duration(to: .now) < .seconds(3), "the signal waited for the lock")
    }
}
