import Authentication
import AuthenticationTesting
import Foundation
import GatekeeperHost
import LDAPProvider
import OfflineCache
import ProviderPlugins
import TestSupport
import Testing

/// The LDAP provider's offline cache: its options, and the directory down against slapd. The cache
/// itself is tested with a backend double in OfflineCacheTests.
@Suite(.timeLimit(.minutes(2)))
struct LDAPOfflineCacheTests {
    let directory = temporaryDirectory("gatekeeper-offline") + "/cache"

    /// An offline cache in `directory` over `slapd`, as a host's configuration names it.
    func cache(_ slapd: SlapdFixture, refreshInterval: Duration = .seconds(15 * 60)) throws -> OfflineCachingProvider {
        try OfflineCachingProvider(
            wrapping: LDAPAuthProvider(
                .init(uris: [slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3))),
            directory: directory, maxAge: .seconds(86_400), refreshInterval: refreshInterval)
    }

    func login(_ provider: any AuthProvider, _ password: String) async throws -> AuthOutcome {
        try await provider.authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret(password))))
    }

    /// An age past every bound is refused with the option named, not an arithmetic trap (it ended the
    /// process with SIGILL).
    @Test(arguments: ["200000000000000d", "91d", "0d", "-1d", "7x"])
    func anOfflineAgePastItsBoundIsRefused(_ age: String) {
        #expect(throws: ConfigurationError.self) {
            try LDAPProviderPlugin.makeProvider(
                ProviderOptions([
                    "uri": "ldap://127.0.0.1:1", "base": "dc=example,dc=test", "offline_cache": directory,
                    "offline_max_age": age,
                ]))
        }
    }

    /// `groups=` is an option the plugin declares (a configuration naming it was refused with "ldap has no
    /// option groups", and its value was read all the same).
    @Test func theGroupsOptionIsDeclared() throws {
        let registry = ProviderRegistry([LDAPProviderPlugin.self])
        #expect(registry.plugin(named: "ldap")?.options.contains { $0.name == "groups" } == true)
        let text = "required ldap uri=ldap://127.0.0.1:1 base=dc=example,dc=test groups=memberof\n"
        let stack = try StackConfiguration.parse(Array(text.utf8), file: "t.conf", registry: registry) {
            path throws(ConfigurationError) in
            throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, "no includes")
        }
        #expect(stack.entries.first?.options["groups"] == "memberof")
    }

    @Test func theDirectoryDownLogsInFromTheCache() async throws {
        let slapd = try SlapdFixture()  // its own: this test stops it
        defer { slapd.kill() }
        let ldap = try cache(slapd)
        try expectAuthenticated(try await login(ldap, "wonderland"), "the directory login failed")
        #expect(slapd.kill())
        let identity = try expectAuthenticated(
            try await login(ldap, "wonderland"), "the cached directory login was refused while the directory was down")
        #expect(identity.provider == "ldap" && identity.attributes["offline"] == "yes")
        // Another configuration naming the same directory (here: another filter) keeps a cache of its own.
        let narrower = try OfflineCachingProvider(
            wrapping: LDAPAuthProvider(
                .init(
                    uris: [slapd.uri], base: slapd.base, filter: "(&(objectClass=posixAccount)(uid=%s)(gidNumber=0))",
                    caFile: slapd.caFile, timeout: .seconds(3))),
            directory: directory, maxAge: .seconds(86_400))
        #expect(narrower.filePath != ldap.filePath)
        guard case .unavailable = try await login(narrower, "wonderland") else {
            Issue.record("a login cached through one filter was admitted offline through another")
            return
        }
        try slapd.restart()
        // A reachable directory that refuses the service account is not offline: the cache stays out.
        var refusing = LDAPAuthProvider.Configuration(
            uris: [slapd.uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3))
        refusing.bindDN = "cn=admin,\(slapd.base)"
        refusing.bindPassword = Secret(copying: "not-the-password".utf8)
        let refused = try OfflineCachingProvider(
            wrapping: LDAPAuthProvider(refusing), directory: directory, maxAge: .seconds(86_400))
        guard case .unavailable(let reason) = try await login(refused, "wonderland") else {
            Issue.record("a refused service bind let the offline cache answer")
            return
        }
        #expect(reason.contains("service account"))
    }

    /// An administrator's reset (alice), lock (bob, ppolicy's pwdAccountLockedTime), deletion (carol) and a
    /// second entry the filter finds (load0, which the online login refuses as ambiguous; it held up every
    /// later check when it answered "cannot tell") while the directory answers end those cached logins at
    /// the next check, before the directory is
    /// down: the old passwords are refused offline (before the check, they were admitted). An account
    /// nothing happened to (kim, whose entry has no pwdChangedTime: under ppolicy it has no stamp) stays.
    @Test func aResetALockAndADeletionEndCachedLoginsAtTheNextCheck() async throws {
        // Without an offline cache there is nothing to refresh: a usage error, not a silent success.
        let bare = try run(
            builtExecutable("gatekeeper-run"), ["--provider", "mock", "--refresh-offline"], input: "")
        #expect(bare.status == 64 && bare.stderr.contains("no backend of this stack keeps an offline cache"), "\(bare)")
        let slapd = try SlapdFixture()  // its own: this test changes its accounts
        defer { slapd.kill() }
        let online = try cache(slapd)
        // The same configuration: while slapd is stopped, its logins are offline ones.
        let offline = try cache(slapd)
        let accounts = [
            ("alice", "wonderland"), ("bob", "builder"), ("carol", "carol-2026"), ("load0", "load-password-0"),
            ("kim", "kim-2026"),
        ]
        for (user, password) in accounts {
            let outcome = try await online.authenticate(
                AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
            #expect(outcome.pamResult == .success, "\(user): \(outcome)")
        }
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        for command in [
            "ldappasswd \(admin) -s reset-by-admin \(slapd.dn("alice"))",
            "printf 'dn: \(slapd.dn("bob"))\\nchangetype: modify\\nadd: pwdAccountLockedTime\\n"
                + "pwdAccountLockedTime: 000001010000Z\\n' | ldapmodify -e relax \(admin)",
            "ldapdelete \(admin) \(slapd.dn("carol"))",
            // A second entry the filter finds for load0: the login is refused as ambiguous, and so is the cache.
            "printf 'dn: cn=load0-copy,ou=people,\(slapd.base)\\nobjectClass: inetOrgPerson\\nobjectClass: posixAccount\\n"
                + "cn: load0-copy\\nsn: Copy\\nuid: load0\\nuidNumber: 4000\\ngidNumber: 2000\\nhomeDirectory: /tmp\\n"
                + "userPassword: chosen-by-whoever\\n' | ldapadd \(admin)",
        ] {
            let (status, output) = try shell(command)
            try #require(status == 0, "\(command): \(output)")
        }
        func offlineLogin(_ user: String, _ password: String) async throws -> AuthOutcome {
            try await offline.authenticate(
                AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
        }
        // Before the check the old password still serves offline: what the check is for.
        #expect(slapd.kill())
        #expect(try await offlineLogin("alice", "wonderland").pamResult == .success)
        // What a timer runs: gatekeeper-run --refresh-offline asks about every cached login.
        let state = temporaryDirectory("gatekeeper-offline-refresh")
        func refresh() throws -> RunResult {
            let config = state + "/ldap.conf"
            try
                "required ldap uri=\(slapd.uri) base=\(slapd.base) ca=\(slapd.caFile) timeout=3s offline_cache=\(directory)\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            chmod(config, 0o600)
            return try run(builtExecutable("gatekeeper-run"), ["--config", config, "--refresh-offline"], input: "")
        }
        let unreachable = try refresh()
        #expect(unreachable.status == 69, "\(unreachable)")
        #expect(
            unreachable.stdout
                == "ldap (\(directory)): 0 confirmed, 0 forgotten, 5 not checked (the directory could not say)\n")
        try slapd.restart()
        let refreshed = try refresh()
        #expect(refreshed.status == 0, "\(refreshed)")
        #expect(refreshed.stdout == "ldap (\(directory)): 1 confirmed, 4 forgotten, 0 not checked\n")
        #expect(slapd.kill())
        for (user, password) in accounts.prefix(4) {
            guard case .unavailable = try await offlineLogin(user, password) else {
                Issue.record("\(user)'s withdrawn password was admitted offline after the check")
                continue
            }
        }
        let identity = try expectAuthenticated(
            try await offlineLogin("kim", "kim-2026"),
            "an account nothing happened to lost its cached login at the check")
        #expect(identity.attributes["offline"] == "yes")
    }

    /// A password changed in the directory moments after a login (within the 5 s a look-up's entry is used
    /// again): the next online login, with the new password, reads the entry afresh for its bind, so the cache
    /// keeps the new password's verifier — offline, the new password signs in and the old one does not.
    @Test func aPasswordChangedMomentsAfterALoginIsTheOneCached() async throws {
        let slapd = try SlapdFixture()  // its own: this test changes a password
        defer { slapd.kill() }
        let provider = try cache(slapd)
        #expect(try await login(provider, "wonderland").pamResult == .success)
        let new = "Changed-Moments-Later-2026"
        try slapd.changeOwnPassword(of: "alice", from: "wonderland", to: new)
        #expect(try await login(provider, new).pamResult == .success)
        #expect(slapd.kill())
        try expectAuthenticated(try await login(provider, new), "the new password was refused offline")
        guard case .rejected = try await login(provider, "wonderland") else {
            Issue.record("the old password was admitted offline after the new one signed in")
            return
        }
    }

    /// A login of the old password whose bind answers late — more than the 5 s a search's entry is used again —
    /// while the password is changed elsewhere (a proxy between the provider and slapd holds kim's bind
    /// answer back): the success is not saved under the reset's stamp, and after the check the old password is
    /// refused offline. (It was saved under the new stamp, read after the answer, and every check confirmed it.)
    @Test func aResetWhileABindAnswersLateIsNotLentToTheOldPassword() async throws {
        let slapd = try SlapdFixture()  // its own: this test resets kim's password
        defer { slapd.kill() }
        let proxy = try DelayingProxy(to: slapd.port, delaying: slapd.dn("kim"), by: .seconds(6))
        defer { proxy.stop() }
        var configuration = LDAPAuthProvider.Configuration(uris: [proxy.uri], base: slapd.base, timeout: .seconds(20))
        configuration.requiresTLS = false
        let cache = try OfflineCachingProvider(
            wrapping: LDAPAuthProvider(configuration), directory: directory, maxAge: .seconds(86_400),
            refreshInterval: .seconds(60))
        func login(_ password: String) async throws -> AuthOutcome {
            try await cache.authenticate(
                AuthRequest(username: "kim", conversation: ScriptedConversation(.secret(password))))
        }
        let inFlight = Task { try await login("kim-2026") }
        #expect(await eventually { FileManager.default.fileExists(atPath: proxy.held) }, "no bind was held back")
        // Changed elsewhere (an administrator's reset is flagged `pwdReset` under this policy, which the check
        // finds by itself).
        try slapd.changeOwnPassword(of: "kim", from: "kim-2026", to: "kim-changed-2026")
        #expect(try await inFlight.value.pamResult == .success, "the directory checked the old password first")
        _ = await cache.refresh(dueOnly: false)
        #expect(slapd.kill())
        guard case .unavailable = try await login("kim-2026") else {
            Issue.record("the password reset while its login was in flight was admitted offline")
            return
        }
    }

    /// A success answered late (4 s, within the 5 s a search's entry is kept) after the account was reset or
    /// locked and a check in another process removed its entry: the success does not put it back — its standing
    /// after the answer is searched afresh, never the entry its own search kept before the bind.
    @Test(arguments: ["reset", "lock"])
    func aLateSuccessDoesNotUndoAWithdrawal(_ withdrawal: String) async throws {
        let slapd = try SlapdFixture()  // its own: this test resets or locks kim
        defer { slapd.kill() }
        let proxy = try DelayingProxy(to: slapd.port, delaying: slapd.dn("kim"), by: .seconds(4))
        defer { proxy.stop() }
        func provider() throws -> OfflineCachingProvider {
            var configuration = LDAPAuthProvider.Configuration(
                uris: [proxy.uri], base: slapd.base, timeout: .seconds(20))
            configuration.requiresTLS = false
            return try OfflineCachingProvider(
                wrapping: LDAPAuthProvider(configuration), directory: directory, maxAge: .seconds(86_400))
        }
        let cache = try provider()
        func login(_ password: String) async throws -> AuthOutcome {
            try await cache.authenticate(
                AuthRequest(username: "kim", conversation: ScriptedConversation(.secret(password))))
        }
        #expect(try await login("kim-2026").pamResult == .success)
        try? FileManager.default.removeItem(atPath: proxy.held)
        let inFlight = Task { try await login("kim-2026") }
        #expect(await eventually { FileManager.default.fileExists(atPath: proxy.held) }, "no bind was held back")
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        let change =
            withdrawal == "reset"
            ? "ldappasswd \(admin) -s reset-by-admin-2026 \(slapd.dn("kim")) && printf 'dn: \(slapd.dn("kim"))\\n"
                + "changetype: modify\\ndelete: pwdReset\\n' | ldapmodify -e relax \(admin)"
            : "printf 'dn: \(slapd.dn("kim"))\\nchangetype: modify\\nadd: pwdAccountLockedTime\\n"
                + "pwdAccountLockedTime: 000001010000Z\\n' | ldapmodify \(admin)"
        let (done, output) = try shell(change)
        try #require(done == 0, "\(change): \(output)")
        #expect(await (try provider()).refresh(dueOnly: false) == .init(removed: 1))
        _ = try await inFlight.value
        #expect(slapd.kill())
        if case .authenticated = try await login("kim-2026") {
            Issue.record("a late success put back what the \(withdrawal) and the check had removed")
        }
    }

    /// A group the directory takes the account out of admits it no more offline once the entry is checked: alice,
    /// cached in staff (a posixGroup naming her), taken out of it, is offline without it after the check.
    @Test func aGroupTakenAwayInTheDirectoryIsGoneOfflineAfterTheCheck() async throws {
        let slapd = try SlapdFixture()  // its own: this test changes the staff group
        defer { slapd.kill() }
        let cache = try self.cache(slapd, refreshInterval: .seconds(60))
        guard case .authenticated(let online) = try await login(cache, "wonderland") else {
            Issue.record("the directory login failed")
            return
        }
        try #require(online.groups.contains("staff"))
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        let command =
            "printf 'dn: cn=staff,ou=groups,\(slapd.base)\\nchangetype: modify\\ndelete: memberUid\\nmemberUid: alice\\n'"
            + " | ldapmodify \(admin)"
        let (done, output) = try shell(command)
        try #require(done == 0, "\(command): \(output)")
        #expect(await cache.refresh(dueOnly: false) == .init(confirmed: 1))
        #expect(slapd.kill())
        guard case .authenticated(let offline) = try await login(cache, "wonderland") else {
            Issue.record("the offline login failed")
            return
        }
        #expect(!offline.groups.contains("staff"), "alice is still in staff offline: \(offline.groups)")
    }

    /// A name the directory gives to another entry: kim is cached, then deleted and made again as another
    /// person with another password (an entry with no `pwdChangedTime`, as kim's is). One wrong bind by anyone
    /// writes failed binds into the new entry; the check must not take it for the old kim's entry and keep her
    /// password (it did: a `modifyTimestamp` with failed binds recorded read as the same password).
    @Test func aNameGivenToAnotherEntryEndsTheOldOnesOfflineLogin() async throws {
        let slapd = try SlapdFixture()  // its own: this test replaces kim's entry
        defer { slapd.kill() }
        let cache = try self.cache(slapd, refreshInterval: .seconds(60))
        func login(_ password: String) async throws -> AuthOutcome {
            try await cache.authenticate(
                AuthRequest(username: "kim", conversation: ScriptedConversation(.secret(password))))
        }
        #expect(try await login("kim-2026").pamResult == .success)
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        let entry = """
            dn: \(slapd.dn("kim"))
            objectClass: inetOrgPerson
            objectClass: posixAccount
            uid: kim
            cn: Another Kim
            sn: Example
            uidNumber: 2200
            gidNumber: 2000
            homeDirectory: /home/kim
            userPassword: another-kim-2026

            """
        let file = temporaryDirectory("gatekeeper-reused") + "/kim.ldif"
        try entry.write(toFile: file, atomically: true, encoding: .utf8)
        for command in ["ldapdelete \(admin) \(slapd.dn("kim"))", "ldapadd \(admin) -f \(file)"] {
            let (done, output) = try shell(command)
            try #require(done == 0, "\(command): \(output)")
        }
        guard case .rejected(.wrongCredentials, _) = try await login("a-guess") else {
            Issue.record("a wrong guess was not refused as one")
            return
        }
        try await Task.sleep(for: .seconds(6))  // past the 5 s a look-up's entry is used again
        #expect(await cache.refresh(dueOnly: false) == .init(removed: 1))
        #expect(slapd.kill())
        guard case .unavailable = try await login("kim-2026") else {
            Issue.record("the old kim's password was admitted offline after her name went to another entry")
            return
        }
    }

    /// Under a password policy a failed bind is written into the entry (`pwdFailureTime`, a new
    /// `modifyTimestamp`): someone's wrong guesses for kim — whose entry keeps no `pwdChangedTime` — and kim's
    /// own next login, whose bind clears them, leave her offline login standing at the check. A password an
    /// administrator then deletes (ppolicy clears the failures, keeps no `pwdChangedTime`) ends it, guesses or
    /// not before; so does one set for bob after guesses (ppolicy then keeps `pwdChangedTime`).
    @Test func wrongGuessesOnlineDoNotEndAnOfflineLoginAtTheCheck() async throws {
        let slapd = try SlapdFixture()  // its own: this test changes kim's and bob's entries
        defer { slapd.kill() }
        let cache = try self.cache(slapd, refreshInterval: .seconds(60))
        func login(_ user: String, _ password: String) async throws -> AuthOutcome {
            try await cache.authenticate(
                AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
        }
        func guess(_ user: String) async throws {
            guard case .rejected(.wrongCredentials, _) = try await login(user, "a-guess") else {
                Issue.record("a wrong guess was not refused as one")
                return
            }
        }
        /// The check, past the 5 s a look-up's entry is used again, so that it reads what was written.
        func check() async throws -> OfflineCachingProvider.RefreshReport {
            try await Task.sleep(for: .seconds(6))
            return await cache.refresh(dueOnly: false)
        }
        let admin = "-x -H \(slapd.uri) -D cn=admin,\(slapd.base) -w admin-secret"
        #expect(try await login("kim", "kim-2026").pamResult == .success)
        #expect(try await login("bob", "builder").pamResult == .success)
        try await guess("kim")
        try await guess("kim")
        try await guess("bob")
        let (status, failures) = try shell("ldapsearch -LLL \(admin) -b \(slapd.dn("kim")) -s base pwdFailureTime")
        try #require(status == 0 && failures.contains("pwdFailureTime"), "the guesses were not written: \(failures)")
        #expect(try await check() == .init(confirmed: 2))
        #expect(try await login("kim", "kim-2026").pamResult == .success)
        #expect(try await check() == .init(confirmed: 2))
        try await guess("kim")
        #expect(try await check() == .init(confirmed: 2))
        for command in [
            "printf 'dn: \(slapd.dn("kim"))\\nchangetype: modify\\ndelete: userPassword\\n' | ldapmodify \(admin)",
            "ldappasswd \(admin) -s set-by-admin-2026 \(slapd.dn("bob"))",
        ] {
            let (done, output) = try shell(command)
            try #require(done == 0, "\(command): \(output)")
        }
        #expect(try await check() == .init(removed: 2))
        #expect(slapd.kill())
        for (user, password) in [("kim", "kim-2026"), ("bob", "builder")] {
            guard case .unavailable = try await login(user, password) else {
                Issue.record("\(user)'s password of before the administrator's change was admitted offline")
                continue
            }
        }
    }
}
