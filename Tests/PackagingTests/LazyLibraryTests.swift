import Foundation
import TestSupport
import Testing

/// libldap (and GnuTLS, SASL and the rest it brings) is loaded when an LDAP provider is made, not when a
/// tool starts: every run of a tool that uses no directory starts about 2 ms sooner (`make bench`).
@Suite("Libraries loaded on demand")
struct LazyLibraryTests {
    @Test("the tools do not link libldap or GnuTLS", arguments: ["gatekeeper-run", "gatekeeper-repl"])
    func notLinked(_ tool: String) throws {
        let (status, output) = try shell("ldd '\(builtExecutable(tool).path)'")
        #expect(status == 0, "\(output)")
        #expect(output.contains("libpam"), "ldd's output is not what this test reads: \(output)")
        #expect(!output.contains("libldap") && !output.contains("libgnutls"), "\(output)")
    }

    @Test("an LDAP provider made by a tool that does not link libldap loads it")
    func loadedWhenMade() throws {
        // A configuration naming an LDAP provider is checked by building it: the library is loaded then,
        // and the tool's stack is printed. No server is needed to make the provider.
        let directory = temporaryDirectory("lazy-ldap")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = directory + "/ldap.conf"
        try "required ldap uri=ldap://127.0.0.1:1 base=dc=example,dc=org\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let result = try run(builtExecutable("gatekeeper-run"), ["--check-config", configuration], input: "")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("ldap base=dc=example,dc=org uri=ldap://127.0.0.1:1"), "\(result.stdout)")
    }
}
