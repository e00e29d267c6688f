import Authentication
import AuthenticationTesting
import DebugProvider
import Foundation
import GatekeeperHost
import ProviderPlugins
import Testing

/// How libpam 1.5.2 reads a service file's lines, beside the configuration parser: each file here is
/// written twice — as a service file of `pam_debug.so auth=` lines for libpam, and with `debug result=`
/// entries for the parser — and the PAM results must be equal. Where libpam would read a file otherwise
/// than as its lines, the parser refuses it, saying where.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct LibpamReaderTests {
    let registry = ProviderRegistry([DebugProviderPlugin.self])

    /// The result libpam gives for `pam` (`MODULE` standing for pam_debug.so's path) and the one the
    /// chain gives for `ours`, each with the included files given.
    func results(pam: String, ours: String, includes: [String: (pam: String, ours: String)] = [:]) async throws -> (
        libpam: PAMResult, chain: PAMResult
    ) {
        let oracle = try LibpamOracle()
        defer { oracle.remove() }
        func forLibpam(_ text: String) -> String {
            text.replacing("MODULE", with: oracle.module).replacing("INCLUDED/", with: oracle.directory + "/")
        }
        var files = ["stack": forLibpam(pam)]
        for (name, text) in includes { files[name] = forLibpam(text.pam) }
        let libpam = try oracle.result(files: files, service: "stack")
        let configuration = try parse(ours, includes: includes.mapValues(\.ours))
        let chain = try await configuration.makeChain(registry: registry).authenticate(
            AuthRequest(username: "alice", conversation: ScriptedConversation())
        ).pamResult
        return (libpam, chain)
    }

    func parse(_ text: String, includes: [String: String] = [:]) throws -> StackConfiguration {
        try StackConfiguration.parse(Array(text.utf8), file: "stack", registry: registry) {
            path throws(ConfigurationError) in
            let name = String(path.split(separator: "/").last ?? "")
            guard let text = includes[name] else {
                throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
            }
            return Array(text.utf8)
        }
    }

    /// A line ending in `\` goes on on the next one, blank and comment-only lines between skipped; a `#`
    /// anywhere — in the middle of a word too — begins a comment (it was read as part of the word).
    @Test(arguments: [
        (
            "auth required \\\n    MODULE auth=auth_err\nauth required MODULE auth=success\n",
            "required \\\n    debug result=auth_err\nrequired debug result=success\n"
        ),
        (
            "auth sufficient \\   \n\n# between\n   MODULE auth=success\nauth required MODULE auth=auth_err\n",
            "sufficient \\   \n\n# between\n   debug result=success\nrequired debug result=auth_err\n"
        ),
        (
            "auth required MODULE auth=success#auth=auth_err\n",
            "required debug result=success#result=auth_err\n"
        ),
        (
            "auth required MODULE auth=success # \\\nauth required MODULE auth=auth_err\n",
            "required debug result=success # \\\nrequired debug result=auth_err\n"
        ),
        (
            "auth [success=ok default=bad]#comment \\\nauth required MODULE auth=success\n",
            "[success=ok default=bad]#comment\nrequired debug result=success\n"
        ),
    ])
    func continuedLinesAndCommentsAreReadAsLibpamReadsThem(_ pam: String, _ ours: String) async throws {
        if ours.contains("]#comment") {
            // libpam reads a bracket cut short by a comment as a broken line; the parser refuses it.
            #expect(throws: ConfigurationError.self) { try parse(ours) }
            return
        }
        let (libpam, chain) = try await results(pam: pam, ours: ours)
        #expect(libpam == chain, "libpam \(libpam.rawValue), chain \(chain.rawValue)")
    }

    /// libpam compares its words without regard to case: `SUFFICIENT`, `Required`, `INCLUDE`,
    /// `Substack` (refused as unknown controls). Inside a bracket it does not (`[SUCCESS=ok]` is read as
    /// everything bad), and the parser refuses that as before.
    @Test func controlWordsInCapitalsAreReadAsLibpamReadsThem() async throws {
        let cases = [
            (
                "auth SUFFICIENT MODULE auth=success\nauth required MODULE auth=auth_err\n",
                "SUFFICIENT debug result=success\nrequired debug result=auth_err\n"
            ),
            (
                "auth Required MODULE auth=success\nauth OPTIONAL MODULE auth=auth_err\n",
                "Required debug result=success\nOPTIONAL debug result=auth_err\n"
            ),
            (
                "auth Requisite MODULE auth=auth_err\nauth sufficient MODULE auth=success\n",
                "Requisite debug result=auth_err\nsufficient debug result=success\n"
            ),
        ]
        for (pam, ours) in cases {
            let (libpam, chain) = try await results(pam: pam, ours: ours)
            #expect(libpam == chain, "\(ours): libpam \(libpam.rawValue), chain \(chain.rawValue)")
        }
        let included = ("auth required MODULE auth=auth_err\n", "required debug result=auth_err\n")
        for keyword in ["INCLUDE", "Substack"] {
            let (libpam, chain) = try await results(
                pam: "auth \(keyword) INCLUDED/inner\nauth required MODULE auth=success\n",
                ours: "\(keyword) inner\nrequired debug result=success\n", includes: ["inner": included])
            #expect(libpam == chain && chain == .authenticationError, "\(keyword): \(libpam) \(chain)")
        }
        #expect(throws: ConfigurationError.self) { try parse("[SUCCESS=ok default=bad] debug result=success\n") }
        // The settings are this file's own words, not libpam's: read as written (`Session` was read as a
        // lockout line when the keywords were folded).
        for text in ["Session idle=5m\nrequired debug\n", "LOCKOUT deny=3\nrequired debug\n"] {
            #expect {
                try parse(text)
            } throws: { "\($0)".contains("unknown control") }
        }
    }

    /// `-name`: libpam's `-` before a module that is missing keeps the entry, which answers
    /// `module_unknown` (the `-` only keeps it out of the log) — the parser, for a backend not installed
    /// here, does the same instead of refusing the file; a jump counts the entry too.
    @Test func aDashedBackendThatIsNotInstalledAnswersModuleUnknown() async throws {
        let cases = [
            (
                "-auth [module_unknown=ignore default=bad] pam_nowhere.so\nauth required MODULE auth=success\n",
                "[module_unknown=ignore default=bad] -nowhere\nrequired debug result=success\n"
            ),
            (
                "-auth required pam_nowhere.so\nauth required MODULE auth=success\n",
                "required -nowhere some=option\nrequired debug result=success\n"
            ),
            (
                "auth [success=1 default=bad] MODULE auth=success\n-auth required pam_nowhere.so\n"
                    + "auth required MODULE auth=success\n",
                "[success=1 default=bad] debug result=success\nrequired -nowhere\nrequired debug result=success\n"
            ),
            (
                "-auth optional pam_nowhere.so\nauth required MODULE auth=success\n",
                "optional -nowhere\nrequired debug result=success\n"
            ),
            ("-auth required MODULE auth=success\n", "required -debug result=success\n"),
        ]
        for (pam, ours) in cases {
            let (libpam, chain) = try await results(pam: pam, ours: ours)
            #expect(libpam == chain, "\(ours): libpam \(libpam.rawValue), chain \(chain.rawValue)")
        }
        // Without the dash an unknown backend still refuses the file, and the dash is written back.
        #expect(throws: ConfigurationError.self) { try parse("required nowhere\n") }
        let dashed = try parse("optional -nowhere\nrequired -debug result=success\n")
        #expect(dashed.normalized().contains("optional -nowhere\nrequired -debug result=success\n"))
    }

    /// Where libpam would read a file otherwise than as its lines, the file is refused at that line: a
    /// line over 1022 bytes (libpam reads the rest as a line of its own — here a comment's tail that
    /// becomes an entry, which fails the stack for libpam), a continued line over that together, a
    /// file ending in a continued line (libpam drops it), a `\` before a carriage return.
    @Test func whatLibpamWouldReadOtherwiseIsRefusedWhere() async throws {
        let padding = String(repeating: "x", count: 1_000)
        let tail = "auth requisite MODULE auth=auth_err"
        // What libpam makes of the long comment: its tail is a live entry that fails the stack.
        let oracle = try LibpamOracle()
        defer { oracle.remove() }
        // libpam's first piece is 1,023 bytes: the comment padded to end just before the tail.
        let head = "auth required \(oracle.module) auth=success # "
        let long =
            head + String(repeating: "x", count: 1_023 - head.utf8.count)
            + tail.replacing("MODULE", with: oracle.module) + "\n"
        #expect(try oracle.result(files: ["stack": long], service: "stack") == .authenticationError)
        let cases: [(String, String)] = [
            ("required debug result=success\nrequired debug result=success # \(padding) \(tail)\n", "stack:2:1"),
            ("required debug \\\n result=success \\\n # \(padding)\n", "stack:3:1"),
            ("required debug result=success\nrequired debug \\\n", "stack:3:1"),
            ("required debug result=success \\\r\nrequired debug result=success\r\n", "stack:1:"),
        ]
        for (text, place) in cases {
            #expect {
                try parse(text)
            } throws: { error in
                "\(error)".hasPrefix(place)
            }
        }
        // 1,022 bytes is read whole, by libpam and the parser.
        let fits = "required debug result=success #" + String(repeating: "y", count: 1_022 - 31) + "\n"
        #expect(fits.utf8.count == 1_023)
        #expect(try parse(fits).entries.count == 1)
    }

    /// A repeated key is refused, and the message says what libpam would have done with it.
    @Test func aRepeatedKeySaysWhatLibpamWouldDo() {
        #expect {
            try parse("[auth_err=ignore auth_err=bad default=ok] debug\n")
        } throws: { "\($0)".contains("libpam would keep the last") }
        #expect {
            try parse("[default=ignore default=bad] debug\n")
        } throws: { "\($0)".contains("libpam would keep the first") }
    }
}
