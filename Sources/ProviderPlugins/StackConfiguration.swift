public import Authentication

/// A stack of providers and the gatekeeper's settings, as written in a configuration file:
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
/// `cache`, and any number of `audit` lines) come first, each at most once; then the stack, one entry a
/// line: a control (a keyword or PAM's bracket form, with all 32 of PAM's return codes), a provider's
/// name, and its options as `name=value` — the same names as its command-line options, so any plugin a
/// tool registers is configurable. `include FILE` reads another file in its place; `substack FILE` runs
/// another file's entries as libpam runs a substack (``ChainControl/substack``); a relative name is
/// beside the file naming it, and loops are refused. Values follow one grammar
/// (``ConfigurationValue``). The text is read as bytes; errors name the file, line, column and word at
/// fault. ``normalized`` prints a configuration so that parsing the text again gives the same one
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

    /// Where something was written.
    public struct Location: Sendable, Hashable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var column: Int
        public var description: String { "\(file):\(line):\(column)" }

        public init(file: String, line: Int, column: Int) {
            self.file = file
            self.line = line
            self.column = column
        }
    }

    /// A time limit a file sets: none, or a duration.
    public enum Limit: Sendable, Hashable {
        case never
        case after(Duration)

        /// The limit as ``Gatekeeper/Configuration`` holds it: `nil` for none.
        public var duration: Duration? {
            if case .after(let duration) = self { duration } else { nil }
        }
    }

    /// What a `lockout` line sets: off (`deny=0`), or a policy.
    public enum Lockout: Sendable, Hashable {
        case off
        case on(LockoutPolicy)

        public var policy: LockoutPolicy? {
            if case .on(let policy) = self { policy } else { nil }
        }
    }

    /// Where an `audit` line sends events.
    public enum AuditDestination: Sendable, Hashable {
        /// `audit syslog [socket=PATH]`: to syslog with the authpriv facility, through `/dev/log` unless
        /// another socket is named.
        case syslog(socket: String)
        /// `audit json path=PATH`: JSON lines appended to PATH, each chained to the one before.
        case json(path: String)
    }

    /// `session idle=…`; `nil` when the file does not say.
    public internal(set) var idleTimeout: Limit?
    /// `session absolute=…`.
    public internal(set) var absoluteTimeout: Limit?
    public internal(set) var attempts: Int?
    public internal(set) var lockout: Lockout?
    /// `lockout dir=…`: where failed logins are kept, in pam_faillock's format, across processes.
    public internal(set) var lockoutDirectory: String?
    /// `delay …`: the fail delay.
    public internal(set) var failDelay: Duration?
    /// `cache timeout=…`: how long a login is remembered for the terminal session; zero for never.
    public internal(set) var cacheTimeout: Duration?
    /// `cache dir=…`: where remembered logins are kept.
    public internal(set) var cacheDirectory: String?
    /// `audit …` lines, in order.
    public internal(set) var audit: [AuditDestination] = []
    /// `audit required`: a login whose success no audit destination can record is refused.
    public var auditRequired: Bool { auditRequiredAt != nil }
    /// Where `audit required` was written.
    var auditRequiredAt: Location?
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

    /// The gatekeeper configuration these settings make, from `base` for what the file does not set.
    public func gatekeeperConfiguration(_ base: Gatekeeper.Configuration = .init()) -> Gatekeeper.Configuration {
        var configuration = base
        if let idleTimeout { configuration.idleTimeout = idleTimeout.duration }
        if let absoluteTimeout { configuration.absoluteTimeout = absoluteTimeout.duration }
        if let attempts { configuration.maxAttempts = attempts }
        if let lockout { configuration.lockout = lockout.policy }
        if let failDelay { configuration.failDelay = failDelay }
        if auditRequired { configuration.requiresAudit = true }
        return configuration
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
