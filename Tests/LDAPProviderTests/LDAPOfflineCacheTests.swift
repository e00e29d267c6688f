import Authentication
import AuthenticationTesting
import Foundation
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
        let slapd = try SlapdFixture.shared.get()
        func ldap(_ uri: String) throws -> OfflineCachingProvider {
            try OfflineCachingProvider(
                wrapping: LDAPAuthProvider(
                    .init(uris: [uri], base: slapd.base, caFile: slapd.caFile, timeout: .seconds(3))),
                directory: directory, maxAge: .seconds(86_400))
        }
        guard case .authenticated = try await login(try ldap(slapd.uri), "wonderland") else {
            Issue.record("the directory login failed")
            return
        }
        guard case .authenticated(let identity) = try await login(try ldap("ldap://127.0.0.1:1"), "wonderland") else {
            Issue.record("the cached directory login was refused while the directory was down")
            return
        }
        #expect(identity.provider == "ldap" && identity.attributes["offline"] == "yes")
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
}
