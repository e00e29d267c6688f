import Foundation
import TestSupport
import Testing

/// The `gatekeeper-passwd` executable, as an administrator uses it.
@Suite(.timeLimit(.minutes(1)))
struct GatekeeperPasswdTests {
    private func passwd(_ arguments: [String], input: String = "") throws -> RunResult {
        try run(gatekeeperPasswd, arguments, input: input)
    }

    /// A lock file that cannot be made is said before any password is asked, in one sentence.
    @Test func aFileThatCannotBeChangedIsSaidBeforeAnyPassword() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        #expect(try passwd(["add", file, "alice", "--password-stdin", "--create"], input: "s3cret\n").status == 0)
        unlink(file + ".lock")
        mkdir(file + ".lock", 0o700)
        for arguments in [["set", file, "alice", "--password-stdin"], ["change", file, "alice"]] {
            let result = try passwd(arguments, input: "s3cret\nn3w-password\nn3w-password\n")
            #expect(result.status == 69, "\(arguments[0]): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("users.lock cannot be opened"), "\(result.stderr)")
            #expect(!result.stderr.contains("password:") && !result.stderr.contains("Password:"), "\(result.stderr)")
            #expect(!result.stderr.contains(".;") && !result.stderr.contains(".."), "\(result.stderr)")
        }
    }

    /// The manual's `verify` says the status a wrong password gets, and it is the one the tool exits with.
    @Test func theManualSaysTheStatusOfAWrongPassword() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        #expect(try passwd(["add", file, "alice", "--password-stdin", "--create"], input: "s3cret\n").status == 0)
        let status = try passwd(["verify", file, "alice", "--password-stdin"], input: "wrong\n").status
        let manual = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../man/gatekeeper-passwd.1"), encoding: .utf8)
        let verify = try #require(manual.components(separatedBy: ".B verify\n").dropFirst().first)
        let paragraph = verify.components(separatedBy: ".TP").first ?? ""
        #expect(paragraph.contains("(exit \(status)"), "the manual's verify: \(paragraph)")
        #expect(!paragraph.contains("(exit 1)"))
    }

    @Test func managesUsersWithTheDocumentedStatuses() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        #expect(try passwd(["add", file, "alice", "--password-stdin"], input: "pw\n").status == 69)  // no file yet
        #expect(
            try passwd(
                ["add", file, "alice", "--password-stdin", "--create", "--groups", "admin,staff", "--name", "Alice L"],
                input: "s3cret\n"
            ).status == 0
        )
        #expect(try passwd(["add", file, "alice", "--password-stdin"], input: "again\n").status == 65)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "s3cret\n").status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "wrong\n").status == 77)
        #expect(try passwd(["verify", file, "nobody", "--password-stdin"], input: "s3cret\n").status == 77)
        #expect(
            try passwd(["set", file, "alice", "--password-stdin", "--scheme", "sha512"], input: "n3w\n").status == 0)
        #expect(try passwd(["lock", file, "alice"]).status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "n3w\n").status == 77)
        #expect(try passwd(["unlock", file, "alice"]).status == 0)
        #expect(try passwd(["verify", file, "alice", "--password-stdin"], input: "n3w\n").status == 0)
        let list = try passwd(["list", file])
        #expect(list.stdout == "alice\tsha512\tadmin,staff\tAlice L\n")
        #expect(!list.stdout.contains("$6$"))
        #expect(try passwd(["delete", file, "alice"]).status == 0)
        #expect(try passwd(["delete", file, "alice"]).status == 65)
        #expect(try passwd(["list", file]).stdout.isEmpty)
    }

    /// `change` as a user changes their own password: the current one, the new one twice; htpasswd -v
    /// then takes the new one. A wrong current password, a refused new one and input that ends half-way
    /// change nothing, each with its status.
    @Test func changeAsksTheCurrentPasswordAndTheNewOneTwice() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write(
            "users", "bob:\(try sh("htpasswd -nbB bob old-pass-1").split(separator: ":")[1])\n")
        let strong = "Correct-Horse-Battery-7"
        let before = try String(contentsOfFile: file, encoding: .utf8)
        for (input, status) in [
            ("wrong-pass\n\(strong)\n\(strong)\n", Int32(77)), ("old-pass-1\nabc\nabc\n", 77),
            ("old-pass-1\n\(strong)\n", 130), ("old-pass-1\u{0}x\n\(strong)\n\(strong)\n", 65),
        ] {
            let result = try passwd(["change", file, "bob"], input: input)
            #expect(result.status == status, "\(result.stderr)")
            #expect(result.stderr.contains("othing was changed"), "\(result.stderr)")
            #expect(!result.stderr.contains(strong) && !result.stderr.contains("old-pass-1"))
            #expect(try String(contentsOfFile: file, encoding: .utf8) == before)
        }
        let result = try passwd(["change", file, "bob"], input: "old-pass-1\n\(strong)\n\(strong)\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try shell("htpasswd -vb \(file) bob '\(strong)'").status == 0)
        #expect(try shell("htpasswd -vb \(file) bob old-pass-1").status != 0)
        #expect(try passwd(["change", file, "bob", "--password-stdin"], input: "x\n").status == 64)
    }

    /// Without root: a user changes the password in a users file of their own; a file of root's they may
    /// not write is refused, changing nothing.
    @Test(.enabled(if: getuid() == 0, "needs root to run gatekeeper-passwd as another user"))
    func changeNeedsNoRootOnlyAFileOfOnesOwn() throws {
        let directory = "/run/gatekeeper-passwd-\(UUID())"
        try shell("mkdir -m 755 \(directory)")
        defer { _ = try? shell("rm -rf \(directory)") }
        let copy = directory + "/gatekeeper-passwd"
        try FileManager.default.copyItem(atPath: gatekeeperPasswd.path, toPath: copy)
        let hash = try sh("htpasswd -nbB bob old-pass-1").split(separator: ":")[1]
        try shell("mkdir -m 700 \(directory)/own && chown nobody \(directory)/own")
        try "bob:\(hash)\n".write(toFile: directory + "/own/users", atomically: false, encoding: .utf8)
        try shell("chown nobody \(directory)/own/users && chmod 600 \(directory)/own/users")
        try "bob:\(hash)\n".write(toFile: directory + "/roots", atomically: false, encoding: .utf8)
        try shell("chmod 644 \(directory)/roots")
        let strong = "Correct-Horse-Battery-7"
        let input = "old-pass-1\n\(strong)\n\(strong)\n"
        let own = try shell("su nobody -s /bin/sh -c '\(copy) change \(directory)/own/users bob'", input: input)
        #expect(own.status == 0, "\(own.output)")
        #expect(try shell("htpasswd -vb \(directory)/own/users bob '\(strong)'").status == 0)
        let roots = try shell("su nobody -s /bin/sh -c '\(copy) change \(directory)/roots bob'", input: input)
        #expect(roots.status == 69, "\(roots.output)")
        #expect(try String(contentsOfFile: directory + "/roots", encoding: .utf8) == "bob:\(hash)\n")
    }

    /// A command line the tool cannot follow is a usage error (64); a value it cannot use, unusable input (65).
    static let badCommandLines: [([String], Int32)] = [
        ([], 64), (["frobnicate", "f"], 64), (["add"], 64), (["add", "f"], 64), (["list", "f", "extra"], 64),
        (["add", "f", "a:b"], 65), (["add", "f", "u", "--scheme", "md5"], 64),
        (["add", "f", "u", "--groups", "a:b"], 65),
        (["add", "f", "u", "--bogus"], 64),
    ]

    @Test(arguments: badCommandLines)
    func refusesBadCommandLines(_ arguments: [String], _ status: Int32) throws {
        let result = try passwd(arguments)
        #expect(result.status == status)
        #expect(result.stderr.hasPrefix("gatekeeper-passwd: "))
    }

    @Test func refusesPasswordsBcryptWouldCut() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = scratch.path + "/users"
        let long = String(repeating: "x", count: 73)
        let result = try passwd(
            ["add", file, "u", "--password-stdin", "--create", "--scheme", "bcrypt"], input: long + "\n")
        #expect(result.status == 65)
        #expect(result.stderr.contains("only the first 72 bytes"))
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try passwd(["add", file, "u", "--password-stdin", "--create"], input: "\n").status == 65)
    }

    @Test func refusesAFileOthersCanWrite() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let file = try scratch.write("users", "", mode: 0o666)
        let result = try passwd(["add", file, "u", "--password-stdin"], input: "pw\n")
        #expect(result.status == 69)
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

