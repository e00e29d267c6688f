import Authentication
import Foundation
import GatekeeperDaemon
import TestSupport
import Testing

/// gatekeeperd checks its offline caches while the directory answers, with no login to prompt it: a withdrawal
/// reaches the cache within `offline_refresh` of the entry's last check (it waited for the next login on the host,
/// which checks four due entries).
@Suite(.timeLimit(.minutes(3)))
struct OfflineChecksTests {
    @Test(.enabled(if: getuid() == 0, "signs in a directory account, which only root's programs may ask for"))
    func aLockInTheDirectoryReachesTheCacheWithNoLogin() throws {
        let slapd = try SlapdFixture()  // its own: this test locks alice
        defer { slapd.kill() }
        let fixture = try DaemonFixture(start: false)
        let cache = fixture.directory + "/offline"
        try fixture.writeService(
            "default",
            entry: "required ldap uri=\(slapd.uri) base=\(slapd.base) ca=\(slapd.caFile) timeout=3s "
                + "offline_cache=\(cache) offline_max_age=7d offline_refresh=60s")
        try fixture.start()
        let signedIn = try DaemonClient(fixture.socket).converse(
            DaemonRequest(.authenticate, service: "sudo", user: "alice"), password: "wonderland")
        try #require(signedIn.result == .success, "the directory login failed: \(signedIn.seen)")
        func cached() -> String {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []
            guard let file = names.first(where: { $0.hasPrefix("offline-logins-") && !$0.hasSuffix(".lock") })
            else { return "" }
            return (try? String(contentsOfFile: cache + "/" + file, encoding: .utf8)) ?? ""
        }
        try #require(cached().contains("alice\t"), "the login was not cached")
        let lock =
            "printf 'dn: \(slapd.dn("alice"))\\nchangetype: modify\\nadd: pwdAccountLockedTime\\n"
            + "pwdAccountLockedTime: 000001010000Z\\n' | ldapmodify -x -H \(slapd.uri) -D cn=admin,\(slapd.base) "
            + "-w admin-secret"
        let (locked, output) = try shell(lock)
        try #require(locked == 0, "ldapmodify: \(output)")
        // Checked once it is 45 s old (three quarters of 60 s), by the check every 15 s: gone within 60 s.
        #expect(eventually(within: 80) { !cached().contains("alice\t") }, "the locked account stayed cached")
    }
}
