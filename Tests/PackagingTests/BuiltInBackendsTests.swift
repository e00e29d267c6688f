import Foundation
import GatekeeperBackends
import ProviderPlugins
import TestSupport
import Testing

/// The one list of backends reaches every place a user meets one (docs/layout.md, "Adding a backend"):
/// both tools' `--help` (which their completion reads), gatekeeper-run(1)'s PROVIDERS (ManualPageTests)
/// and gatekeeper-repl(1); a backend added to the list and left out of any of them fails here.
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

    @Test func theListHasNoDuplicateAndStartsWithTheDemo() {
        #expect(Set(Self.names).count == Self.names.count)
        #expect(Self.names.first == BuiltInBackends.demo)
    }
}
