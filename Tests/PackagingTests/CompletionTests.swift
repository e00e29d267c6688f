import Foundation
import GatekeeperBackends
import GatekeeperCommands
import PasswdCommands
import ProviderPlugins
import TestSupport
import Testing

/// Bash completion (Packaging/bash-completion/gatekeeper) against the tools as built: what a person gets
/// pressing Tab after each kind of word.
@Suite("Bash completion")
struct CompletionTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Packaging/bash-completion/gatekeeper").standardized.path
    static let tools = builtExecutable("gatekeeper-run").deletingLastPathComponent().path

    /// The completions bash offers for `words`, the last being the word under the cursor.
    static func complete(_ words: [String]) throws -> [String] {
        let function = words[0] == "gatekeeper-passwd" ? "_gatekeeper_passwd" : "_gatekeeper_run"
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let program = """
            PATH='\(tools)':/usr/bin:/bin
            source '\(Self.script)' || exit 9
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            \(function)
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try run(URL(fileURLWithPath: "/bin/bash"), ["-c", program], input: "")
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let output = result.stdout
        return output.split(separator: "\n").map(String.init)
    }

    @Test("options of the tool, then of the provider chosen")
    func options() throws {
        #expect(try Self.complete(["gatekeeper-run", "--pro"]) == ["--provider"])
        let general = try Self.complete(["gatekeeper-run", "-"])
        for option in ["--config", "--user", "--password-stdin", "--group", "--unlock", "--verify-audit", "-k", "-K"] {
            #expect(general.contains(option), "\(general)")
        }
        #expect(!general.contains("--users"), "a provider's option offered before any provider")
        #expect(!general.contains(where: { !$0.hasPrefix("-") }), "\(general)")
        let file = try Self.complete(["gatekeeper-run", "--provider", "file", "--u"])
        #expect(Set(file) == ["--users", "--user", "--unlock"])
        let ldap = try Self.complete(["gatekeeper-run", "--provider", "ldap", "--b"])
        #expect(Set(ldap) == ["--base", "--binddn", "--bindpw_file"])
        #expect(try Self.complete(["gatekeeper-repl", "--c"]) == ["--config"])
    }

    @Test("provider names and the values an option takes")
    func providersAndValues() throws {
        let providers = try Self.complete(["gatekeeper-run", "--provider", ""])
        // Every built-in backend, and nothing else: a backend added to the list is offered here too.
        #expect(Set(providers) == Set(BuiltInBackends.plugins.map { $0.name }))
        #expect(try Self.complete(["gatekeeper-run", "--provider", "pam", "--isolated", ""]) == ["yes", "no"])
        #expect(try Self.complete(["gatekeeper-run", "--provider", "debug", "--result", "user_"]) == ["user_unknown"])
        // A value nobody can guess gets no options offered in its place.
        #expect(try Self.complete(["gatekeeper-run", "--provider", "mock", "--delay", ""]) == [])
        #expect(try Self.complete(["gatekeeper-passwd", "set", "f", "u", "--scheme", "b"]) == ["bcrypt"])
    }

    @Test("user names from the users file on the command line")
    func usersFromTheFile() throws {
        let directory = temporaryDirectory("completion")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/users"
        for user in ["alice", "bob", "alfred"] {
            let result = try run(
                builtExecutable("gatekeeper-passwd"), ["add", file, user, "--create", "--password-stdin"],
                input: "pw-\(user)\n")
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try Self.complete(["gatekeeper-passwd", "set", file, "al"]) == ["alice", "alfred"])
        #expect(try Self.complete(["gatekeeper-passwd", "add", file, "al"]) == [], "add names a new user")
        #expect(try Self.complete(["gatekeeper-passwd", "--scheme", "bcrypt", "delete", file, "b"]) == ["bob"])
        let run = try Self.complete(["gatekeeper-run", "--provider", "file", "--users", file, "--user", "a"])
        #expect(run == ["alice", "alfred"])
        #expect(try Self.complete(["gatekeeper-passwd", "set", directory + "/missing", ""]) == [])
    }

    @Test("actions of gatekeeper-passwd, and the command after --")
    func actionsAndCommand() throws {
        let actions = try Self.complete(["gatekeeper-passwd", ""])
        // The one table of gatekeeper-passwd's actions, read from its usage.
        #expect(Set(actions) == Set(PasswdAction.allCases.map(\.rawValue)))
        let command = try Self.complete(["gatekeeper-run", "--provider", "mock", "--", "gatekeeper-pa"])
        #expect(command.contains("gatekeeper-passwd"), "\(command)")
        let passwd = try Self.complete(["gatekeeper-passwd", "--"])
        #expect(passwd.contains("--hotp") && passwd.contains("--totp") && passwd.contains("--create"), "\(passwd)")
    }
}
