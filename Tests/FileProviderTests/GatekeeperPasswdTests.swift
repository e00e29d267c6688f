import Foundation
import TestSupport
import Testing

/// The `gatekeeper-passwd` executable, as an administrator uses it.
@Suite(.timeLimit(.minutes(1)))
struct GatekeeperPasswdTests {
    private func passwd(_ arguments: [String], input: String = "") throws -> RunResult {
        try run(gatekeeperPasswd, arguments, input: input)
    }

    @Test func managesUsersWithTheDocumentedStatuses() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        #expect(try passwd(["add", file, "alice", "--password-stdin"], input: "pw\n").status == 3)  // no file yet
        #expect(
            try passwd(
                ["add", file, "alice", "--password-stdin", "--create", "--groups", "admin,staff", "--name", "Alice L"],
                input: "s3cret\n"
            ).status == 0
        )
        #expect(try passwd(["add", file, "alice", "--password-stdin"], input: "again\n").status == 3)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "s3cret\n").status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "wrong\n").status == 1)
        #expect(try passwd(["verify", file, "nobody", "--password-stdin"], input: "s3cret\n").status == 1)
        #expect(
            try passwd(["set", file, "alice", "--password-stdin", "--scheme", "sha512"], input: "n3w\n").status == 0)
        #expect(try passwd(["lock", file, "alice"]).status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "n3w\n").status == 1)
        #expect(try passwd(["unlock", file, "alice"]).status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "n3w\n").status == 0)
        let list = try passwd(["list", file])
        #expect(list.stdout == "alice\tsha512\tadmin,staff\tAlice L\n")
        #expect(!list.stdout.contains("$6$"))
        #expect(try passwd(["delete", file, "alice"]).status == 0)
        #expect(try passwd(["delete", file, "alice"]).status == 3)
        #expect(try passwd(["list", file]).stdout.isEmpty)
    }

    @Test(arguments: [
        [String](), ["frobnicate", "f"], ["add"], ["add", "f"], ["list", "f", "extra"], ["add", "f", "a:b"],
        ["add", "f", "u", "--scheme", "md5"], ["add", "f", "u", "--groups", "a:b"], ["add", "f", "u", "--bogus"],
    ])
    func refusesBadCommandLines(_ arguments: [String]) throws {
        let result = try passwd(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("gatekeeper-passwd: "))
    }

    @Test func refusesPasswordsBcryptWouldCut() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        let long = String(repeating: "x", count: 73)
        let result = try passwd(
            ["add", file, "u", "--password-stdin", "--create", "--scheme", "bcrypt"], input: long + "\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains("only the first 72 bytes"))
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try passwd(["add", file, "u", "--password-stdin", "--create"], input: "\n").status == 2)
    }

    @Test func refusesAFileOthersCanWrite() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("users", "", mode: 0o666)
        let result = try passwd(["add", file, "u", "--password-stdin"], input: "pw\n")
        #expect(result.status == 3)
        #expect(result.stderr.contains("chmod go-w"))
    }

    @Test func gatekeeperRunUsesTheFile() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        _ = try passwd(["add", file, "bob", "--password-stdin", "--create", "--groups", "ops"], input: "builder\n")
        let run = builtExecutable("gatekeeper-run")
        let common = [
            "--provider", "file", "--users", file, "--user", "bob", "--password-stdin", "--group", "ops", "--",
        ]
        #expect(try TestSupport.run(run, common + ["true"], input: "builder\n").status == 0)
        #expect(try TestSupport.run(run, common + ["true"], input: "wrong\n").status == 77)
        #expect(try TestSupport.run(run, ["--provider", "file", "--", "true"], input: "").status == 64)
    }
}
