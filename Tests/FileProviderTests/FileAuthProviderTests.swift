import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import PasswordHashing
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(3)))
struct FileAuthProviderTests {
    static func usersFile(in scratch: Scratch) throws -> String {
        let alice = try sh("mkpasswd -m yescrypt wonderland")
        let bob = try sh("htpasswd -nbB bob builder").split(separator: ":")[1]
        return try scratch.write("users", "alice:\(alice):admin,staff:Alice Liddell\nbob:\(bob)\n")
    }

    /// One file for every check (the checks run in parallel; rewriting it under them would race).
    static let conformanceFile = Result { try usersFile(in: try Scratch()) }
    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        try FileAuthProvider(.init(path: try conformanceFile.get()))
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.conformance.run(check) == [])
    }

    private func authenticate(_ provider: FileAuthProvider, _ user: String, _ password: String) async throws
        -> AuthOutcome
    {
        try await provider.authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    /// Hashes written by Apache's htpasswd (-B, -5, -m, -s) and by mkpasswd verify here.
    /// The file is read on the threads the configuration gives (`threads`), not the shared pool.
    @Test func theFileIsReadOnTheThreadsGiven() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "alice:" + (try sh("mkpasswd -m yescrypt wonderland")) + "\n")
        let (queued, lookup) = try await queuesOn { threads in
            var configuration = FileAuthProvider.Configuration(path: path)
            configuration.threads = threads
            let provider = try FileAuthProvider(configuration)
            return { await provider.lookUpAccount("alice") }
        }
        #expect(queued)
        #expect(lookup == .known(canonicalName: "alice"))
    }

    @Test(arguments: [
        ("htpasswd -nbB u pw-bcrypt", "pw-bcrypt", PasswordHash.Scheme.bcrypt),
        ("htpasswd -nb5 u pw-sha512", "pw-sha512", .sha512),
        ("htpasswd -nbm u pw-md5", "pw-md5", .apr1),
        ("htpasswd -nbs u pw-sha1", "pw-sha1", .sha1),
        ("printf 'u:%s' \"$(mkpasswd -m yescrypt pw-yescrypt)\"", "pw-yescrypt", .yescrypt),
        ("printf 'u:%s' \"$(mkpasswd -m sha256crypt pw-sha256)\"", "pw-sha256", .sha256),
    ])
    func verifiesHashesFromThePeers(_ command: String, _ password: String, _ scheme: PasswordHash.Scheme) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", try sh(command) + "\n")
        let provider = try FileAuthProvider(.init(path: path))
        let identity = try expectAuthenticated(
            try await authenticate(provider, "u", password), "\(scheme) did not verify")
        #expect((identity.attributes["hash"] != nil) == scheme.isWeak)
        #expect(try await authenticate(provider, "u", password + "x") == .rejected(.wrongCredentials))
    }

    /// Files written by gatekeeper-passwd verify with `htpasswd -v` (entries without the extra fields,
    /// which htpasswd's own verification does not skip; Apache httpd's mod_authn_file does).
    @Test(arguments: ["yescrypt", "bcrypt", "sha512"])
    func filesWeWriteVerifyWithHtpasswd(_ scheme: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        try sh(
            "\(gatekeeperPasswd.path) add \(path) carol --password-stdin --create --scheme \(scheme)",
            input: "pw-\(scheme)\n")
        try sh("htpasswd -vb \(path) carol pw-\(scheme)")
        #expect(throws: CommandFailed.self) { try sh("htpasswd -vb \(path) carol wrong") }
    }

    @Test func groupsDisplayNameLockedAndUnknownUsers() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try Self.usersFile(in: scratch)
        try sh("\(gatekeeperPasswd.path) lock \(path) bob")
        let provider = try FileAuthProvider(.init(path: path))
        let alice = try expectAuthenticated(
            try await authenticate(provider, "alice", "wonderland"), "alice did not sign in")
        #expect(alice.groups == ["admin", "staff"])
        #expect(alice.displayName == "Alice Liddell")
        #expect(try await authenticate(provider, "bob", "builder") == .rejected(.locked(until: nil)))
        #expect(try await authenticate(provider, "bob", "guess") == .rejected(.wrongCredentials))
        #expect(try await authenticate(provider, "zed", "wonderland") == .notMine)
    }

    @Test func reloadsAChangedFileEvenWithinTheSameSecond() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try Self.usersFile(in: scratch)
        let provider = try FileAuthProvider(.init(path: path))
        #expect(try await authenticate(provider, "bob", "builder") != .rejected(.wrongCredentials))
        try sh("htpasswd -bB \(path) bob rebuilt")
        #expect(try await authenticate(provider, "bob", "builder") == .rejected(.wrongCredentials))
        try expectAuthenticated(try await authenticate(provider, "bob", "rebuilt"), "the change was not seen")
    }

    @Test func aBrokenNewVersionKeepsTheLastGoodOneAndADeletedFileFailsClosed() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try Self.usersFile(in: scratch)
        let provider = try FileAuthProvider(.init(path: path))
        let good = try String(contentsOfFile: path, encoding: .utf8)
        try scratch.write("users", good + "mallory:plaintext\n")
        try expectAuthenticated(
            try await authenticate(provider, "alice", "wonderland"), "the last good version was not kept")
        #expect(provider.problem?.contains("line 3 for mallory: plain-text passwords") == true)
        try FileManager.default.removeItem(atPath: path)
        guard case .unavailable(let reason) = try await authenticate(provider, "alice", "wonderland") else {
            Issue.record("a deleted file did not fail closed")
            return
        }
        #expect(reason.contains("cannot be read"))
    }

    @Test func refusesFilesOthersCouldHavePlanted() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try Self.usersFile(in: scratch)
        // A link to a private, well-formed file: refused for being a link, nothing else.
        #expect(symlink(path, scratch.path + "/link") == 0)
        #expect {
            try FileAuthProvider(.init(path: scratch.path + "/link"))
        } throws: { error in
            "\(error)".contains("symbolic link")
        }
        #expect(throws: UsersFileError.self) { try FileAuthProvider(.init(path: scratch.path)) }
        #expect(throws: UsersFileError.self) {
            try FileAuthProvider(.init(path: scratch.path + "/missing"))
        }
        chmod(path, 0o666)
        #expect {
            try FileAuthProvider(.init(path: path))
        } throws: { error in
            "\(error)".contains("chmod go-w")
        }
    }

    @Test func upgradesAWeakHashAfterASuccessfulLoginWhenAsked() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", try sh("htpasswd -nbm dave legacy") + "\n")
        let provider = try FileAuthProvider(.init(path: path, upgradesWeakHashes: true))
        try expectAuthenticated(try await authenticate(provider, "dave", "legacy"), "dave did not sign in")
        // The rewrite happens beside the login, which does not wait for it: wait for it, 20 s at most.
        #expect(
            await eventually {
                ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").hasPrefix("dave:$y$")
            })
        try expectAuthenticated(try await authenticate(provider, "dave", "legacy"), "the upgraded hash does not verify")
    }

    @Test(.timeLimit(.minutes(1)))
    func twoWritersLoseNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        try sh("\(gatekeeperPasswd.path) add \(path) seed --password-stdin --create --scheme sha512", input: "pw\n")
        let writer = { (prefix: String) in
            "for i in $(seq 1 200); do echo pw | \(gatekeeperPasswd.path) add \(path) \(prefix)$i --password-stdin --scheme sha512 || exit 1; done"
        }
        // Two writer processes at once, each adding 200 users one `add` at a time.
        let writers = try ["a", "b"].map { prefix in
            try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", writer(prefix)])
        }
        for process in writers {
            #expect(process.finish().status == 0)
        }
        let file = try UsersFileStore(path: path).read()
        #expect(file.entries.count == 401)
    }

    /// A writer killed at random moments leaves the old file or the new one, never a broken one.
    @Test(.timeLimit(.minutes(2)))
    func aKilledWriterLeavesAWholeFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/users"
        try sh("\(gatekeeperPasswd.path) add \(path) alice --password-stdin --create --scheme sha512", input: "v0\n")
        var seen = Set<String>()
        var generator = SeededGenerator(for: "aKilledWriterLeavesAWholeFile")
        for round in 1...200 {
            let writer = try Spawned(
                gatekeeperPasswd, ["set", path, "alice", "--password-stdin", "--scheme", "sha512"])
            writer.write("v\(round)\n")
            usleep(UInt32.random(in: 0...4000, using: &generator))
            kill(writer.pid, SIGKILL)
            _ = writer.finish()
            let file = try UsersFileStore(path: path).read()
            let entry = try #require(file["alice"])
            guard case .hash(let hash) = entry.password else {
                Issue.record("round \(round): alice lost her password")
                return
            }
            seen.insert(hash.text)
            #expect(file.entries.count == 1)
        }
        #expect(!seen.isEmpty)
    }
}
