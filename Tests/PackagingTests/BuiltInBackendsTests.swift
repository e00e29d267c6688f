import Foundation
import GatekeeperBackends
import ProviderPlugins
import TestSupport
import Testing

/// The one list of backends reaches every place a user meets one (docs/layout.md, "Adding a backend"):
/// both tools' `--help`, their completion (CompletionTests, from the same list), gatekeeper-run(1)'s
/// PROVIDERS (ManualPageTests), gatekeeper-repl(1) and the pages of docs/; a backend added to the list and
/// left out of any of them fails here.
struct BuiltInBackendsTests {
    static let names = BuiltInBackends.plugins.map { $0.name }

    @Test(arguments: ["gatekeeper-run", "gatekeeper-repl"])
    func everyBackendIsInTheToolsHelp(_ tool: String) throws {
        let help = try ManualPageTests.help(tool)
        let providers = try #require(help.range(of: "Providers")).upperBound
        let listed = Set(
            help[providers...].split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let first = line.split(separator: " ").first
                else { return nil }
                return String(first)
            })
        let missing = Self.names.filter { !listed.contains($0) }
        #expect(missing.isEmpty, "\(tool) --help does not list \(missing)")
    }

    @Test func everyBackendIsInTheREPLsManual() throws {
        let page = try ManualPageTests.page("gatekeeper-repl.1")
        // Named in bold: a word of a `.B` or `.BR` line (`.BR checkpassword " and " helper " ("`).
        let bold = page.split(separator: "\n").filter { $0.hasPrefix(".B ") || $0.hasPrefix(".BR ") }
            .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\"" }) }
        let missing = Self.names.filter { !bold.contains(Substring($0)) }
        #expect(missing.isEmpty, "gatekeeper-repl.1 does not name \(missing)")
    }

    /// Each backend is shown in a page the README links to: run (`--provider NAME`), stacked (`required NAME
    /// …`, a line of a configuration) or written with its options (`` `NAME option=…` ``).
    @Test func everyBackendIsShownInTheDocs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
            .standardized.path
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let pages = try FileManager.default.contentsOfDirectory(atPath: root + "/docs")
            .filter { $0.hasSuffix(".md") && readme.contains("(docs/\($0))") }
        let text = try pages.map { try String(contentsOfFile: root + "/docs/" + $0, encoding: .utf8) }.joined()
        let missing = Self.names.filter { name in
            let shown = try! Regex(
                "--provider +\(name) |(^|\n) *(required|requisite|sufficient|optional|\\[[^\\]\n]*\\]) +-?\(name)( |\n)|`\(name) [a-z_]+="
            )
            return text.firstMatch(of: shown) == nil
        }
        #expect(missing.isEmpty, "no page linked from the README shows \(missing)")
    }

    @Test func theListHasNoDuplicateAndStartsWithTheDemo() {
        #expect(Set(Self.names).count == Self.names.count)
        #expect(Self.names.first == BuiltInBackends.demo)
    }
}
