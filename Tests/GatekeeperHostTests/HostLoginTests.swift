import Authentication
import AuthenticationTesting
import Foundation
import GatekeeperHost
import HostProtection
import MockProvider
import ProviderPlugins
import TestSupport
import Testing

/// What any Swift tool that links GatekeeperHost gets: the same admission as gatekeeper-run.
@Suite(.timeLimit(.minutes(1)))
struct HostLoginTests {
    let state = temporaryDirectory("gatekeeper-host")

    func host(at place: LoginPlace?, remembers: Bool = true) throws -> HostLogin {
        let settings = HostSettings(nil, stateDirectory: state)
        var fast = settings
        fast.gatekeeper.attempts.failDelay = .zero
        return try HostLogin(
            provider: MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero), stack: nil,
            selection: ("mock", [:]), settings: fast,
            context: .init(tool: "host-tests", place: place, remembersLogins: remembers, maxAttempts: 1),
            report: { _ in })
    }

    static let session = TerminalSession(kind: .parent, device: 0, leader: 4242, leaderStart: 99)

    @Test func aRememberedLoginIsUsedOnlyForTheSameAccountInTheSamePlace() async throws {
        let place = LoginPlace(Self.session, input: "stdin-1-1")
        _ = try await host(at: place).gatekeeper.signIn(
            conversation: ScriptedConversation(.text("alice"), .secret("wonderland")))
        // The same place, the same name: no password asked.
        let again = ScriptedConversation(.text("alice"))
        let identity = try await host(at: place).gatekeeper.signIn(conversation: again)
        #expect(identity.username == "alice" && again.questionCount == 1)
        // Another name in the same place is asked for its password, and refused with the wrong one.
        await #expect(throws: AuthError.invalidCredentials) {
            try await host(at: place).gatekeeper.signIn(
                conversation: ScriptedConversation(.text("bob"), .secret("nope")))
        }
        // Another input, or a host that must check every password: asked again.
        for other in [
            try host(at: LoginPlace(Self.session, input: "stdin-1-2")), try host(at: place, remembers: false),
        ] {
            let asked = ScriptedConversation(.text("alice"), .secret("wonderland"))
            _ = try await other.gatekeeper.signIn(conversation: asked)
            #expect(asked.questionCount == 2)
        }
    }

    /// The library tour (docs/library.md): a configuration file read, its stack and settings assembled in one call, and a
    /// protected action run through the gatekeeper it made — with the file's lockout in force.
    @Test func theReadmesHostExampleWorks() async throws {
        let config = state + "/gatekeeper.conf"
        try "delay 0\nlockout deny=2 dir=\(state)/tally\nrequired mock delay=0\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        let registry = ProviderRegistry([MockProviderPlugin.self])
        let loaded = try ConfigurationFile.read(config, registry: registry)
        let login = try HostLogin(
            provider: try loaded.stack.makeChain(registry: registry), stack: loaded.stack,
            // (The tour's tool keeps its remembered logins in the default place; a test keeps them in its own.)
            settings: HostSettings(loaded.settings, stateDirectory: state),
            context: .init(tool: "my-tool", place: LoginPlace(Self.session, input: "stdin-pipe-1")),
            report: { _ in })
        let action = RequiresAuthentication(.signedIn) { identity in identity.username }
        let outcome = try await action.run(
            through: login.gatekeeper, conversation: ScriptedConversation(.text("bob"), .secret("builder")))
        guard case .completed(let user) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(user == "bob")
        #expect(FileManager.default.fileExists(atPath: state + "/tally/bob"))
    }

    /// Medium 10: an invoker cannot move the state of root's configuration; root can, and anyone can move
    /// the state of a configuration of their own.
    @Test func onlyRootMovesTheStateOfRootsConfiguration() {
        #expect(HostSettings.stateDirectoryRefusal(configurationOwner: 0, invoker: 1000) != nil)
        #expect(HostSettings.stateDirectoryRefusal(configurationOwner: 0, invoker: 0) == nil)
        #expect(HostSettings.stateDirectoryRefusal(configurationOwner: 1000, invoker: 1000) == nil)
    }

    /// Medium 11: a user's state goes to their private runtime directory, else their home — never to a
    /// name in a shared directory that someone else could make first.
    @Test func aUsersStateIsNeverInASharedDirectory() throws {
        let uid = getuid()
        let runtime = temporaryDirectory("gatekeeper-runtime")
        chmod(runtime, 0o700)
        let home = temporaryDirectory("gatekeeper-home")
        #expect(
            HostSettings.privateStateBase(uid: uid, runtimeDirectory: runtime, home: home) == runtime + "/gatekeeper")
        // A runtime directory others may enter, or someone else's, or a link, is passed over.
        chmod(runtime, 0o755)
        let fallback = HostSettings.privateStateBase(uid: uid, runtimeDirectory: runtime, home: home)
        let other = HostSettings.privateStateBase(uid: uid &+ 1, runtimeDirectory: runtime, home: home)
        let link = temporaryDirectory("gatekeeper-link") + "/runtime"
        chmod(runtime, 0o700)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: runtime)
        let linked = HostSettings.privateStateBase(uid: uid, runtimeDirectory: link, home: home)
        for base in [fallback, other, linked] {
            #expect(
                base == home + "/.local/state/gatekeeper" || base == "/run/user/\(uid)/gatekeeper"
                    || base == "/run/user/\(uid &+ 1)/gatekeeper", "\(base)")
            #expect(!base.hasPrefix("/tmp/gatekeeper-\(uid)"))
        }
        #expect(
            HostSettings.privateStateBase(uid: uid, runtimeDirectory: nil, home: home)
                == home + "/.local/state/gatekeeper")
        #expect(
            HostSettings.privateStateBase(uid: 4_000_000, runtimeDirectory: nil, home: home)
                == "/run/user/4000000/gatekeeper")
        #expect(!HostSettings.privateStateBase(uid: 4_000_000, runtimeDirectory: nil, home: nil).hasPrefix("/tmp"))
        // A home others may write (an account whose home is /tmp), or someone else's, is no private place.
        #expect(!HostSettings.privateStateBase(uid: uid, runtimeDirectory: nil, home: "/tmp").hasPrefix("/tmp"))
        chmod(home, 0o777)
        #expect(!HostSettings.privateStateBase(uid: uid, runtimeDirectory: nil, home: home).hasPrefix(home))
        chmod(home, 0o700)
    }
}

/// gatekeeper-run refuses to move the state of root's configuration for anyone else (needs root, to
/// run the tool as another user).
@Suite(
    .timeLimit(.minutes(1)),
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
        "runs gatekeeper-run as nobody: needs root and setpriv (CI runs as root)"))
struct StateDirectoryRuleTests {
    @Test func nobodyCannotMoveTheLockoutOfRootsConfiguration() throws {
        let directory = temporaryDirectory("gatekeeper-rootconf")
        chmod(directory, 0o755)
        let config = directory + "/gatekeeper.conf"
        try "delay 0\nrequired mock delay=0\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        let tool = builtExecutable("gatekeeper-run")
        // The built tool must be reachable by nobody: a copy in the public directory.
        let copy = directory + "/gatekeeper-run"
        try FileManager.default.copyItem(atPath: tool.path, toPath: copy)
        chmod(copy, 0o755)
        let result = try shell(
            "setpriv --reuid=65534 --regid=65534 --clear-groups '\(copy)' --config '\(config)' --state-dir /tmp/elsewhere"
                + " --user alice --password-stdin -- true",
            input: "wonderland\n")
        #expect(result.status == 64, "\(result.output)")
        #expect(result.output.contains("owned by root"))
    }
}
