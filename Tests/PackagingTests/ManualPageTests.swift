import Foundation
import TestSupport
import Testing

/// The manual pages say what the tools do: every option and exit status a tool's `--help` names is in its
/// page, every provider is described, and the pages pass mandoc's and groff's checks.
@Suite("Manual pages")
struct ManualPageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized
    static let tools = ["gatekeeper-run", "gatekeeper-passwd", "gatekeeper-repl"]
    static let pages = [
        "gatekeeper-run.1", "gatekeeper-passwd.1", "gatekeeper-repl.1", "gatekeeper.conf.5", "gatekeeperd.8",
        "pam_gatekeeper.8",
    ]

    /// A page's roff source with its escapes for `-` undone, as a reader sees the options.
    static func page(_ name: String) throws -> String {
        let source = try String(contentsOf: root.appendingPathComponent("man/\(name)"), encoding: .utf8)
        return source.replacingOccurrences(of: "\\-", with: "-")
    }

    static func help(_ tool: String) throws -> String {
        let result = try run(builtExecutable(tool), ["--help"], input: "")
        #expect(result.status == 0, "\(tool) --help: \(result.stderr)")
        return result.stdout
    }

    /// The text of a page's section, from its `.SH` line to the next; empty when there is none.
    static func section(_ name: String, of page: String) -> String {
        guard let start = page.range(of: "\n.SH \(name)\n") else { return "" }
        let end = page.range(of: "\n.SH ", range: start.upperBound..<page.endIndex)?.lowerBound ?? page.endIndex
        return String(page[start.upperBound..<end])
    }

    /// Every `-x` or `--name` word of a text.
    static func options(in text: String) -> Set<String> {
        let separators = CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "[](),|"))
        var options = Set<String>()
        for word in text.components(separatedBy: separators) {
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: ",.;:"))
            let scalars = Array(trimmed.unicodeScalars)
            let start = trimmed.hasPrefix("--") ? 2 : 1
            guard trimmed.hasPrefix("-"), scalars.count > start, CharacterSet.letters.contains(scalars[start]) else {
                continue
            }
            options.insert(trimmed)
        }
        return options
    }

    @Test("every option in a tool's --help is in its manual page", arguments: tools)
    func everyOptionIsDocumented(_ tool: String) throws {
        let options = Self.options(in: try Self.help(tool))
        #expect(options.count >= 3, "\(tool) --help names too few options to be read right: \(options)")
        let page = try Self.page("\(tool).1")
        // Described where a reader looks for it, not only named in the synopsis or an example.
        let described = Self.section("OPTIONS", of: page) + Self.section("PROVIDERS", of: page)
        let missing = options.sorted().filter { !described.contains($0) }
        #expect(missing.isEmpty, "\(tool).1 does not describe these under OPTIONS or PROVIDERS")
    }

    @Test("every option in gatekeeperd's --help is in gatekeeperd(8)")
    func everyDaemonOptionIsDocumented() throws {
        let options = Self.options(in: try Self.help("gatekeeperd"))
        #expect(options.count >= 8, "gatekeeperd --help names too few options to be read right: \(options)")
        let described = Self.section("OPTIONS", of: try Self.page("gatekeeperd.8"))
        let missing = options.sorted().filter { !described.contains($0) }
        #expect(missing.isEmpty, "gatekeeperd.8 does not describe these under OPTIONS")
    }

    /// Every option pam_gatekeeper.so reads is in its page.
    @Test func everyModuleOptionIsDocumented() throws {
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Daemon/PAMModule/pam_gatekeeper.c"), encoding: .utf8)
        let words = ["socket=", "timeout=", "use_first_pass", "try_first_pass", "rename_user", "debug"]
        #expect(words.allSatisfy { source.contains("\"\($0)") })
        let described = Self.section("OPTIONS", of: try Self.page("pam_gatekeeper.8"))
        #expect(words.allSatisfy { described.contains($0) })
    }

    @Test("every exit status in a tool's --help is in its page's EXIT STATUS", arguments: tools)
    func everyExitStatusIsDocumented(_ tool: String) throws {
        let help = try Self.help(tool)
        guard let section = help.range(of: "Exit status") else {
            // The demonstration's help names none; its page still lists them.
            #expect(tool == "gatekeeper-repl")
            return
        }
        let statuses = help[section.upperBound...].split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .compactMap { Int($0) }
        #expect(statuses.count >= 5, "\(tool): \(statuses)")
        let documented = Self.section("EXIT STATUS", of: try Self.page("\(tool).1"))
        #expect(!documented.isEmpty, "\(tool).1 has no EXIT STATUS")
        let missing = statuses.filter { !documented.contains(".B \($0)\n") }
        #expect(missing.isEmpty, "\(tool).1 does not list these exit statuses")
    }

    @Test("every provider and its options are described in gatekeeper-run(1)")
    func everyProviderIsDescribed() throws {
        let help = try Self.help("gatekeeper-run")
        let providers = try #require(help.range(of: "Providers")).upperBound
        let names = help[providers...].split(separator: "\n").compactMap { line -> Substring? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let first = line.split(separator: " ").first,
                first.first?.isLetter == true
            else { return nil }
            return first
        }
        #expect(names.count >= 8, "\(names)")
        let section = Self.section("PROVIDERS", of: try Self.page("gatekeeper-run.1"))
        let missing = names.filter { !section.contains(".B \($0)\n") }
        #expect(missing.isEmpty, "gatekeeper-run.1 does not describe these providers")
    }

    static let mandoc = FileManager.default.isExecutableFile(atPath: "/usr/bin/mandoc")

    @Test(
        "mandoc -Tlint finds nothing to warn about",
        .enabled(if: mandoc, "mandoc is not installed (make test installs it)"),
        arguments: pages)
    func mandocLint(_ page: String) throws {
        let path = Self.root.appendingPathComponent("man/\(page)").path
        let (status, output) = try shell("mandoc -Tlint -Wwarning '\(path)'")
        #expect(status == 0 && output.isEmpty, "\(output)")
    }

    @Test("groff renders it without a warning, and lexgrog finds its NAME", arguments: pages)
    func groffAndLexgrog(_ page: String) throws {
        let path = Self.root.appendingPathComponent("man/\(page)").path
        let (status, output) = try shell("groff -man -ww -z '\(path)'")
        #expect(status == 0 && output.isEmpty, "\(output)")
        let name = page.split(separator: ".").dropLast().joined(separator: ".")
        let (found, description) = try shell("lexgrog '\(path)'")
        #expect(found == 0 && description.contains("\"\(name) - "), "\(description)")
    }
}