/// A user who may write the directory of a root-owned users file cannot change the file: it would become
/// theirs (the rename makes the new file its writer's). Refused, and the file is left as it was.
@Suite(
    .timeLimit(.minutes(1)),
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
        "runs gatekeeper-passwd as nobody: needs root and setpriv (CI runs as root)"))
struct UsersFileOwnerTests {
    @Test func aRootOwnedFileInADirectoryAUserOwnsIsNotTheirs() throws {
        let directory = temporaryDirectory("gatekeeper-owner")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o755)
        let tool = directory + "/gatekeeper-passwd"
        try FileManager.default.copyItem(atPath: gatekeeperPasswd.path, toPath: tool)
        chmod(tool, 0o755)
        let home = directory + "/home"
        mkdir(home, 0o700)
        chown(home, 65534, 65534)
        let file = home + "/users"
        #expect(
            try run(gatekeeperPasswd, ["add", file, "alice", "--password-stdin", "--create"], input: "s3cret\n").status
                == 0)
        chmod(file, 0o644)
        // The lock beside it is the user's to make: the directory is theirs.
        unlink(file + ".lock")
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        for command in ["set", "add", "delete"] {
            let user = command == "add" ? "mallory" : "alice"
            let result = try shell(
                "setpriv --reuid=65534 --regid=65534 --clear-groups '\(tool)' \(command) '\(file)' \(user) --password-stdin",
                input: "mine\n")
            #expect(result.status == 69, "\(command): \(result.status) \(result.output)")
            #expect(result.output.contains("only its owner or root may change it"), "\(result.output)")
        }
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_uid == 0, "the file stays root's")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
    }
}
