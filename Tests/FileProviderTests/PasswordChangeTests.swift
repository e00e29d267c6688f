import Authentication
import AuthenticationTesting
import Foundation
import PasswordHashing
import TestSupport
import Testing

@testable import FileProvider

#if canImport(Glibc)
    import Glibc
#endif

/// A password changed in a users file, with htpasswd and pwscore as the judges.
@Suite(.timeLimit(.minutes(3)))
struct PasswordChangeTests {
    static let strong = "Correct-Horse-Battery-7"

    private func change(
        _ provider: FileAuthProvider, _ user: String, _ answers: ScriptedConversation.Answer...
    ) async throws -> PasswordChangeOutcome {
        try await provider.changePassword(of: user, conversation: ScriptedConversation(answers: answers))
    }

    private func bytes(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

    /// The new password works and the old no longer does, for htpasswd itself; the entry keeps its
    /// scheme and work factor (htpasswd's `$2y$` at cost 5, sha512-crypt's rounds, yescrypt's
    /// parameters), with a new salt; every other line is as it was. (`htpasswd -v` reads a line of two
    /// fields only, so bob, whose line has no groups, is the one changed.)
    @Test(arguments: [
        "htpasswd -nbB -C 5 u old-pass-1", "htpasswd -nb5 -r 6000 u old-pass-1", "mkpasswd -m yescrypt -R 7 old-pass-1",
    ])
    func aChangeKeepsTheSchemeAndCostAndHtpasswdAgrees(_ made: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let old = try sh(made).split(separator: ":").last.map(String.init)!
        // `$id$parameters$`: what the change must keep.
        let settings =
            old.split(separator: "$", omittingEmptySubsequences: false).prefix(3).joined(separator: "$") + "$"
        let path = try scratch.write("users", "# staff\nalice:\(old):admin:Alice Liddell\nbob:\(old)\n")
        let provider = try FileAuthProvider(.init(path: path))
        let outcome = try await change(
            provider, "bob", .secret("old-pass-1"), .secret(Self.strong), .secret(Self.strong))
        #expect(outcome == .changed)
        let lines = String(decoding: bytes(path), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[0] == "# staff" && lines[1] == "alice:\(old):admin:Alice Liddell")
        let hash = String(lines[2].dropFirst("bob:".count))
        #expect(hash.hasPrefix(settings) && hash != old, "\(hash) after \(old)")
        if !old.hasPrefix("$y$") {
            #expect(try shell("htpasswd -vb \(path) bob '\(Self.strong)'").status == 0)
            #expect(try shell("htpasswd -vb \(path) bob old-pass-1").status != 0)
        }
        let login = try await provider.authenticate(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret(Self.strong))))
        #expect(login.pamResult == .success)
        let oldLogin = try await provider.authenticate(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("old-pass-1"))))
        #expect(oldLogin == .rejected(.wrongCredentials))
    }

    /// Nothing is written when the current password is wrong, the two entries differ, libpwquality
    /// refuses the new one, or the entry is locked; each says why, and never with a password in it.
    @Test func aRefusedChangeWritesNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let hash = try sh("mkpasswd -m yescrypt old-pass-1")
        let path = try scratch.write("users", "alice:\(hash)\ndave:!\(hash)\n")
        let before = bytes(path)
        let provider = try FileAuthProvider(.init(path: path))
        #expect(
            try await change(provider, "alice", .secret("wrong-one"), .secret(Self.strong), .secret(Self.strong))
                == .rejected(.wrongCurrentPassword))
        #expect(
            try await change(provider, "alice", .secret("old-pass-1"), .secret(Self.strong), .secret(Self.strong + "x"))
                == .rejected(.unacceptable("the two entries differ")))
        let weak = try await change(provider, "alice", .secret("old-pass-1"), .secret("abc"), .secret("abc"))
        guard case .rejected(.unacceptable(let reason)) = weak else {
            Issue.record("a weak password was not refused: \(weak)")
            return
        }
        #expect(!reason.contains("abc") && !reason.contains("old-pass-1"))
        #expect(try await change(provider, "dave", .secret("old-pass-1")) == .rejected(.refusedByPolicy))
        #expect(try await change(provider, "nobody", .secret("old-pass-1")) == .notMine)
        #expect(bytes(path) == before)
    }

    /// A bcrypt entry takes no new password longer than the 72 bytes bcrypt would use.
    @Test func aBcryptEntryRefusesAPasswordItWouldCut() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write(
            "users", "bob:\(try sh("htpasswd -nbB bob old-pass-1").split(separator: ":")[1])\n")
        let before = bytes(path)
        let long = "Long-Horse-Battery-" + String(repeating: "x9", count: 30)
        let outcome = try await change(
            try FileAuthProvider(.init(path: path)), "bob", .secret("old-pass-1"), .secret(long), .secret(long))
        #expect(outcome == .rejected(.unacceptable("it is longer than the 72 bytes this entry's bcrypt hash uses")))
        #expect(bytes(path) == before)
    }

    /// libpwquality decides as pwscore does, with its words: each password pwscore refuses is refused
    /// with pwscore's message, and each it scores is accepted.
    @Test(arguments: ["abc", "password", "alice-alice", "Xy7#", "zaq1@WSX-plum-Orbit", Self.strong])
    func theQualityCheckAgreesWithPwscore(_ candidate: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "alice:\(try sh("mkpasswd -m yescrypt old-pass-1"))\n")
        let provider = try FileAuthProvider(.init(path: path))
        let (status, output) = try shell("pwscore alice 2>&1", input: candidate + "\n")
        let outcome = try await change(provider, "alice", .secret("old-pass-1"), .secret(candidate), .secret(candidate))
        if status == 0 {
            #expect(outcome == .changed, "pwscore scored \(output)")
        } else {
            // pwscore: "Password quality check failed:\n The password is shorter than 8 characters"
            let message = output.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            #expect(outcome == .rejected(.unacceptable(message)), "pwscore: \(output)")
        }
    }

    /// A change cancelled at any question, or while its hash is made, leaves the file as it was and the
    /// old password working.
    @Test(arguments: [0, 1, 2])
    func aCancelledChangeLeavesTheOldPassword(_ question: Int) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "alice:\(try sh("mkpasswd -m yescrypt old-pass-1"))\n")
        let before = bytes(path)
        let provider = try FileAuthProvider(.init(path: path))
        var answers: [ScriptedConversation.Answer] = [
            .secret("old-pass-1"), .secret(Self.strong), .secret(Self.strong),
        ]
        answers[question] = .cancel
        await #expect(throws: AuthError.cancelled) {
            try await provider.changePassword(of: "alice", conversation: ScriptedConversation(answers: answers))
        }
        #expect(bytes(path) == before)
        let login = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("old-pass-1"))))
        #expect(login.pamResult == .success)
    }

    /// An entry changed by someone else between the check of the current password and the write is not
    /// overwritten: the other change stands.
    @Test func anEntryChangedMeanwhileIsNotOverwritten() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try scratch.write("users", "alice:\(try sh("mkpasswd -m yescrypt old-pass-1"))\n")
        let provider = try FileAuthProvider(.init(path: path))
        let other = try sh("mkpasswd -m yescrypt set-by-admin")
        // The administrator's change lands while the person types the new password.
        let conversation = InterceptingConversation(at: PasswordPrompt.retype) {
            try? "alice:\(other)\n".write(toFile: path + ".new", atomically: false, encoding: .utf8)
            rename(path + ".new", path)
        }
        let outcome = try await provider.changePassword(of: "alice", conversation: conversation)
        guard case .unavailable(let reason) = outcome else {
            Issue.record("the change went through over another: \(outcome)")
            return
        }
        #expect(reason.contains("changed meanwhile"))
        #expect(String(decoding: bytes(path), as: UTF8.self) == "alice:\(other)\n")
    }
}

