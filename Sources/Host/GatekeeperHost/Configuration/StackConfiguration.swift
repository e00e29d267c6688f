public import Authentication
public import ProviderPlugins

/// A stack of providers and the host's settings, as written in a configuration file:
///
/// ```
/// # /etc/gatekeeper/admin-tools.conf
/// session idle=15m absolute=8h
/// attempts 3
/// lockout deny=5 interval=15m unlock=10m dir=/var/lib/gatekeeper/faillock
/// delay 2s
/// cache timeout=5m
/// audit syslog
/// audit json path=/var/log/gatekeeper/audit.jsonl
/// sufficient  file users=/etc/gatekeeper/users
/// [success=done user_unknown=ignore authinfo_unavail=ignore default=die]  pam service=login
/// substack    second-factor.conf
/// required    mock delay=0.5
/// ```
///
/// One directive a line, read as libpam reads a service file's lines (StackConfiguration+Lines.swift):
/// `#` anywhere starts a comment, a line ending in `\` goes on on the next. Settings (`session`, `attempts`, `lockout`, `delay`,
/// `cache`, and any number of `audit` lines) come first, each at most once (their meaning is the host's:
/// ``StackSettings``); then the stack, one entry a
/// line: a control (a keyword or PAM's bracket form, with all 32 of PAM's return codes), a provider's
/// name, and its options as `name=value` — the same names as its command-line options, so any plugin a
/// tool registers is configurable. `include FILE` reads another file in its place; `substack FILE` runs
/// another file's entries as libpam runs a substack (``ChainControl/substack``); a relative name is
/// beside the file naming it, and loops are refused. Values follow one grammar
/// (``ConfigurationValue``). The text is read as bytes; errors name the file, line, column and word at
/// fault. ``normalized(settings:)`` prints a configuration so that parsing the text again gives the same one
/// (StackConfiguration+Printer.swift); the parser is StackConfiguration+Parser.swift.
public struct StackConfiguration: Sendable {
    /// One entry of the stack, where it was written: a provider with its options, or a substack.
    public struct Entry: Sendable {
        public var control: ChainControl
        /// The provider's name; for a substack, the file its entries were read from.
        public var provider: String
        public var options: [String: String]
        public var location: Location
        /// How many substacks deep the entry is (0 in the stack itself).
        public var depth: Int
        /// A substack's entries (its control is ``ChainControl/substack``); empty for a provider's entry.
        public var substack: [Entry]
        /// Where each option was written, for an error a provider gives about it.
        public var optionLocations: [String: Location] = [:]
        /// Written `-name`, as libpam's `-` before a module: a backend that is not installed here (or
        /// cannot be used: its library missing) does not refuse the file; the entry answers
        /// `module_unknown` at every login, as libpam's missing module does.
        public var toleratesMissing = false
        /// A `-name` entry whose backend is not installed here.
        public var isMissing = false

        public var isSubstack: Bool { control.isSubstack }
    }

    /// Where something was written: a file, a line and a column.
    public typealias Location = ConfigurationLocation

    /// A setting line as written (`lockout deny=3`, `audit json path=…`): its name, where it is, and its
    /// words. The grammar knows which lines are settings (``settingNames``) and where they may stand —
    /// before the stack, never in a substack; what they mean, and which values they take, is the host's
    /// (``StackSettings``, which reads them as the file is parsed).
    public struct Setting: Sendable, Hashable {
        public let name: String
        public let location: Location
        /// Every word of the line, the name first.
        let words: [Parser.Word]

        /// The line as written, its words one space apart.
        public var text: String { words.map(\.text).joined(separator: " ") }
    }

    /// The first words of setting lines; any other first word starts an entry (or is libpam's `include`
    /// or `substack`).
    public static let settingNames: Set<String> = ["session", "attempts", "lockout", "delay", "cache", "audit"]

    /// The setting lines, in the order they were read.
    public internal(set) var settings: [Setting] = []
    /// The stack's entries; a substack's are inside it.
    public internal(set) var entries: [Entry] = []

    /// Every provider's entry, substacks' included, in the order the stack runs them.
    public var providerEntries: [Entry] { Self.flattened(entries) }

    static func flattened(_ entries: [Entry]) -> [Entry] {
        entries.flatMap { $0.isSubstack ? flattened($0.substack) : [$0] }
    }

    /// The stack's shape, for ``ProviderChain/dispatch(_:answers:)``.
    public var layout: [ProviderChain.Layout] { Self.layout(of: entries) }

    private static func layout(of entries: [Entry]) -> [ProviderChain.Layout] {
        entries.map { $0.isSubstack ? .substack(layout(of: $0.substack)) : .entry($0.control) }
    }

    /// Builds the stack's providers through `registry`.
    /// - Throws: ``ConfigurationError`` naming the entry whose provider could not be built.
    public func makeChain(registry: ProviderRegistry) throws(ConfigurationError) -> ProviderChain {
        ProviderChain(try Self.build(entries, registry: registry))
    }

    private static func build(_ entries: [Entry], registry: ProviderRegistry) throws(ConfigurationError)
        -> [ProviderChain.Entry]
    {
        var built: [ProviderChain.Entry] = []
        for entry in entries {
            if entry.isSubstack {
                built.append(.substack(try build(entry.substack, registry: registry), name: entry.provider))
                continue
            }
            if entry.isMissing {
                built.append(.init(entry.control, MissingProvider(name: entry.provider)))
                continue
            }
            do throws(ConfigurationError) {
                built.append(
                    .init(entry.control, try registry.makeProvider(named: entry.provider, options: entry.options)))
            } catch  where entry.toleratesMissing && error.code == .unusable {
                built.append(.init(entry.control, MissingProvider(name: entry.provider, reason: error.message)))
            } catch {
                // An option's error is the option's, where it was written.
                let at = error.option.flatMap { entry.optionLocations[$0] } ?? entry.location
                throw error.located(at: at, word: error.option ?? entry.provider)
            }
        }
        return built
    }
}

/// The entry of a `-name` whose backend is not installed here, or cannot be used: it answers
/// `module_unknown` at every login and change, as libpam's entry for a missing module does.
struct MissingProvider: AuthProvider {
    let name: String
    var reason: String?

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        .failed(.moduleUnknown, reason: "the backend \(name) is not installed here" + (reason.map { ": \($0)" } ?? ""))
    }
}
