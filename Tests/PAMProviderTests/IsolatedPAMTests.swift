import Authentication
import AuthenticationTesting
import Foundation
import PAMProvider
import ProviderPlugins
import TestSupport
import Testing

/// PAM out of process: a module that crashes or hangs costs one helper process, never the host.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct IsolatedPAMTests {
    /// A PAM directory with services over the hostile fixture module, and the helper in a trusted place.
    struct Fixture {
        let directory: String
        let helper: String

        init() throws {
            directory = try trustedDirectory()
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../Fixtures/pam_gatekeeper_hostile.c").standardized.path
            let module = directory + "/pam_gatekeeper_hostile.so"
            let (status, output) = try shell("cc -shared -fPIC -O1 -o '\(module)' '\(source)' -lpam")
            guard status == 0 else { throw FixtureError("cc could not build the hostile module:\n\(output)") }
            for (service, argument) in [
                ("gk-crash", "crash"), ("gk-hang", "hang"), ("gk-three", "three"), ("gk-forge", "forge"),
            ] {
                try "auth required \(module) \(argument)\naccount required \(module)\n"
                    .write(toFile: directory + "/" + service, atomically: true, encoding: .utf8)
            }
            helper = directory + "/gatekeeper-pam-helper"
            try FileManager.default.copyItem(atPath: builtExecutable("gatekeeper-pam-helper").path, toPath: helper)
            chmod(helper, 0o755)
        }

        func provider(_ service: String, isolated: Bool) throws -> any AuthProvider {
            try PAMProviderPlugin.makeProvider(
                ProviderOptions([
                    "service": service, "pam-dir": directory, "isolated": isolated ? "yes" : "no", "pam-helper": helper,
                ]))
        }
    }

    static let fixture = Result { try Fixture() }

    func login(_ provider: any AuthProvider, _ conversation: ScriptedConversation) async throws -> AuthOutcome {
        try await provider.authenticate(AuthRequest(username: "alice", conversation: conversation))
    }

    @Test func threeQuestionsCrossTheProcessBoundary() async throws {
        let fixture = try Self.fixture.get()
        for isolated in [false, true] {
            let provider = try fixture.provider("gk-three", isolated: isolated)
            let right = try await login(provider, ScriptedConversation(.secret("one"), .text("two"), .secret("three")))
            guard case .authenticated(let identity) = right else {
                Issue.record("isolated \(isolated): \(right)")
                continue
            }
            #expect(identity.provider == "pam")
            let wrong = try await login(provider, ScriptedConversation(.secret("one"), .text("two"), .secret("four")))
            #expect(wrong == .rejected(.wrongCredentials), "isolated \(isolated)")
        }
    }

    /// A module that writes a protocol line of its own to standard output (an identity with a group that
    /// does not exist) and reads standard input reaches neither of the helper's channels: its refusal is
    /// the answer. (And an identity the helper does give is looked up on the host, groups included.)
    @Test func aModuleCannotSpeakTheHelperProtocol() async throws {
        let fixture = try Self.fixture.get()
        let forged = try await login(try fixture.provider("gk-forge", isolated: true), ScriptedConversation())
        #expect(forged == .rejected(.wrongCredentials), "\(forged)")
    }

    /// The accounts are the system's in either mode: the look-up names them alike (root as uid 0, which
    /// pam_faillock exempts), so the lockout counts them in their own pam_faillock files, not in buckets.
    @Test func bothModesLookAccountsUpInTheSystemDatabase() async throws {
        let fixture = try Self.fixture.get()
        for isolated in [false, true] {
            let provider = try fixture.provider("gk-three", isolated: isolated)
            #expect(await provider.lookUpAccount("root") == .known(canonicalName: "root", isSystemAdministrator: true))
            #expect(await provider.lookUpAccount("no-such-account-here") == .cannotTell, "isolated \(isolated)")
        }
    }

    @Test func aCrashingModuleCostsTheHelperNotTheHost() async throws {
        let fixture = try Self.fixture.get()
        let provider = try fixture.provider("gk-crash", isolated: true)
        let outcome = try await login(provider, ScriptedConversation(.secret("x")))
        guard case .unavailable(let reason) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(reason.contains("ended without an outcome"))
        // The host goes on serving logins.
        let next = try await login(
            try fixture.provider("gk-three", isolated: true),
            ScriptedConversation(.secret("one"), .text("two"), .secret("three")))
        try expectAuthenticated(next, "after a crash: \(next)")
        // In process, the same module takes the whole host down: gatekeeper-run dies by SIGSEGV.
        let state = temporaryDirectory("gatekeeper-isolated-state")
        let crashed = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "pam", "--service", "gk-crash", "--pam-dir", fixture.directory, "--state-dir", state,
                "--user", "alice", "--password-stdin", "--", "true",
            ], input: "x\n")
        // (Under `make sanitize`, AddressSanitizer or ThreadSanitizer catches the SIGSEGV, reports it and exits.)
        #expect(
            crashed.status == 128 + SIGSEGV || crashed.stderr.contains("AddressSanitizer: SEGV")
                || crashed.stderr.contains("ThreadSanitizer: SEGV"),
            "in-process: \(crashed.status)")
        let isolated = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "pam", "--service", "gk-crash", "--pam-dir", fixture.directory, "--isolated", "yes",
                "--pam-helper", fixture.helper, "--state-dir", state, "--user", "alice", "--password-stdin", "--",
                "true",
            ], input: "x\n")
        #expect(isolated.status == 69 && isolated.stderr.contains("ended without an outcome"))
    }

    @Test func cancellingAHungModuleKillsTheTransaction() async throws {
        let fixture = try Self.fixture.get()
        let provider = try fixture.provider("gk-hang", isolated: true)
        let login = Task { try await self.login(provider, ScriptedConversation(.secret("x"))) }
        #expect(await eventually { helpers(of: "gk-hang", in: fixture) > 0 })
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(await eventually { helpers(of: "gk-hang", in: fixture) == 0 }, "the helper outlived the login")
    }

    /// How many helper processes run the service now. (The last letter in brackets keeps the pattern from
    /// matching the shell that runs pgrep, whose own command line holds it.)
    func helpers(of service: String, in fixture: Fixture) -> Int {
        let pattern = "\(fixture.helper) --service \(service.dropLast())[\(service.suffix(1))]"
        let listed = (try? shell("pgrep -f -- '\(pattern)'").output) ?? ""
        return listed.split(separator: "\n").count
    }
}

