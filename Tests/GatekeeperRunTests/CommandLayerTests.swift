import Authentication
import Foundation
import GatekeeperBackends
import GatekeeperCommands
import Glibc
import HostProtection
import PasswdCommands
import ProviderPlugins
import TestSupport
import Testing
import ToolSupport

/// The tools' command lines read into action values, and the actions performed in this process, as each
/// tool's one-line main performs them (the login, signals and the terminal are the process tests').
@Suite(.timeLimit(.minutes(1)))
struct CommandLayerTests {
    static let registry = BuiltInBackends.registry

    static func run(_ arguments: [String]) throws(UsageError) -> RunInvocation {
        try RunInvocation.parse(arguments[...], registry: registry)
    }

    @Test func gatekeeperRunsCommandLinesBecomeActions() throws {
        let cases: [([String], RunInvocation.Action, RunInvocation.Forgetting?)] = [
            (["--help"], .help, nil),
            (["--check-config", "/etc/gk.conf"], .checkConfig("/etc/gk.conf"), nil),
            (["--verify-audit", "/var/log/gk.json"], .verifyAudit("/var/log/gk.json"), nil),
            (["--config", "/etc/gk.conf", "--refresh-offline"], .refreshOffline, nil),
            (["--unlock", "bob"], .unlock("bob"), nil),
            (["-k"], .forget, .session),
            (["-K", "--user", "bob"], .forget, .all),
            (["-k", "--provider", "mock", "--", "true"], .run(["true"]), .session),
            (["--provider", "mock", "--change-password"], .changePassword, nil),
            (["--provider", "mock", "--", "echo", "--user", "x"], .run(["echo", "--user", "x"]), nil),
        ]
        for (arguments, action, forgetting) in cases {
            let invocation = try Self.run(arguments)
            #expect(invocation.action == action, "\(arguments)")
            #expect(invocation.forgetting == forgetting, "\(arguments)")
        }
        let full = try Self.run([
            "--provider", "mock", "--delay", "0", "--user", "alice", "--group", "admin", "--explain",
            "--password-stdin",
            "--state-dir", "/run/gk", "--", "id",
        ])
        #expect(full.action == .run(["id"]))
        #expect(full.selection.name == "mock" && full.selection.options == ["delay": "0"])
        #expect(full.user == "alice" && full.group == "admin" && full.explains && full.passwordFromStdin)
        #expect(full.stateDirectory == "/run/gk" && full.configuration == nil)
    }

