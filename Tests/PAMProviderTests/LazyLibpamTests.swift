import Foundation
import TestSupport
import Testing

/// The tools load libpam the first time a PAM transaction starts rather than linking it
/// (Sources/CLibraries/CPAMLoader), and load it as a linked library would be: with its functions visible to every
/// module, so a PAM module built without `-lpam` (relying on the program for libpam's functions, as
/// some third-party modules do) still loads. Checked through the tools themselves, which link nothing
/// of PAM (the test process links libpam and would hide the difference).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct LazyLibpamTests {
    struct Fixture {
        let directory: String

        init() throws {
            guard let matrix = PAMFixture.pamMatrix else {
                throw FixtureError("pam_matrix.so was not found; install libpam-wrapper (make test does).")
            }
            directory = try trustedDirectory()
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../Fixtures/pam_gatekeeper_fixture.c").standardized.path
            let module = directory + "/pam_gatekeeper_unlinked.so"
            // No -lpam: pam_get_item, pam_set_item and the rest resolve only if libpam's are global.
            let (status, output) = try shell("cc -shared -fPIC -O1 -o '\(module)' '\(source)'")
            guard status == 0 else { throw FixtureError("cc could not build the fixture module:\n\(output)") }
            let needed = try shell("readelf -d '\(module)'").output
            guard !needed.contains("libpam") else { throw FixtureError("the module links libpam:\n\(needed)") }
            let passdb = directory + "/passdb"
            try "alice:secret:gk-unlinked\n".write(toFile: passdb, atomically: true, encoding: .utf8)
            // casefold: the module lowercases the name through pam_get_item and pam_set_item.
            try """
            auth required \(module) casefold
            auth required \(matrix) passdb=\(passdb)
            account required \(matrix) passdb=\(passdb)

            """.write(toFile: directory + "/gk-unlinked", atomically: true, encoding: .utf8)
        }
    }

    static let fixture = Result { try Fixture() }

    @Test(arguments: [false, true])
    func aModuleBuiltWithoutLibpamLoadsInTheTool(isolated: Bool) throws {
        let fixture = try Self.fixture.get()
        let state = temporaryDirectory("gatekeeper-lazy-pam-state")
        var arguments = ["--provider", "pam", "--service", "gk-unlinked", "--pam-dir", fixture.directory]
        if isolated {
            let helper = fixture.directory + "/gatekeeper-pam-helper"
            if !FileManager.default.fileExists(atPath: helper) {
                try FileManager.default.copyItem(atPath: builtExecutable("gatekeeper-pam-helper").path, toPath: helper)
                chmod(helper, 0o755)
            }
            arguments += ["--isolated", "yes", "--pam-helper", helper]
        }
        arguments += ["--state-dir", state, "--user", "ALICE", "--password-stdin", "--", "true"]
        let result = try run(builtExecutable("gatekeeper-run"), arguments, input: "secret\n")
        #expect(result.status == 0, "isolated \(isolated): \(result.status) \(result.stderr)")
    }
}
