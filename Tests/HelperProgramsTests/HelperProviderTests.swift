import Authentication
import AuthenticationTesting
import Foundation
import HelperPrograms
import PluginHost
import ProviderPlugins
import TestSupport
import Testing

/// Helper programs as hostile peers: the examples pass the conformance suite, and a helper that crashes,
/// hangs, prints garbage or floods its output gives `unavailable`, never a hang or an admission.
///
/// Serialized: a script written while another test spawns a process can be inherited open for writing by
/// that child, and then cannot be executed (ETXTBSY) — a hazard of writing programs in tests, not of helpers.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HelperProviderTests {
    static let directory = Result { try trustedDirectory() }
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    /// Installs `text` as an executable in the private directory.
    static func install(_ name: String, _ text: String) throws -> String {
        let path = try directory.get() + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    static func example(_ name: String) throws -> String {
        try install(
            name,
            try String(contentsOfFile: Self.repository + "/Examples/plugins/helpers/" + name, encoding: .utf8)
        )
    }

    static func helper(_ program: String, timeout: String = "10") throws -> any AuthProvider {
        try ConversationHelperPlugin.makeProvider(ProviderOptions(["program": program, "timeout": timeout]))
    }

    static let conversationExample = Result { try example("conversation-example.py") }
    static let checkpasswordExample = Result { try example("checkpassword-example") }

    static let conversationSuite = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        try helper(try conversationExample.get())
    }
    static let checkpasswordSuite = ProviderConformance(fixture: .init(username: "bob", password: "builder")) {
        try CheckpasswordPlugin.makeProvider(ProviderOptions(["program": try checkpasswordExample.get()]))
    }

    @Test(arguments: ProviderConformance.checks)
    func theConversationHelperConforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.conversationSuite.run(check) == [])
    }

    @Test(arguments: ProviderConformance.checks)
    func theCheckpasswordHelperConforms(_ check: ProviderConformance.Check) async {
        #expect(await Self.checkpasswordSuite.run(check) == [])
    }

    @Test func theWholeConversationCrossesTheProtocol() async throws {
        let provider = try Self.helper(try Self.conversationExample.get())
        let conversation = ScriptedConversation(.secret("builder"), .text("blue"))
        let outcome = try await provider.authenticate(AuthRequest(username: "bob", conversation: conversation))
        let identity = try expectAuthenticated(outcome, "\(outcome)")
        #expect(
            identity.groups == ["staff"] && identity.attributes["helper"] == "example" && identity.provider == "helper")
        #expect(conversation.events.contains { "\($0)".contains("Noted: blue") })
    }

    @Test func checkpasswordGetsNoSecretInItsArgumentsOrEnvironment() async throws {
        let record = try Self.directory.get() + "/probe.log"
        let probe = try Self.install(
            "probe",
            """
            #!/bin/sh
            { echo "args: $*"; env; } > '\(record)'
            cat <&3 > /dev/null
            exit 111
            """)
        let provider = try CheckpasswordPlugin.makeProvider(ProviderOptions(["program": probe]))
        let outcome = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("Sekret-Probe-42"))))
        #expect(outcome == .unavailable(reason: "checkpassword reported a temporary failure (111)"))
        let logged = try String(contentsOfFile: record, encoding: .utf8)
        #expect(!logged.contains("Sekret-Probe-42"))
        #expect(logged.contains("args: /bin/true"))
        // The shell adds PWD, SHLVL and _ of its own; nothing else comes from the host.
        let names = logged.split(separator: "\n").dropFirst().compactMap {
            $0.split(separator: "=").first.map(String.init)
        }
        #expect(Set(names).subtracting(["PWD", "SHLVL", "_"]) == ["PATH"], "\(names)")
    }

    @Test(arguments: [
        (
            "garbage", "#!/bin/sh\nread start\necho 'this is not JSON'\nsleep 5\n",
            "printed a line that is not the protocol"
        ),
        ("flood", "#!/bin/sh\nread start\nexec yes '{\"info\":\"x\"}'\n", "more than"),
        (
            "long line", "#!/bin/sh\nread start\nexec head -c 200000 /dev/zero\n",
            "printed more than the protocol allows"
        ),
        ("crash", "#!/bin/sh\nread start\nkill -SEGV $$\n", "ended without an outcome"),
        ("silence", "#!/bin/sh\nexec sleep 60\n", "gave no outcome within 1.0 seconds"),
        ("no outcome", "#!/bin/sh\nread start\necho '{\"info\":\"bye\"}'\n", "ended without an outcome"),
        (
            "bad user", "#!/bin/sh\nread start\necho '{\"outcome\":\"authenticated\",\"user\":\"a:b\"}'\n",
            "a user name that cannot be used"
        ),
    ])
    func aMisbehavingHelperIsUnavailable(_ name: String, _ script: String, _ reason: String) async throws {
        let program = try Self.install(name.replacingOccurrences(of: " ", with: "-"), script)
        let provider = try Self.helper(program, timeout: "1")
        let outcome = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("x"))))
        guard case .unavailable(let why) = outcome else {
            Issue.record("\(name): \(outcome)")
            return
        }
        #expect(why.contains(reason), "\(name): \(why)")
    }

    /// Whether a password must be changed is not a helper's to say: the attribute is dropped.
    @Test func aHelperCannotMarkAPasswordExpired() async throws {
        let script =
            "#!/bin/sh\nread start\necho '{\"prompt\":\"Password: \",\"echo\":false}'\nread answer\n"
            + "echo '{\"outcome\":\"authenticated\",\"user\":\"alice\",\"attributes\":{\"password_expired\":\"yes\",\"k\":\"v\"}}'\n"
        let program = try Self.install("marks-expired", script)
        let outcome = try await Self.helper(program, timeout: "5").authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("x"))))
        let identity = try expectAuthenticated(outcome, "the helper's login was refused: \(outcome)")
        #expect(!identity.mustChangePassword && identity.attributes["k"] == "v")
    }

    /// Every rejection a helper answers is read as the one it is.
    @Test(arguments: [
        ("wrong_credentials", Rejection.wrongCredentials), ("locked", .locked(until: nil)),
        ("expired_account", .expiredAccount), ("password_change_required", .passwordChangeRequired),
        ("refused_by_policy", .refusedByPolicy), ("activation_required", .activationRequired),
        ("too_many_tries", .tooManyTries),
    ])
    func everyRejectionCrossesTheProtocol(_ name: String, _ rejection: Rejection) async throws {
        let script =
            "#!/bin/sh\nread start\necho '{\"prompt\":\"Password: \",\"echo\":false}'\nread answer\n"
            + "echo '{\"outcome\":\"rejected\",\"rejection\":\"\(name)\"}'\n"
        let program = try Self.install("rejected-\(name)", script)
        let outcome = try await Self.helper(program, timeout: "5").authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("x"))))
        #expect(outcome == .rejected(rejection), "\(name): \(outcome)")
    }

    /// A `failed` answer is one of PAM's codes; one that names a code with an answer of its own is that
    /// answer (a wrong password counted as one), and one the helper cannot name is a system error — counted
    /// once the password reached the helper, never taken for the backend being down.
    @Test(arguments: [
        ("cred_err", AuthOutcome.failed(.credentialsError, reason: "the helper helper failed: no card")),
        ("auth_err", .rejected(.wrongCredentials)),
        ("success", .failed(.systemError, reason: "the helper helper answered an unknown PAM return code")),
        ("bogus", .failed(.systemError, reason: "the helper helper answered an unknown PAM return code")),
    ])
    func aFailedAnswerIsOneOfPAMsCodes(_ code: String, _ expected: AuthOutcome) async throws {
        let script =
            "#!/bin/sh\nread start\necho '{\"prompt\":\"Password: \",\"echo\":false}'\nread answer\n"
            + "echo '{\"outcome\":\"failed\",\"code\":\"\(code)\",\"reason\":\"no card\"}'\n"
        let program = try Self.install("failed-\(code)", script)
        let provider = try Self.helper(program, timeout: "5")
        let outcome = try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("x"))))
        #expect(outcome == expected, "\(code): \(outcome)")
    }

    @Test func cancellingALoginStopsTheHelpersWholeGroup() async throws {
        let pidFile = try Self.directory.get() + "/child.pid"
        let program = try Self.install(
            "spawner",
            """
            #!/bin/sh
            read start
            sleep 300 &
            echo $! > '\(pidFile)'
            echo '{"prompt":"Password: ","echo":false}'
            read answer
            """)
        let provider = try Self.helper(program, timeout: "120")
        let conversation = ScriptedConversation(.hang)
        let login = Task { try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        await conversation.waitUntilHanging()
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        let child = try #require(
            Int32(
                (try String(contentsOfFile: pidFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await eventually { kill(child, 0) != 0 }, "the helper's child \(child) outlived the login")
    }

    @Test func theProgramMustBeSafe() throws {
        #expect(throws: ConfigurationError.self) {
            try ConversationHelperPlugin.makeProvider(ProviderOptions(["program": "helpers/x"]))
        }
        let shared = temporaryDirectory("gatekeeper-helper-shared")
        chmod(shared, 0o1777)
        try "#!/bin/sh\n".write(toFile: shared + "/x", atomically: true, encoding: .utf8)
        chmod(shared + "/x", 0o755)
        #expect {
            try ConversationHelperPlugin.makeProvider(ProviderOptions(["program": shared + "/x"]))
        } throws: { error in
            "\(error)".contains("may be written by group or others")
        }
        #expect(throws: ConfigurationError.self) {
            try ConversationHelperPlugin.makeProvider(ProviderOptions(["program": "/bin/true", "env": "lower=case"]))
        }
    }
}
