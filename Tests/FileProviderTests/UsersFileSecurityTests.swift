import Authentication
import AuthenticationTesting
import Foundation
import TestSupport
import Testing

@testable import FileProvider
@testable import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// Regressions from an adversarial review of the users file: parsing, planted files, work factors,
/// the stand-in for unknown users, and text that reaches a terminal.
@Suite(.timeLimit(.minutes(1)))
struct UsersFileSecurityTests {
    private func passwd(_ arguments: [String], input: String = "") throws -> RunResult {
        try run(gatekeeperPasswd, arguments, input: input)
    }

    private func authenticate(_ provider: FileAuthProvider, _ user: String, _ password: String) async throws
        -> AuthOutcome
    {
        try await provider.authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    // MARK: Fields are split as bytes

    /// A combining mark right after `:` glued itself to the separator (a `Character`), so the display
    /// name's ",admin" became a group.
    @Test func aCombiningMarkAfterASeparatorDoesNotMoveFields() throws {
        let hash = try sh("mkpasswd -m yescrypt builder")
        let file = try UsersFile(parsing: Array("bob:\(hash):staff:\u{301},admin\n".utf8))
        let bob = try #require(file["bob"])
        #expect(bob.groups == ["staff"])
        #expect(bob.displayName == "\u{301},admin")
        #expect(bob.password == .hash(try PasswordHash(hash)))
    }

    /// A user name ending in a prepended-concatenation mark (U+0D4E) glued itself to the `:` after it:
    /// every field shifted, the hash leaked into the name, and delete reported success while the
    /// account still logged in.
    @Test func aPrependMarkAtTheEndOfANameKeepsTheFieldsApart() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let name = "bob\u{D4E}"
        let hash = try sh("mkpasswd -m yescrypt builder")
        let path = try scratch.write("users", "\(name):\(hash):staff:Bob\n")
        let entry = try #require(try UsersFileStore(path: path).read()[name])
        #expect(entry.username == name)
        #expect(entry.groups == ["staff"])
        #expect(entry.displayName == "Bob")
        let provider = try FileAuthProvider(.init(path: path))
        let identity = try expectAuthenticated(
            try await authenticate(provider, name, "builder"), "the entry's own password did not log in")
        #expect(identity.username == name)
        #expect(try passwd(["lock", path, name]).status == 0)
        #expect(try await authenticate(provider, name, "builder") == .rejected(.locked(until: nil)))
        #expect(try passwd(["delete", path, name]).status == 0)
        #expect(try await authenticate(provider, name, "builder") == .notMine)
    }

