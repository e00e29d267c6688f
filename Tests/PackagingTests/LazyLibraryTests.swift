import Foundation
import TestSupport
import Testing

/// Every backend's C library is loaded the first time it is called (Sources/CLibraries/CLibraryLoader), not when a
/// tool starts: libldap (with GnuTLS, SASL and the rest it brings), libcurl and OpenSSL, libpam (with
/// libaudit and libcap-ng), libcrypt, apr-util, liboath, libqrencode, libunistring and libpwquality. A
/// run that uses none of them starts without them (about 1.4 ms and 1.5 MiB less, `make bench`).
@Suite("Libraries loaded on demand")
struct LazyLibraryTests {
    @Test(
        "the tools link no backend's library",
        arguments: ["gatekeeper-run", "gatekeeper-repl", "gatekeeper-passwd", "gatekeeper-pam-helper", "gatekeeperd"])
    func notLinked(_ tool: String) throws {
        let (status, output) = try shell("ldd '\(builtExecutable(tool).path)'")
        #expect(status == 0, "\(output)")
        #expect(output.contains("libc.so"), "ldd's output is not what this test reads: \(output)")
        for library in [
            "libldap", "libgnutls", "libcurl", "libcrypto", "libpam.", "libaudit", "libcrypt.", "libaprutil",
            "liboath", "libqrencode", "libunistring", "libpwquality",
        ] {
            #expect(!output.contains(library), "\(tool) links \(library): \(output)")
        }
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
