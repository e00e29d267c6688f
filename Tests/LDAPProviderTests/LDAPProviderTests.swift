import Authentication
import AuthenticationTesting
import Foundation
import HostProtection
import LDAPProvider
import OfflineCache
import TestSupport
import Testing

/// Against a real slapd: `ldapwhoami` and the server decide what is right.
@Suite(.timeLimit(.minutes(2)))
struct LDAPProviderTests {
    static func provider(_ change: (inout LDAPAuthProvider.Configuration) -> Void = { _ in }) throws -> LDAPAuthProvider
    {
        let slapd = try SlapdFixture.shared.get()
        var configuration = LDAPAuthProvider.Configuration(
            uris: [slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3))
        change(&configuration)
        return LDAPAuthProvider(configuration)
    }

    func login(_ provider: LDAPAuthProvider, _ user: String, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
    }

    static let conformance = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
        try provider()
    }

    /// The directory's calls run on the threads the configuration gives (`threads`), not the shared pool.
    @Test func theCallsRunOnTheThreadsGiven() async throws {
        let (queued, outcome) = try await queuesOn { threads in
            let provider = try Self.provider { $0.threads = threads }
            return { try? await self.login(provider, "alice", "wonderland") }
        }
        #expect(queued)
        guard case .authenticated? = outcome else {
            Issue.record("alice was refused: \(String(describing: outcome))")
            return
        }
    }

    @Test(arguments: ProviderConformance.checks)
    func conforms(_ check: ProviderConformance.Check) async {
        let problems = await Self.conformance.run(check)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func theIdentityCarriesTheDirectorysAttributesAndGroups() async throws {
        let identity = try expectAuthenticated(
            try await login(try Self.provider(), "alice", "wonderland"), "alice was refused")
        #expect(identity.displayName == "Alice Example" && identity.groups == ["staff"])
        #expect(identity.attributes["uid"] == "2001" && identity.attributes["gid"] == "2000")
        #expect(identity.attributes["home"] == "/home/alice" && identity.attributes["shell"] == "/bin/bash")
        let bob = try expectAuthenticated(try await login(try Self.provider(), "bob", "builder"), "bob was refused")
        #expect(bob.groups.isEmpty)
        // Groups only from memberOf (which this directory does not keep): none.
        let memberOfOnly = try Self.provider { $0.groupSources = [.memberOf] }
        let plain = try expectAuthenticated(try await login(memberOfOnly, "alice", "wonderland"), "alice was refused")
        #expect(plain.groups.isEmpty)
    }

    /// The account check without a password (a key-only ssh login's `acct_mgmt`, a remembered login): what
    /// the directory keeps now — valid with the groups a login gets, ppolicy-locked, reset, unknown; and,
    /// on a directory of its own, an account deleted or expired (`shadowExpire`) since, and the directory
    /// down.
    @Test func theAccountIsRecheckedWithoutAPassword() async throws {
        let provider = try Self.provider()
        guard case .authenticated(let signedIn) = try await login(provider, "alice", "wonderland"),
            case .valid(let alice) = await provider.recheck(Identity(username: "alice", provider: "ldap"))
        else {
            Issue.record("alice was refused")
            return
        }
        #expect(alice.username == "alice" && alice.groups == signedIn.groups && alice.groups == ["staff"])
        #expect(alice.displayName == signedIn.displayName && alice.attributes == signedIn.attributes)
        #expect(
            await provider.recheck(Identity(username: "dave", provider: "ldap")) == .refused(.accountLocked(until: nil))
        )
        #expect(
            await provider.recheck(Identity(username: "fay", provider: "ldap")) == .refused(.passwordChangeRequired))
        #expect(await provider.recheck(Identity(username: "nobody7", provider: "ldap")) == .refused(.userNotFound))
        let slapd = try SlapdFixture()  // its own: this test deletes and expires accounts
        defer { slapd.kill() }
        let own = LDAPAuthProvider(
            .init(uris: [slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3)))
        guard case .valid = await own.recheck(Identity(username: "kim", provider: "ldap")) else {
            Issue.record("kim was refused before anything happened to the account")
            return
        }
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        for command in [
            "ldapdelete \(admin) \(slapd.dn("carol"))",
            "printf 'dn: \(slapd.dn("kim"))\\nchangetype: modify\\nadd: objectClass\\nobjectClass: shadowAccount\\n"
                + "-\\nadd: shadowExpire\\nshadowExpire: 1\\n' | ldapmodify \(admin)",
        ] {
            let (status, output) = try shell(command)
            try #require(status == 0, "\(command): \(output)")
        }
        // Past the 5 s a look-up's entry is used again.
        try await Task.sleep(for: .seconds(6))
        #expect(await own.recheck(Identity(username: "carol", provider: "ldap")) == .refused(.userNotFound))
        #expect(await own.recheck(Identity(username: "kim", provider: "ldap")) == .refused(.accountExpired))
        #expect(slapd.kill())
        try await Task.sleep(for: .seconds(6))
        guard case .unavailable = await own.recheck(Identity(username: "kim", provider: "ldap")) else {
            Issue.record("a directory that is down answered the account check")
            return
        }
    }

    @Test func ldapwhoamiAgreesForEveryAccount() async throws {
        let slapd = try SlapdFixture.shared.get()
        let provider = try Self.provider()
        for (user, password, _) in SlapdFixture.accounts {
            for attempt in [password, password + "-wrong"] {
                let (status, _) = try shell(
                    "LDAPTLS_CACERT='\(slapd.caFile)' ldapwhoami -ZZ -x -H \(slapd.uri) -D '\(slapd.dn(user))' -y /dev/stdin",
                    input: attempt)
                let outcome = try await login(provider, user, attempt)
                let admitted = if case .authenticated = outcome { true } else { false }
                #expect(admitted == (status == 0), "\(user) with \(attempt == password ? "the" : "a wrong") password")
            }
        }
    }

    /// slapd matches `CAROL` and fullwidth `ｃａｒｏｌ` to carol: the provider names the entry's own uid
    /// before anything is asked, so every spelling counts against one pam_faillock tally, and once it is
    /// locked the right password gets the same answer as a wrong one.
    @Test func everySpellingTheDirectoryMatchesSharesOneLockout() async throws {
        let provider = try Self.provider()
        #expect(await provider.lookUpAccount("CAROL") == .known(canonicalName: "carol"))
        #expect(await provider.lookUpAccount("ｃａｒｏｌ") == .known(canonicalName: "carol"))
        #expect(await provider.lookUpAccount("nobody-here") == .unknown)
        let state = temporaryDirectory("gatekeeper-ldap-tally")
        let tallies = state + "/faillock"
        let gatekeeper = Gatekeeper(
            provider: provider, configuration: .init(lockout: LockoutPolicy(deny: 3), failDelay: .zero),
            lockout: try FaillockStore(directory: tallies))
        for spelling in ["carol", "CAROL", "ｃａｒｏｌ"] {
            await #expect(throws: AuthError.invalidCredentials) {
                try await gatekeeper.signIn(try credentials(spelling, "wrong"))
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: tallies) == ["carol"])
        let listed = try shell("faillock --dir '\(tallies)' --user carol")
        #expect(listed.output.split(separator: "\n").count - 2 == 3, "\(listed.output)")
        for (spelling, password) in [("CAROL", "carol-2026"), ("CAROL", "wrong"), ("ｃａｒｏｌ", "carol-2026")] {
            await #expect {
                try await gatekeeper.signIn(try credentials(spelling, password))
            } throws: { ($0 as? AuthError)?.code == .tooManyAttempts }
        }
        // An administrator unlocks her by any spelling the directory matches: gatekeeper-run --unlock CAROL
        // resets carol's file, and makes none for CAROL.
        let slapd = try SlapdFixture.shared.get()
        let config = state + "/ldap.conf"
        try "required ldap uri=\(slapd.uri) base=\(slapd.base) ca=\(slapd.caFile)\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        let unlocked = try run(
            builtExecutable("gatekeeper-run"), ["--config", config, "--state-dir", state, "--unlock", "CAROL"],
            input: "")
        #expect(unlocked.status == 0 && unlocked.stdout.hasPrefix("carol:"), "\(unlocked.stdout)\(unlocked.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tallies) == ["carol"])
        // Unlocked, carol signs in, under her own name.
        #expect(try await gatekeeper.signIn(try credentials("CAROL", "carol-2026")).username == "carol")
    }

    /// slapd's ppolicy overlay: a locked account, a password expired with grace logins, one to change.
    @Test func thePasswordPolicyControlIsAnswered() async throws {
        let provider = try Self.provider()
        #expect(
            try await login(provider, "dave", "dave-2026") == .rejected(.locked(until: nil), canonicalUsername: "dave"))
        #expect(
            try await login(provider, "fay", "fay-2026") == .rejected(.passwordChangeRequired, canonicalUsername: "fay")
        )
        let conversation = ScriptedConversation(.secret("erin-2026"))
        let outcome = try await provider.authenticate(AuthRequest(username: "erin", conversation: conversation))
        try expectAuthenticated(outcome, "erin, with grace logins left, was refused: \(outcome)")
        #expect(
            conversation.messages.contains { $0.hasPrefix("Your password has expired;") && $0.contains("grace login") })
        // A wrong password is only that, locked account or not.
        #expect(try await login(provider, "erin", "wrong") == .rejected(.wrongCredentials, canonicalUsername: "erin"))
    }

    /// Connections are kept between logins, and never more than the bound are open. (Providers for the same
    /// directory share one pool, so the counts are taken before and after.)
    @Test func connectionsAreReusedWithinTheirBound() async throws {
        let sequential = try Self.provider()
        let before = sequential.connectionStatistics.made
        for _ in 0..<10 { _ = try await login(sequential, "alice", "wonderland") }
        #expect(sequential.connectionStatistics.made - before <= 1)
        let concurrent = try Self.provider { $0.connections = 4 }
        let madeBefore = concurrent.connectionStatistics.made
        let outcomes = try await withThrowingTaskGroup(of: AuthOutcome.self) { group in
            for index in 0..<16 {
                let (user, password) = index.isMultiple(of: 2) ? ("alice", "wonderland") : ("bob", "builder")
                group.addTask {
                    try await concurrent.authenticate(
                        AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { if case .authenticated = $0 { true } else { false } })
        #expect(concurrent.connectionStatistics.mostOpen <= 4)
        #expect(concurrent.connectionStatistics.made - madeBefore <= 4)
    }

    @Test func anEmptyPasswordNeverReachesTheServer() async throws {
        // An empty simple bind is an unauthenticated bind, which the server would accept.
        #expect(try await login(try Self.provider(), "alice", "") == .rejected(.wrongCredentials))
    }

    @Test(arguments: [
        "*", "alice*", "*)(uid=*", "alice)(|(uid=*", "\\2a", "al\\5cice", "(uid=alice)", "alice\0", "bob)(cn=*",
    ])
    func filterMetacharactersMatchNoOtherEntry(_ name: String) async throws {
        let outcome = try await login(try Self.provider(), name, "wonderland")
        #expect(outcome == .notMine, "\(name.debugDescription): \(outcome)")
        #expect(!LDAPAuthProvider.escapedForFilter(name).contains { "*()".contains($0) })
    }

    @Test func tlsIsRequiredAndChecked() async throws {
        // A CA that did not sign the server's certificate: the connection is refused, nothing is sent.
        let other = temporaryDirectory("gatekeeper-other-ca")
        _ = try shell(
            "openssl req -x509 -newkey rsa:2048 -nodes -keyout '\(other)/key.pem' -out '\(other)/cert.pem' -days 1 -subj /CN=other"
        )
        guard
            case .unavailable = try await login(
                try Self.provider { $0.caFile = other + "/cert.pem" }, "alice", "wonderland")
        else {
            Issue.record("a server certificate from another CA was accepted")
            return
        }
        // A server that refuses StartTLS gets no password: the login is unavailable.
        let plain = try SlapdFixture(tls: false)
        defer { plain.kill() }
        let refused = try await login(
            LDAPAuthProvider(.init(uris: [plain.uri], base: plain.base, caFile: plain.caFile, timeout: .seconds(3))),
            "alice", "wonderland")
        guard case .unavailable(let reason) = refused else {
            Issue.record("a server refusing StartTLS was used: \(refused)")
            return
        }
        #expect(reason.contains("StartTLS"))
        // Plain LDAP only when the configuration says so.
        guard case .authenticated = try await login(try Self.provider { $0.requiresTLS = false }, "alice", "wonderland")
        else {
            Issue.record("plain LDAP, asked for explicitly, failed")
            return
        }
    }

    /// A conversation that kills a server when the password is asked, and then answers.
    final class KillingConversation: Conversation, Sendable {
        let server: SlapdFixture
        let password: String
        init(_ server: SlapdFixture, _ password: String) {
            self.server = server
            self.password = password
        }
        func ask(_ prompt: String) async throws(AuthError) -> String { password }
        func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
            #expect(server.kill())
            return Secret(copying: password.utf8)
        }
        func show(_ message: String, as kind: MessageKind) async {}
    }

    /// The directory dies during a login: the entry is unavailable and the next entry of the stack answers;
    /// with two servers, the second answers.
    @Test func aServerKilledDuringTheLoginFallsBack() async throws {
        let shared = try SlapdFixture.shared.get()
        let doomed = try SlapdFixture()
        func ldap(_ uris: [String]) -> LDAPAuthProvider {
            LDAPAuthProvider(.init(uris: uris, base: doomed.base, caFile: doomed.caFile, timeout: .seconds(3)))
        }
        let stack = ProviderChain([
            .init(
                ChainControl(
                    actions: [.success: .done, .authinfoUnavailable: .ignore, .userUnknown: .ignore], default: .die),
                ldap([doomed.uri])),
            .init(.required, StubAuthProvider(accounts: ["alice": ("wonderland", [])])),
        ])
        let answer = try await stack.authenticateWithTrace(
            AuthRequest(username: "alice", conversation: KillingConversation(doomed, "wonderland")))
        let outcome = answer.outcome
        let identity = try expectAuthenticated(outcome, "the stack did not fall back: \(outcome)")
        #expect(identity.provider == "stub")
        #expect(answer.trace?.steps.first?.result == .authinfoUnavailable)
        // Two servers, the first dead: the second answers.
        guard case .authenticated(let second) = try await login(ldap([doomed.uri, shared.uri]), "alice", "wonderland")
        else {
            Issue.record("failover to the second slapd failed")
            return
        }
        #expect(second.provider == "ldap")
    }

    @Test func aDeadServerIsUnavailableAndTheNextOneAnswers() async throws {
        let slapd = try SlapdFixture.shared.get()
        let dead = "ldap://127.0.0.1:1"
        guard case .unavailable = try await login(try Self.provider { $0.uris = [dead] }, "alice", "wonderland") else {
            Issue.record("a dead server was not unavailable")
            return
        }
        guard
            case .authenticated = try await login(
                try Self.provider { $0.uris = [dead, slapd.uri] }, "alice", "wonderland")
        else {
            Issue.record("failover to the second server failed")
            return
        }
    }
}

/// The plugin as a configuration names it, through gatekeeper-run.
@Suite(.timeLimit(.minutes(1)))
struct LDAPConfigurationTests {
    @Test func gatekeeperRunLogsInThroughTheDirectory() throws {
        let slapd = try SlapdFixture.shared.get()
        let directory = temporaryDirectory("gatekeeper-ldap-conf")
        let config = directory + "/ldap.conf"
        try """
        delay 0
        required ldap uri=ldap://127.0.0.1:1,\(slapd.uri) base=\(slapd.base) ca=\(slapd.caFile) timeout=3

        """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        func attempt(_ password: String) throws -> RunResult {
            try run(
                builtExecutable("gatekeeper-run"),
                [
                    "--config", config, "--state-dir", directory + "/state", "--user", "carol", "--password-stdin",
                    "--",
                    "sh", "-c", "echo $GATEKEEPER_USER $GATEKEEPER_PROVIDER",
                ], input: password + "\n")
        }
        let admitted = try attempt("carol-2026")
        #expect(admitted.status == 0 && admitted.stdout == "carol ldap\n", "\(admitted.stderr)")
        #expect(try attempt("wrong").status == 77)
        // With the directory down, the offline cache admits the last good password.
        let stopped = try SlapdFixture()  // its own: stopped below
        defer { stopped.kill() }
        try """
        delay 0
        required ldap uri=\(stopped.uri) base=\(stopped.base) ca=\(stopped.caFile) offline_cache=\(directory)/offline offline_max_age=1d

        """.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try attempt("carol-2026").status == 0)
        #expect(stopped.kill())
        #expect(try attempt("carol-2026").status == 0)
        #expect(try attempt("wrong").status == 77)
        let check = try run(builtExecutable("gatekeeper-run"), ["--check-config", config], input: "")
        #expect(
            check.status == 0
                && check.stdout.contains("required ldap base=\(stopped.base) ca=\(stopped.caFile) offline_cache="))
    }
}