    /// What gatekeeper-passwd writes must read back as the same fields, and print as what it is.
    @Test(arguments: [
        ["--name", "Bob\u{1B}]0;owned\u{7}"], ["--name", "Bob\u{202E}nimda"], ["--name", "a:b"],
        ["--groups", "staff,\u{7}"], ["--groups", "staff,,admin"], ["--groups", "st aff"], ["--groups", "a:b"],
    ])
    func refusesFieldsThatWouldNotReadBackOrPrintSafely(_ options: [String]) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        let result = try passwd(["add", path, "bob", "--password-stdin", "--create"] + options, input: "builder\n")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!result.stderr.contains("\u{1B}") && !result.stderr.contains("\u{7}"))
    }

    @Test func refusesUserNamesThatLookLikeOthers() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        for name in ["admin\u{202E}", "ad\u{200B}min", "\u{2066}root"] {
            let result = try passwd(["add", path, name, "--password-stdin", "--create"], input: "pw\n")
            #expect(result.status == 65)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// `list` escapes what a hand-edited file holds: no escape sequence or bidi override reaches the
    /// terminal, and a tab cannot shift the columns.
    @Test func listEscapesWhatAFileHolds() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let hash = try sh("mkpasswd -m yescrypt builder")
        let path = try scratch.write("users", "bob:\(hash):st\u{1B}[2Jaff:Bob\u{1B}]0;owned\u{7}\t\u{202E}x\n")
        let list = try passwd(["list", path])
        #expect(list.status == 0)
        #expect(list.stdout == "bob\tyescrypt\tst\\u{1B}[2Jaff\tBob\\u{1B}]0;owned\\u{7}\\u{9}\\u{202E}x\n")
    }

    // MARK: Planted files

    /// The users file is never read through a symbolic link (it could be pointed at /etc/shadow between a
    /// check and the read), and an update never replaces the link with a regular file.
    @Test func aSymbolicLinkIsRefusedForReadingAndWriting() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let hash = try sh("mkpasswd -m yescrypt builder")
        let target = try scratch.write("real", "bob:\(hash)\n")
        let link = scratch.path + "/users"
        #expect(symlink(target, link) == 0)
        #expect {
            try UsersFileStore(path: link).read()
        } throws: { error in
            (error as? UsersFileError)?.code == .unsafe
        }
        #expect(throws: UsersFileError.self) { try FileAuthProvider(.init(path: link)) }
        let result = try passwd(["add", link, "eve", "--password-stdin"], input: "pw\n")
        #expect(result.status == 69)
        #expect(result.stderr.contains("symbolic link"))
        var info = stat()
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "bob:\(hash)\n")
    }

    /// A file its owner could rewrite is refused unless that owner is root or the user running the
    /// program. Needs root, to give the file to someone else.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aFileOwnedBySomeoneElseIsRefused() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "bob:\(try sh("mkpasswd -m yescrypt builder"))\n")
        #expect(chown(path, 65534, 65534) == 0)
        #expect {
            try UsersFileStore(path: path).read()
        } throws: { error in
            (error as? UsersFileError)?.code == .unsafe
        }
        let result = try passwd(["set", path, "bob", "--password-stdin"], input: "pw\n")
        #expect(result.status == 69)
        #expect(result.stderr.contains("owned by uid 65534"))
    }

    /// The lock file is never created through a link (`users.lock → /etc/nologin` would have created
    /// /etc/nologin), and must be a regular file: a FIFO there does not hang the tool.
    @Test(.timeLimit(.minutes(1)))
    func theLockFileIsNeverALinkOrAFIFO() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "bob:\(try sh("mkpasswd -m yescrypt builder"))\n")
        let target = scratch.path + "/nologin"
        #expect(symlink(target, path + ".lock") == 0)
        let linked = try passwd(["set", path, "bob", "--password-stdin"], input: "pw\n")
        #expect(linked.status == 69)
        #expect(!FileManager.default.fileExists(atPath: target))
        unlink(path + ".lock")
        #expect(mkfifo(path + ".lock", 0o600) == 0)
        #expect(try passwd(["set", path, "bob", "--password-stdin"], input: "pw\n").status == 69)
    }

    /// A file larger than the limit is refused before any of it is read (a sparse file: no disk used).
    @Test func anOversizedFileIsRefusedUnread() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "")
        #expect(truncate(path, off_t(UsersFileStore.maxFileBytes + 1)) == 0)
        #expect {
            try UsersFileStore(path: path).read()
        } throws: { error in
            (error as? UsersFileError)?.code == .unsafe && "\(error)".contains("larger than 1024 MiB")
        }
    }

    // MARK: Work factors and the stand-in

    /// yescrypt and scrypt settings are bounded before any hashing, as bcrypt costs and sha-crypt
    /// rounds are: mkpasswd's cost 8 (128 MiB) is accepted and cost 9 refused.
    @Test func memoryHardWorkFactorsAreBounded() throws {
        let accepted = try sh("mkpasswd -m yescrypt -R 8 pw")
        #expect(try PasswordHash(accepted).verify(Secret(copying: "pw".utf8)))
        #expect(try PasswordHash(try sh("mkpasswd -m scrypt pw")).verify(Secret(copying: "pw".utf8)))
        // Cost 9 (256 MiB) from mkpasswd, and cost 11 (1 GiB) as its setting reads ("jFT").
        let tooCostly = try sh("mkpasswd -m yescrypt -R 9 pw")
        #expect(tooCostly.hasPrefix("$y$jDT$"))
        let costly = "$y$jFT$" + tooCostly.dropFirst(7)
        for hash in [tooCostly, costly] {
            #expect(throws: PasswordHash.Problem.self) { try PasswordHash(hash) }
        }
        // scrypt with N = 2^30, and with 2^20 lanes.
        for setting in ["$7$YU..../....", "$7$CU....zzzz1"] {
            #expect(throws: PasswordHash.Problem.self) { try PasswordHash(setting + "salt$abc") }
        }
        // A file holding such a hash is refused, naming the line and the limit.
        #expect {
            try UsersFile(parsing: Array("ok:\(accepted)\nbad:\(costly)\n".utf8))
        } throws: { error in
            "\(error)".contains("line 2") && "\(error)".contains("128 MiB")
        }
    }

    @Test func yescryptParametersDecodeAsLibxcryptWritesThem() throws {
        #expect(try PasswordHash.yescryptParameters(Array("j9T".utf8)) == .init(logN: 12, r: 32))
        #expect(try PasswordHash.yescryptParameters(Array("j75".utf8)) == .init(logN: 10, r: 8))
        #expect(try PasswordHash.scryptParameters(Array("CU..../....".utf8)) == .init(logN: 14, r: 32, p: 1))
    }

    /// An unknown user's password is checked against a hash as costly as the file's own: a bcrypt file's
    /// stand-in is bcrypt at the file's cost (a yescrypt stand-in cost ~30 ms more, so names could be
    /// told apart by timing).
    @Test func theStandInCostsWhatTheFilesEntriesCost() throws {
        let bcrypt = try sh("htpasswd -nbB -C 6 a x").split(separator: ":")[1]
        let apr1 = try sh("htpasswd -nbm b y").split(separator: ":")[1]
        let file = try UsersFile(parsing: Array("a:\(bcrypt)\nb:\(apr1)\nc:\(bcrypt)\nd:!\(bcrypt)\n".utf8))
        let standIn = try #require(file.representativeHash)
        #expect(standIn.scheme == .bcrypt)
        #expect(standIn.text.hasPrefix("$2y$06$"))
        #expect(try UsersFile(parsing: Array("# none\n".utf8)).representativeHash == nil)
    }
}
