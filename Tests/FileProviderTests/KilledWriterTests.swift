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