/// A server that accepts connections and then says nothing: cancelling a login waiting on it returns at
/// once, and the connection is shut rather than left waiting for the timeout.
@Suite(.timeLimit(.minutes(1)))
struct LDAPCancellationTests {
    @Test func cancellingALoginWaitingOnASilentServerReturnsAtOnce() async throws {
        let server = try MisbehavingServer(.silent)
        // Operations time out after a minute: far beyond the suite's time limit.
        let provider = LDAPAuthProvider(
            .init(uris: [server.uri], base: "dc=example,dc=test", timeout: .seconds(60)))
        let login = Task {
            try await provider.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("x"))))
        }
        // The connection arrives (and is never answered).
        let accepted = try #require(server.waitForConnection())
        let start = ContinuousClock.now
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(ContinuousClock.now - start < .seconds(30))
        // The provider's side of the connection is shut: the silent server reads end-of-file.
        var byte: UInt8 = 0
        var received = 1
        for _ in 0..<200 {
            received = recv(accepted, &byte, 1, Int32(MSG_DONTWAIT))
            if received == 0 { break }
            usleep(10_000)
        }
        #expect(received == 0, "the connection was left open")
    }
}

/// 1,000 protected actions at once across 50 directory accounts, ten more with wrong passwords, through
/// one provider and its bounded pool of connections: every action runs once and only for its own user.
@Suite(.timeLimit(.minutes(3)))
struct LDAPLoadTests {
    @Test func everyActionRunsOnceAndOnlyForItsOwnUser() async throws {
        let accounts = SlapdFixture.loadAccounts
        let load = GatekeeperLoad(
            accounts: Array(accounts.prefix(50)), intruders: Array(accounts.dropFirst(50)), actionsPerAccount: 20)
        let result = await load.run(against: try LDAPProviderTests.provider())
        #expect(result.total == 1000, "\(result.total) actions ran, \(result.failed) failed")
        #expect(result.dismissed == 200 && result.wrongIdentity == 0)
        #expect(load.isSound(result))
    }
}

