import Foundation
import TestSupport
import Testing

/// The fuzz targets' committed corpus — their seeds and every input a fuzzing run found to break a
/// property — replayed through the same target code in an ordinary build, so a fixed defect stays fixed.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    static let targets = [
        "users-file", "configuration", "validation", "pam-conversation", "helper-protocol", "faillock", "ldap-filter",
        "oidc-token",
    ]
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus").standardized

    @Test("every corpus input of the target keeps its properties", arguments: targets)
    func corpusReplays(_ target: String) throws {
        let directory = Self.corpus.appendingPathComponent(target).path
        let inputs = try FileManager.default.contentsOfDirectory(atPath: directory).count
        #expect(inputs > 0, "the corpus of \(target) is empty")
        let result = try run(builtExecutable("gatekeeper-fuzz"), [target, directory], input: "")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\(target): \(inputs) inputs, no property broken\n")
    }

    @Test("an unknown target is a usage error, not an empty success")
    func unknownTarget() throws {
        let result = try run(builtExecutable("gatekeeper-fuzz"), ["no-such-target", "/dev/null"], input: "")
        #expect(result.status == 2)
        #expect(result.stderr.contains("usage: gatekeeper-fuzz users-file|"))
    }
}