    @Test func gatekeeperRunRefusesWhatCannotBeDone() {
        let refusals: [([String], String)] = [
            ([], "No command given."),
            (["-k", "-K"], "Give -k or -K, not both."),
            (["--provider", "mock", "--change-password", "--", "id"], "--change-password runs no command."),
            (["--provider", "mock", "--change-password", "--password-stdin"], "cannot come from standard input"),
            (["--state-dir", "run/gk", "--", "id"], "--state-dir needs an absolute path."),
            (["--config", "/etc/gk.conf", "--provider", "mock", "--", "id"], "--config names the providers"),
            (["--refresh-offline"], "needs --config FILE or --provider NAME"),
            (["--provider", "mock", "--refresh-offline", "--user", "bob"], "takes --config FILE or a provider"),
            (["--no-such-option"], "--no-such-option"),
        ]
        for (arguments, message) in refusals {
            #expect {
                _ = try Self.run(arguments)
            } throws: { error in
                (error as? UsageError)?.description.contains(message) == true
            }
            // The tool says so with its usage, and 64.
            let performed = performRun(arguments)
            #expect(performed.status == 64 && performed.stderr.contains(message), "\(arguments): \(performed)")
        }
    }

    @Test func gatekeeperRunsHelpNamesEveryBackend() {
        let help = performRun(["--help"])
        #expect(help.status == 0 && help.stderr.isEmpty)
        #expect(help.stdout.contains("Exit status"))
        for backend in Self.registry.names { #expect(help.stdout.contains(backend), "\(backend)") }
    }

    /// --unlock in this process: the account's failures forgotten, said once, audited; a name no file
    /// can have refused.
    @Test func unlockForgetsAnAccountsFailures() throws {
        let state = ScratchDirectory("gatekeeper-unlock")
        let store = try FaillockStore(directory: state.path + "/faillock")
        let policy = LockoutPolicy(deny: 2)
        let source = LoginSource(remoteHost: nil, terminal: nil, service: "test")
        for _ in 0..<2 { _ = try store.recordFailure(of: LockoutAccount("bob"), source: source, policy: policy) }
        #expect(try store.status(of: LockoutAccount("bob"), policy: policy).isLocked)
        let unlocked = performRun(["--state-dir", state.path, "--unlock", "bob"])
        #expect(unlocked.status == 0, "\(unlocked)")
        #expect(unlocked.stdout == "bob: failed logins forgotten in \(state.path)/faillock\n")
        #expect(try !store.status(of: LockoutAccount("bob"), policy: policy).isLocked)
        let refused = performRun(["--state-dir", state.path, "--unlock", "a/b"])
        #expect(refused.status == 69 && refused.stdout.isEmpty, "\(refused)")
        let unnamed = performRun(["--state-dir", state.path, "--unlock", "bob\u{1B}[2J"])
        #expect(unnamed.status == 65 && unnamed.stderr.hasPrefix("gatekeeper-run: --unlock: "), "\(unnamed)")
    }

    @Test func verifyAuditSaysWhatItFound() throws {
        let directory = ScratchDirectory("gatekeeper-audit")
        let path = directory.path + "/audit.json"
        let log = try JSONAuditLog(path: path)
        for name in ["alice", "bob"] {
            log.record(AuditEvent(kind: .signedIn, username: name, provider: "mock"))
        }
        let intact = performRun(["--verify-audit", path])
        #expect(intact.status == 0 && intact.stdout.contains("2 records verified"), "\(intact)")
        var text = try String(contentsOfFile: path, encoding: .utf8)
        text = text.replacingOccurrences(of: "bob", with: "eve")
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let edited = performRun(["--verify-audit", path])
        #expect(edited.status == 1 && edited.stdout.contains("line 2"), "\(edited)")
        let missing = performRun(["--verify-audit", directory.path + "/none.json"])
        #expect(missing.status == 69 && missing.stderr.hasPrefix("gatekeeper-run: "), "\(missing)")
    }

    /// A login performed in a process that goes on (a host, these tests) leaves its signals as they were:
    /// no handler and no thread watching SIGTERM after it, whatever the login's end.
    @Test func aLoginInProcessLeavesTheSignalsAsTheyWere() throws {
        let state = ScratchDirectory("gatekeeper-in-process")
        func handler(_ number: Int32) -> UInt {
            var action = sigaction()
            sigaction(number, nil, &action)
            return unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self)
        }
        func watchers() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { task in
                let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                return name?.hasPrefix("gatekeeper-sig") == true
            }.count
        }
        let before = [SIGINT, SIGTERM, SIGHUP].map(handler)
        let login = [
            "--provider", "mock", "--delay", "0s", "--state-dir", state.path, "--user", "alice", "--password-stdin",
        ]
        #expect(performRun(login + ["--", "true"], password: "wrong").status == 77)
        #expect(performRun(login + ["--group", "nobody-has-it", "--", "true"], password: "wonderland").status == 77)
        #expect(performRun(login + ["--", "true"], password: nil).status == 130)
        #expect([SIGINT, SIGTERM, SIGHUP].map(handler) == before)
        #expect(watchers() == 0)
    }

    // MARK: gatekeeper-passwd

    /// Every action of the one table is read from its word, named in the usage, and takes a USER exactly
    /// when the table says so.
    @Test func gatekeeperPasswdsActionsAreOneTable() throws {
        for action in PasswdAction.allCases {
            #expect(PasswdInvocation.usage.contains(action.rawValue), "\(action) is not in the usage")
            let listing = action == .list || action == .otpList
            let arguments = [action.rawValue, "/run/users"] + (listing ? [] : ["bob"])
            let invocation = try #require(try PasswdInvocation.parse(arguments[...]))
            #expect(invocation.action == action && invocation.file == "/run/users")
            #expect(invocation.user == (listing ? nil : "bob"))
            let wrongCount = performPasswd(listing ? arguments + ["bob"] : Array(arguments.dropLast()))
            #expect(wrongCount.status == 64, "\(action) with the wrong count of words")
        }
        let refusals: [([String], Int32, String)] = [
            (["frobnicate", "/run/users", "bob"], 64, "usage:"),
            (["add"], 64, "add needs a FILE."),
            (["add", "/run/users", "bob", "--scheme", "md5"], 64, "--scheme must be one of"),
            (["add", "/run/users", "bob", "--groups", "a b"], 65, "--groups: "),
            (["add", "/run/users", "bob\u{7}"], 65, "control character"),
            (["otp-add", "/run/users.oath", "bob", "--digits", "9"], 64, "--digits"),
            (["otp-add", "/run/users.oath", "bob", "--totp", "--hotp"], 64, "give --totp or --hotp, not both."),
            (["otp-add", "/run/users.oath", "bob", "--algorithm", "md5"], 64, "--algorithm must be"),
        ]
        for (arguments, status, message) in refusals {
            let performed = performPasswd(arguments)
            #expect(performed.status == status && performed.stderr.contains(message), "\(arguments): \(performed)")
        }
        #expect(try PasswdInvocation.parse(["--help"]) == nil)
    }

    /// A users file managed in this process from add to delete, each action with its status and words.
    @Test func gatekeeperPasswdManagesAUsersFile() throws {
        let directory = ScratchDirectory("gatekeeper-passwd")
        let file = directory.path + "/users"
        func passwd(_ words: [String], _ password: String? = nil) -> Performed {
            performPasswd(
                [words[0], file] + words.dropFirst() + (password == nil ? [] : ["--password-stdin"]), password: password
            )
        }
        #expect(passwd(["add", "bob", "--create", "--groups", "ops,dev", "--name", "Bob B"], "builder-1").status == 0)
        #expect(passwd(["list"]).stdout == "bob\tyescrypt\tops,dev\tBob B\n")
        #expect(passwd(["add", "bob"], "again").status == 65)
        #expect(passwd(["verify", "bob"], "builder-1").stderr == "gatekeeper-passwd: password correct for bob.\n")
        #expect(passwd(["verify", "bob"], "guess").status == 77)
        #expect(passwd(["set", "bob", "--scheme", "bcrypt"], "builder-2").status == 0)
        #expect(passwd(["verify", "bob"], "builder-2").status == 0)
        #expect(passwd(["lock", "bob"]).status == 0)
        #expect(passwd(["verify", "bob"], "builder-2").stderr == "gatekeeper-passwd: bob is locked.\n")
        #expect(passwd(["unlock", "bob"]).status == 0)
        #expect(passwd(["expire", "bob"]).status == 0)
        #expect(passwd(["verify", "bob"], "builder-2").stderr.contains("it has expired"))
        // A password that never came (Ctrl-D) changes nothing.
        let dashed = performPasswd(["set", file, "bob", "--password-stdin"], password: nil)
        #expect(dashed.status == 130 && dashed.stderr.contains("cancelled; nothing was changed."))
        #expect(passwd(["change", "bob"], "x").status == 64)
        #expect(passwd(["delete", "bob"]).status == 0)
        #expect(passwd(["list"]).stdout.isEmpty)
        #expect(passwd(["delete", "bob"]).status == 65)
    }
}
