import Foundation
import GatekeeperBackends
import GatekeeperHost
import ProviderPlugins
import TestSupport
import Testing

/// Every example in the README and docs/ is run, or says why it cannot be: a shell transcript
/// (```console) is run command by command and its output compared line by line, a script (```sh) is run
/// and must succeed, a configuration (```conf) must parse as gatekeeper-run reads one. The line above
/// a block says which (`<!-- doc-test: run -->`), or why not (`<!-- doc-test: skip: REASON -->`); a
/// block with no language, or a shell block with neither, fails. So an example cannot go stale unseen.
@Suite(.serialized)
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized.path

    /// A fenced block: where it is, its language, the marker above it, its lines.
    struct Block: CustomStringConvertible {
        var file: String
        var line: Int
        var language: String
        var marker: String?
        var lines: [String]
        var description: String { "\(file):\(line)" }
    }

    static let pages: [String] = {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root + "/docs")) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    static func blocks(in page: String) throws -> [Block] {
        let text = try String(contentsOfFile: root + "/" + page, encoding: .utf8)
        var found: [Block] = []
        var open: Block?
        var previous: String?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // A block may sit in a list item, indented.
            let line = String(line.drop { $0 == " " })
            if var block = open {
                if line == "```" {
                    found.append(block)
                    open = nil
                } else {
                    block.lines.append(line)
                    open = block
                }
                continue
            }
            if line.hasPrefix("```") {
                let marker = previous.flatMap { $0.hasPrefix("<!-- doc-test:") ? $0 : nil }
                open = Block(
                    file: page, line: index + 1, language: String(line.dropFirst(3)), marker: marker, lines: [])
            } else if !line.isEmpty {
                previous = line
            }
        }
        if let open { Issue.record("\(open): the block is never closed") }
        return found
    }

    static let all: [Block] = pages.flatMap { (try? blocks(in: $0)) ?? [] }

    /// What the marker says: run, or skip for a reason (which must be given).
    enum Decision: Equatable {
        case run
        case skip(String)
        case none
    }

    static func decision(_ block: Block) -> Decision {
        guard let marker = block.marker else { return .none }
        let body = marker.dropFirst("<!-- doc-test:".count).replacingOccurrences(of: "-->", with: "")
            .trimmingCharacters(in: .whitespaces)
        if body == "run" { return .run }
        if body.hasPrefix("skip:") {
            return .skip(String(body.dropFirst(5)).trimmingCharacters(in: .whitespaces))
        }
        return .none
    }

    @Test func thePagesHoldExamples() {
        #expect(Self.pages.count > 10)
        #expect(Self.all.count > 25)
        #expect(Self.all.contains { Self.decision($0) == .run })
    }

    /// Each block is of a known kind, and each shell block says whether it runs.
    @Test func everyBlockSaysWhatItIs() throws {
        let kinds: Set<String> = ["console", "sh", "conf", "swift", "c", "text", "json", "python"]
        for block in Self.all {
            #expect(kinds.contains(block.language), "\(block): a block with language '\(block.language)'")
            switch Self.decision(block) {
            case .skip(let reason):
                #expect(reason.count >= 10, "\(block): a skip with no reason")
            case .none:
                #expect(
                    !["console", "sh"].contains(block.language),
                    "\(block): a shell example neither run nor skipped with a reason")
                #expect(block.marker == nil, "\(block): a doc-test marker not understood: \(block.marker ?? "")")
            case .run:
                #expect(["console", "sh"].contains(block.language), "\(block): only shell examples run")
            }
        }
    }

    /// The environment the examples run in: the built tools first on the PATH, a scratch directory as
    /// the working directory and home (`$HOME` in an output shown), the repository as `$REPO`.
    static func prologue(in directory: String) -> String {
        let tools = builtExecutable("gatekeeper-run").deletingLastPathComponent().path
        return """
            export PATH='\(tools)':/usr/sbin:/usr/bin:/sbin:/bin HOME='\(directory)' REPO='\(root)' LC_ALL=C.UTF-8
            cd '\(directory)' || exit 99

            """
    }

    /// A transcript's commands and the output each should print.
    static func steps(_ block: Block) -> [(command: String, output: [String])] {
        var steps: [(command: String, output: [String])] = []
        for line in block.lines {
            if line.hasPrefix("$ ") {
                steps.append((String(line.dropFirst(2)), []))
            } else if !steps.isEmpty {
                steps[steps.count - 1].output.append(line)
            }
        }
        return steps
    }

    /// Lines equal after trailing white space is dropped; an expected line `…` stands for any lines.
    static func matches(_ actual: [String], _ expected: [String]) -> Bool {
        let actual = actual.map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
        let expected = expected.map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
        func match(_ a: ArraySlice<String>, _ e: ArraySlice<String>) -> Bool {
            guard let first = e.first else { return a.isEmpty }
            if first == "…" { return a.indices.contains { match(a[$0...], e.dropFirst()) } || match([], e.dropFirst()) }
            guard let head = a.first, head == first else { return false }
            return match(a.dropFirst(), e.dropFirst())
        }
        return match(actual[...], expected[...])
    }

    static var runnable: [Block] { all.filter { decision($0) == .run } }

    /// Where an example runs when it runs as root: a directory of its own `/run`, in a mount namespace
    /// where `/run` and `/var/lib` are directories of the test's scratch directory (kept from step to step
    /// of a page) — so root's own state (the lockout in /var/lib/gatekeeper, remembered logins in
    /// /run/gatekeeper) is neither read nor written, and nothing is left behind. Without the rights for
    /// that (not root), the example runs in a scratch directory that is also its home, where an ordinary
    /// user's state goes.
    static let isolatedDirectory = "/run/gatekeeper-doc"

    static var isolates: Bool {
        getuid() == 0 && !root.hasPrefix("/run/") && !root.hasPrefix("/var/lib/")
            && !builtExecutable("gatekeeper-run").path.hasPrefix("/run/")
    }

    /// Runs `script` as an example runs: isolated when it may be (see ``isolatedDirectory``).
    static func runExample(_ script: String, scratch: String) throws -> (status: Int32, output: String) {
        guard isolates else { return try shell(script) }
        let file = scratch + "/example.sh"
        try script.write(toFile: file, atomically: false, encoding: .utf8)
        for (directory, mode) in [
            ("/var-lib", 0o755), ("/run", 0o755), ("/run" + isolatedDirectory.dropFirst(4), 0o700),
        ] {
            mkdir(scratch + directory, mode_t(mode))
        }
        // The script is opened before /run is covered, and read from that descriptor.
        return try shell(
            "unshare --mount --propagation private sh -c 'exec 3<\"$1/example.sh\" && "
                + "mount --bind \"$1/var-lib\" /var/lib && mount --bind \"$1/run\" /run && exec sh /dev/fd/3' "
                + "sh '\(scratch)'")
    }

    @Test(arguments: runnable.map(\.description))
    func theExampleRunsAsShown(_ place: String) throws {
        let block = try #require(Self.all.first { $0.description == place })
        let scratch = temporaryDirectory("gatekeeper-doc")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let directory = Self.isolates ? Self.isolatedDirectory : scratch
        if block.language == "sh" {
            let script = Self.prologue(in: directory) + "set -e\n" + block.lines.joined(separator: "\n")
            let (status, output) = try Self.runExample(script, scratch: scratch)
            #expect(status == 0, "\(block) failed (\(status)):\n\(output)")
            return
        }
        for step in Self.steps(block) {
            let (_, output) = try Self.runExample(Self.prologue(in: directory) + step.command, scratch: scratch)
            var lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if lines.last == "" { lines.removeLast() }
            // `$HOME` in the output shown stands for the scratch directory the example runs in.
            let expected = step.output.map { $0.replacingOccurrences(of: "$HOME", with: directory) }
            #expect(
                Self.matches(lines, expected),
                "\(block): `\(step.command)` printed\n\(lines.joined(separator: "\n"))\nnot\n\(step.output.joined(separator: "\n"))"
            )
        }
    }

    /// The backends gatekeeper-run offers by name, as it offers them.
    static let registry = ProviderRegistry(BuiltInBackends.plugins)

    /// A configuration example parses as gatekeeper-run reads one: its grammar, controls, backends, their
    /// options and values, its settings. (The files it names are a real host's, so no backend is built: `--check-config`
    /// does that on the host.)
    @Test(arguments: all.filter { $0.language == "conf" && decision($0) == .none }.map(\.description))
    func theConfigurationParses(_ place: String) throws {
        let block = try #require(Self.all.first { $0.description == place })
        let text = Array(block.lines.joined(separator: "\n").appending("\n").utf8)
        do throws(ConfigurationError) {
            let configuration = try ConfigurationFile.parse(text, file: place, registry: Self.registry).stack
            #expect(!configuration.entries.isEmpty, "\(block) has no entry")
        } catch {
            Issue.record("\(block) is refused: \(error)")
        }
    }

    /// The checker itself: a wrong transcript fails, `…` stands for lines, a block with no marker is caught.
    @Test func theCheckerCatchesAWrongExample() {
        #expect(Self.matches(["a", "b", "c"], ["a", "…", "c"]))
        #expect(Self.matches(["a"], ["a", "…"]))
        #expect(!Self.matches(["a", "b"], ["a", "c"]))
        #expect(!Self.matches(["a"], ["a", "b"]))
        let block = Block(file: "x", line: 1, language: "console", marker: nil, lines: ["$ true", "out"])
        #expect(Self.decision(block) == .none)
        #expect(Self.steps(block).first?.output == ["out"])
    }
}
