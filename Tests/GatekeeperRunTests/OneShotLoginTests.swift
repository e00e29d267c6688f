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

    @Test func aLoginStartsOnlyTheThreadsItsBackendNeeds() throws {
        let report = directory + "/threads-\(getpid())"
        let helper = directory + "/thread-reporting-checkpassword"
        // A checkpassword program that accepts the login once it has written down the names of its
        // parent's threads: gatekeeper-run's, in the middle of a login.
        try """
        #!/bin/sh
        cat /proc/$PPID/task/*/comm > \(report)
        exit 0

        """.write(toFile: helper, atomically: true, encoding: .utf8)
        chmod(helper, 0o700)
        defer { unlink(report) }
        let result = try run(
            builtExecutable("gatekeeper-run"),
            ["--provider", "checkpassword", "--program", helper, "--user", "alice", "--password-stdin", "--", "true"],
            input: "wonderland\n")
        #expect(result.status == 0, "\(result.stderr)")
        let names = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(!names.isEmpty)
        #expect(!names.contains { $0.contains("qos") }, "a thread of Swift's pool ran: \(names)")
        // The main thread, the signal thread and the thread that runs the helper.
        #expect(names.count <= 3, "more threads than the login needs: \(names)")
    }
}
