import Foundation
import TestSupport
import Testing

/// `make run` installs what building needs and nothing more; `make test` installs the test peers too.
@Suite struct MakefileTests {
    /// The recipe `make -n TARGET` would run, from the package's root.
    static func dryRun(_ target: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let make = Process()
        make.executableURL = URL(fileURLWithPath: "/usr/bin/make")
        make.arguments = ["-n", "-C", root.path, target]
        let output = Pipe()
        make.standardOutput = output
        make.standardError = FileHandle.nullDevice
        try make.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        make.waitUntilExit()
        return text
    }

    /// The recipe's words: package names stand between blanks and `;`.
    static func words(_ recipe: String) -> Set<String> {
        Set(recipe.split(whereSeparator: { " \n\t;".contains($0) }).map(String.init))
    }

    static let testPeers = ["slapd", "glewlwyd", "pamtester", "lintian", "mandoc", "oathtool", "apache2-utils", "sudo"]

    @Test func makeRunInstallsOnlyWhatBuildingNeeds() throws {
        let recipe = try Self.dryRun("run")
        #expect(recipe.contains("libpam0g-dev") && recipe.contains("gatekeeper-repl"), "\(recipe)")
        let words = Self.words(recipe)
        for peer in Self.testPeers { #expect(!words.contains(peer), "make run would install \(peer)") }
    }

    @Test func makeTestInstallsTheTestPeers() throws {
        let words = Self.words(try Self.dryRun("deps"))
        for peer in Self.testPeers { #expect(words.contains(peer), "make test would not install \(peer)") }
    }
}