/// An entry marked expired (`gatekeeper-passwd expire`, a `+` before its hash) changes its password at
/// the next login.
@Suite(.timeLimit(.minutes(3)))
struct ExpiredEntryTests {
    private func bytes(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }

    private func expiredFile(_ scratch: Scratch) throws -> String {
        let path = try scratch.write(
            "users", "bob:\(try sh("htpasswd -nbB bob old-pass-1").split(separator: ":")[1])\n")
        #expect(try shell("\(gatekeeperPasswd.path) expire \(path) bob").status == 0)
        return path
    }

    /// The mark is a `+` before the hash: Apache's htpasswd, which does not know it, refuses the entry;
    /// locking and unlocking keep it; `list` shows it.
    @Test func theMarkIsWrittenReadAndKeptThroughALock() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try expiredFile(scratch)
        let line = String(decoding: bytes(path), as: UTF8.self)
        #expect(line.hasPrefix("bob:+$2y$"))
        #expect(try shell("htpasswd -vb \(path) bob old-pass-1").status != 0)
        #expect(try shell("\(gatekeeperPasswd.path) lock \(path) bob").status == 0)
        #expect(String(decoding: bytes(path), as: UTF8.self).hasPrefix("bob:!+$2y$"))
        #expect(try shell("\(gatekeeperPasswd.path) unlock \(path) bob").status == 0)
        #expect(String(decoding: bytes(path), as: UTF8.self) == line)
        #expect(try sh("\(gatekeeperPasswd.path) list \(path)") == "bob\tbcrypt (expired)\t-")
        let file = try UsersFile(parsing: bytes(path))
        guard case .expired(let hash)? = file["bob"]?.password else {
            Issue.record("the entry did not read as expired")
            return
        }
        #expect(hash.verify(Secret(copying: "old-pass-1".utf8)))
    }

    /// At a login that can ask, the provider admits the right password marked to be changed, and
    /// changes nothing; the gatekeeper then says so, asks the current password and the new one twice,
    /// and admits; the mark is gone and htpasswd takes the new password. Where nothing can be asked:
    /// refused as expired. Cancelled at the new password: refused, and the file unchanged.
    @Test func anExpiredEntryIsChangedAtTheLogin() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try expiredFile(scratch)
        let before = bytes(path)
        let provider = try FileAuthProvider(.init(path: path))
        let strong = PasswordChangeTests.strong
        #expect(
            try await provider.authenticate(
                AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("old-pass-1"))))
                == .rejected(.passwordChangeRequired))
        let marked = try await provider.authenticate(
            AuthRequest(
                username: "bob", conversation: ScriptedConversation(.secret("old-pass-1")),
                mayChangeExpiredPassword: true))
        let identity = try expectAuthenticated(marked, "the expired password was not admitted marked: \(marked)")
        try #require(identity.mustChangePassword, "the expired password was not admitted marked: \(marked)")
        #expect(bytes(path) == before)
        let gatekeeper = Gatekeeper(provider: provider, configuration: .init(maxAttempts: 1, failDelay: .zero))
        await #expect(throws: AuthError.cancelled) {
            try await gatekeeper.signIn(
                conversation: ScriptedConversation(
                    .text("bob"), .secret("old-pass-1"), .secret("old-pass-1"), .secret(strong), .cancel))
        }
        #expect(bytes(path) == before)
        let conversation = ScriptedConversation(
            .text("bob"), .secret("old-pass-1"), .secret("old-pass-1"), .secret(strong), .secret(strong))
        let admitted = try await gatekeeper.signIn(conversation: conversation)
        #expect(admitted.username == "bob" && !admitted.mustChangePassword)
        #expect(conversation.messages.first == PasswordPrompt.expiredNotice)
        #expect(String(decoding: bytes(path), as: UTF8.self).hasPrefix("bob:$2y$05$"))
        #expect(try shell("htpasswd -vb \(path) bob '\(strong)'").status == 0)
    }

    /// A file whose entries are mostly expired still makes an unknown user cost what a known one does:
    /// the stand-in is an expired entry's hash.
    @Test func anExpiredEntryStandsInForUnknownUsers() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let hash = try sh("htpasswd -nbB -C 12 u x").split(separator: ":")[1]
        let path = try scratch.write("users", "a:+\(hash)\nb:+\(hash)\nc:\(try sh("mkpasswd -m yescrypt y"))\n")
        let file = try UsersFile(parsing: bytes(path))
        #expect(file.representativeHash?.text == String(hash))
    }

    /// gatekeeper-run: with the password on standard input, status 75; asked line by line, changed and
    /// the command runs.
    @Test func gatekeeperRunChangesAnExpiredEntry() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = try expiredFile(scratch)
        let strong = PasswordChangeTests.strong
        let arguments = [
            "--provider", "file", "--users", path, "--user", "bob", "--state-dir", scratch.path + "/state",
        ]
        let piped = try run(
            builtExecutable("gatekeeper-run"), arguments + ["--password-stdin", "--", "true"], input: "old-pass-1\n")
        #expect(piped.status == 75, "\(piped.stderr)")
        let asked = try run(
            builtExecutable("gatekeeper-run"), arguments + ["--", "true"],
            input: "old-pass-1\nold-pass-1\n\(strong)\n\(strong)\n")
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(try shell("htpasswd -vb \(path) bob '\(strong)'").status == 0)
    }
}

/// Answers the change's questions (the current password, then the strong one twice), running `action`
/// just before answering `prompt`.
private final class InterceptingConversation: Conversation {
    let prompt: String
    let action: @Sendable () -> Void

    init(at prompt: String, _ action: @escaping @Sendable () -> Void) {
        self.prompt = prompt
        self.action = action
    }

    func ask(_ prompt: String) async throws(AuthError) -> String { throw .cancelled }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if prompt == self.prompt { action() }
        return Secret(copying: (prompt == PasswordPrompt.current ? "old-pass-1" : PasswordChangeTests.strong).utf8)
    }

    func show(_ message: String, as kind: MessageKind) async {}
}
