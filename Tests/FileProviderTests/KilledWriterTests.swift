import Foundation
import TestSupport
import Testing

/// Writers killed with SIGKILL at random points: the users file afterwards always parses and holds, for
/// the user being changed, either the old password or the new one — never a mix, never a loss.
@Suite(.timeLimit(.minutes(3)))
struct KilledWriterTests {
    @Test func aWriterKilledAnywhereLeavesTheOldOrTheNewFile() throws {
        var generator = SeededGenerator(for: "killed writers")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        let passwd = builtExecutable("gatekeeper-passwd")
        for index in 0..<20 {
            let added = try run(
                passwd, ["add", path, "user\(index)", "--scheme", "bcrypt", "--password-stdin", "--create"],
                input: "old-\(index)\n")
            #expect(added.status == 0)
        }
        var killed = 0
        var current = Dictionary(uniqueKeysWithValues: (0..<20).map { ("user\($0)", "old-\($0)") })
        for round in 0..<250 {
            let user = "user\(Int.random(in: 0..<20, using: &generator))"
            let process = try Spawned(passwd, ["set", path, user, "--scheme", "bcrypt", "--password-stdin"])
            process.write("new-\(round)\n")
            // Somewhere between starting and finishing (bcrypt takes a few milliseconds).
            usleep(UInt32.random(in: 0..<20_000, using: &generator))
            process.send(SIGKILL)
            if process.finish().status == 128 + SIGKILL { killed += 1 }
            // The file parses, every user is there, and the one being changed has one of its passwords.
            let listed = try run(passwd, ["list", path], input: "")
            #expect(listed.status == 0, "round \(round): \(listed.stderr)")
            #expect(listed.stdout.split(separator: "\n").count == 20, "round \(round)")
            let new = try run(passwd, ["verify", path, user, "--password-stdin"], input: "new-\(round)\n")
            if new.status == 0 {
                current[user] = "new-\(round)"
            } else {
                // Not the new password: then exactly the one it had before.
                let old = try run(passwd, ["verify", path, user, "--password-stdin"], input: current[user]! + "\n")
                #expect(old.status == 0, "round \(round): \(user) has neither its old nor its new password")
            }
        }
        #expect(killed > 0, "no writer was killed mid-way; the test proves nothing")
    }
}

/// gatekeeper-run processes recording a failed login, killed with SIGKILL at random points: the tally
/// file afterwards is whole records that `faillock` (Linux-PAM's tool, the peer) lists, holding either
/// the failures before the process ran or those and one more — never a torn or lost record.
@Suite(.timeLimit(.minutes(3)))
struct KilledLockoutWriterTests {
    @Test func aLockoutWriterKilledAnywhereLeavesTheOldOrTheNewTally() throws {
        var generator = SeededGenerator(for: "killed lockout writers")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let users = scratch.path + "/users"
        let added = try run(
            builtExecutable("gatekeeper-passwd"),
            ["add", users, "alice", "--scheme", "bcrypt", "--password-stdin", "--create"],
            input: "wonderland\n")
        #expect(added.status == 0, "\(added.stderr)")
        let config = scratch.path + "/run.conf"
        try """
        delay 0
        lockout deny=1000 interval=1h unlock=0 dir=\(scratch.path)/faillock
        required file users=\(users)

        """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        let tally = scratch.path + "/faillock/alice"
        func records() throws -> Int {
            guard FileManager.default.fileExists(atPath: tally) else { return 0 }
            let size = (try FileManager.default.attributesOfItem(atPath: tally)[.size] as? Int) ?? 0
            #expect(size % 64 == 0, "the tally holds a torn record (\(size) bytes)")
            let listed = try shell("faillock --dir '\(scratch.path)/faillock' --user alice")
            #expect(listed.status == 0, "\(listed.output)")
            // faillock prints the user, a heading, then one line per record.
            let lines = listed.output.split(separator: "\n").count - 2
            #expect(lines == size / 64, "faillock lists \(lines) records of \(size / 64)\n\(listed.output)")
            return size / 64
        }
        // One run left to finish: the set-up is sound and a failure is recorded. Its length spreads the kills
        // over a whole run, start to exit.
        let started = ContinuousClock.now
        let first = try run(
            builtExecutable("gatekeeper-run"),
            ["--config", config, "--user", "alice", "--password-stdin", "--", "true"],
            input: "wrong\n")
        #expect(first.status == 77, "\(first.stderr)")
        let span = (ContinuousClock.now - started).components
        let microseconds = UInt32(clamping: span.seconds * 1_000_000 + span.attoseconds / 1_000_000_000_000)
        var before = try records()
        #expect(before == 1)
        var killed = 0
        for round in 0..<250 {
            let process = try Spawned(
                builtExecutable("gatekeeper-run"),
                ["--config", config, "--user", "alice", "--password-stdin", "--", "true"])
            process.write("wrong-\(round)\n")
            usleep(UInt32.random(in: 0...microseconds + microseconds / 4, using: &generator))
            process.send(SIGKILL)
            if process.finish().status == 128 + SIGKILL { killed += 1 }
            let after = try records()
            #expect(after == before || after == before + 1, "round \(round): \(before) records became \(after)")
            before = after
        }
        #expect(killed > 0 && killed < 250, "killed \(killed) of 250; the kills did not land mid-way")
        #expect(before > 1, "no killed run recorded its failure; the test proves nothing")
    }
}
