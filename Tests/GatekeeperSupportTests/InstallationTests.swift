import GatekeeperSupport
import Testing

/// Where an installed tool looks for its helper and plugins, from where it lies.
@Suite("Installation layout")
struct InstallationTests {
    @Test(
        "a tool in PREFIX/bin uses PREFIX; one elsewhere uses none",
        arguments: [
            ("/usr/bin", "/usr"), ("/usr/local/bin", "/usr/local"), ("/opt/gatekeeper/bin", "/opt/gatekeeper"),
            ("/bin", ""), ("/usr/sbin", nil), ("/home/me/mybin", nil), ("/src/.build/debug", nil), ("/", nil),
        ] as [(String, String?)])
    func prefix(_ directory: String, _ prefix: String?) {
        #expect(Installation.prefix(ofExecutableDirectory: directory) == prefix)
    }

    @Test("this test runner is not in a bin directory: the Debian package's places")
    func places() throws {
        let directory = try #require(Installation.executableDirectory())
        #expect(directory.hasPrefix("/") && !directory.hasSuffix("/bin"))
        #expect(Installation.prefix == "/usr")
        #expect(Installation.helperDirectory == "/usr/libexec/gatekeeper")
        #expect(Installation.pluginDirectory == "/usr/lib/gatekeeper/plugins")
    }
}