/// A directory that cannot be reached: every such server is unavailable, never a rejection, the login
/// ends within the configured timeout, and the next server (or the next entry) answers.
@Suite(.timeLimit(.minutes(2)))
struct LDAPFaultTests {
    func login(_ uris: [String]) async throws -> AuthOutcome {
        let slapd = try SlapdFixture.shared.get()
        let provider = LDAPAuthProvider(
            .init(uris: uris, base: slapd.base, caFile: slapd.caFile, timeout: .seconds(1)))
        return try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
    }

    @Test(arguments: [MisbehavingServer.Behaviour.dropping, .silent])
    func aServerThatDropsOrNeverAnswersIsUnavailable(_ behaviour: MisbehavingServer.Behaviour) async throws {
        let server = try MisbehavingServer(behaviour)
        let alone = try await login([server.uri])
        guard case .unavailable = alone else {
            Issue.record("\(behaviour): \(alone)")
            return
        }
        let slapd = try SlapdFixture.shared.get()
        try expectAuthenticated(
            try await login([server.uri, slapd.uri]), "\(behaviour): the second server did not answer")
    }

    /// A directory whose only server timed out costs logins its time-out once: the logins right after it are
    /// answered "unreachable" at once (an offline cache answers them), without connecting again.
    @Test func aSilentServerCostsItsTimeOutOnce() async throws {
        let server = try MisbehavingServer(.silent)
        let provider = LDAPAuthProvider(.init(uris: [server.uri], base: "dc=example,dc=test", timeout: .seconds(1)))
        for _ in 0..<3 {
            let outcome = try await provider.authenticateOnline(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
            if case .answered(let answer) = outcome {
                Issue.record("a silent server answered: \(answer)")
                return
            }
        }
        #expect(server.connections == 1)
    }

    /// Two providers for one directory — two PAM services' stacks in gatekeeperd — share one pool: once a login
    /// of the first found the first server silent and failed over, the second's next login goes straight to
    /// the second server (the silent one is never connected to again while it rests).
    @Test func aFailoverIsSeenByTheNextLoginOfEveryStack() async throws {
        let slapd = try SlapdFixture.shared.get()
        let server = try MisbehavingServer(.silent)
        func provider() -> LDAPAuthProvider {
            LDAPAuthProvider(
                .init(uris: [server.uri, slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(2)))
        }
        let (sudo, sshd) = (provider(), provider())
        for provider in [sudo, sshd] {
            guard
                case .authenticated = try await provider.authenticate(
                    AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
            else {
                Issue.record("the second server did not answer")
                return
            }
        }
        #expect(server.connections == 1)
    }

    /// Forty logins at once through a provider whose first server drops every connection: each one is
    /// answered by the second, and none is lost or refused.
    @Test func concurrentLoginsFailOverFromADroppingServer() async throws {
        let slapd = try SlapdFixture.shared.get()
        let server = try MisbehavingServer(.dropping)
        let provider = LDAPAuthProvider(
            .init(uris: [server.uri, slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3)))
        let outcomes = await withTaskGroup(of: AuthOutcome?.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try? await provider.authenticate(
                        AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 40)
        #expect(outcomes.allSatisfy { if case .authenticated? = $0 { true } else { false } }, "\(outcomes)")
    }
}

/// `make ldap-demo`: the REPL against a throwaway directory, which is gone when the REPL ends.
@Suite(.timeLimit(.minutes(1)))
struct LDAPDemoTests {
    @Test func theREPLRunsAgainstTheDemoDirectory() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Examples/ldap/demo.sh").standardized.path
        let result = try run(
            URL(fileURLWithPath: "/bin/bash"), [script, builtExecutable("gatekeeper-repl").path],
            input: "login\ncarol\ncarol-2026\nwhoami\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Signed in as") && result.stdout.contains("carol (Carol Example)"))
        let port = try #require(
            result.stdout.split(separator: "ldap://127.0.0.1:").dropFirst().first?.prefix { $0.isNumber })
        #expect(
            try shell("ldapwhoami -x -H ldap://127.0.0.1:\(port)").status != 0, "the demo directory is still running")
    }
}