/// A service file outside /etc/pam.d decides who gets in: `pam-dir=` is held to the rule of configuration
/// files (a private file in directories no one else may write), or `pam_permit.so` put there by anyone
/// would admit every password.
@Suite(.timeLimit(.minutes(1)))
struct PAMDirectoryTests {
    private func make(_ directory: String) throws(ConfigurationError) -> any AuthProvider {
        try ProviderRegistry([PAMProviderPlugin.self]).makeProvider(
            named: "pam", options: ["service": "permit", "pam-dir": directory])
    }

    @Test func aServiceFileOthersCouldReplaceIsRefused() throws {
        let shared = temporaryDirectory("gatekeeper-pamdir")
        defer { try? FileManager.default.removeItem(atPath: shared) }
        let file = shared + "/permit"
        try "auth sufficient pam_permit.so\naccount sufficient pam_permit.so\n".write(
            toFile: file, atomically: false, encoding: .utf8)
        chmod(file, 0o600)
        chmod(shared, 0o700)
        _ = try make(shared)
        for (mode, directoryMode, reason) in [
            (mode_t(0o666), mode_t(0o700), "may be written by group or others"),
            (0o600, 0o777, "the directory \(shared) may be written by group or others"),
        ] {
            chmod(file, mode)
            chmod(shared, directoryMode)
            #expect {
                try make(shared)
            } throws: { "\($0)".contains(reason) }
        }
        chmod(file, 0o600)
        chmod(shared, 0o700)
        #expect {
            try ProviderRegistry([PAMProviderPlugin.self]).makeProvider(
                named: "pam", options: ["service": "../permit", "pam-dir": shared])
        } throws: { "\($0)".contains("cannot be found") }
    }
}
