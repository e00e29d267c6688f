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
/// required    mock delay=0.5
/// ```
///
/// One directive a line, `#` starts a comment. Settings (`session`, `attempts`, `lockout`, `delay`,
/// `cache`, and any number of `audit` lines) come first, each at most once; then the stack, one entry a line: a control (a keyword or PAM's bracket form), a
/// provider's name, and its options as `name=value` — the same names as its command-line options, so any
/// plugin a tool registers is configurable. `include FILE` reads another file in its place (loops are
/// refused). The text is read as bytes; errors name the file, line, column and word at fault.
public struct StackConfiguration: Sendable {
    /// One entry of the stack, where it was written.
    public struct Entry: Sendable {
        public var control: ChainControl
        public var provider: String
        public var options: [String: String]
        public var location: Location
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

    public private(set) var idleTimeout: Duration??
    public private(set) var absoluteTimeout: Duration??
    public private(set) var attempts: Int?
    /// `lockout …`: the policy, or `.some(nil)` for `deny=0` (off).
    public private(set) var lockout: LockoutPolicy??
    /// `lockout dir=…`: where failed logins are kept, in pam_faillock's format, across processes.
    public private(set) var lockoutDirectory: String?
    /// `delay …`: the fail delay.
    public private(set) var failDelay: Duration?
    /// `cache timeout=…`: how long a login is remembered for the terminal session; zero for never.
    public private(set) var cacheTimeout: Duration?
    /// `cache dir=…`: where remembered logins are kept.
    public private(set) var cacheDirectory: String?
    /// `audit …` lines, in order.
    public private(set) var audit: [AuditDestination] = []
    public private(set) var entries: [Entry] = []

    /// Where an `audit` line sends events.
    public enum AuditDestination: Sendable, Hashable {
        /// `audit syslog [socket=PATH]`: to syslog with the authpriv facility, through `/dev/log` unless
        /// another socket is named.
        case syslog(socket: String)
        /// `audit json path=PATH`: JSON lines appended to PATH, each chained to the one before.
        case json(path: String)
    }

    /// The gatekeeper configuration these settings make, from `base` for what the file does not set.
    public func gatekeeperConfiguration(_ base: Gatekeeper.Configuration = .init()) -> Gatekeeper.Configuration {
        var configuration = base
        if let idleTimeout { configuration.idleTimeout = idleTimeout }
        if let absoluteTimeout { configuration.absoluteTimeout = absoluteTimeout }
        if let attempts { configuration.maxAttempts = attempts }
        if let lockout { configuration.lockout = lockout }
        if let failDelay { configuration.failDelay = failDelay }
        return configuration
    }

    /// Builds the stack's providers through `registry`.
    /// - Throws: ``ConfigurationError`` naming the entry whose provider could not be built.
    public func makeChain(registry: ProviderRegistry) throws(ConfigurationError) -> ProviderChain {
        var built: [ProviderChain.Entry] = []
        for entry in entries {
            do {
                built.append(
                    .init(entry.control, try registry.makeProvider(named: entry.provider, options: entry.options)))
            } catch {
                throw ConfigurationError(.provider, at: entry.location, word: entry.provider, error.description)
            }
        }
        return ProviderChain(built)
    }

    /// Parses `text`, read from `file`.
    /// - Parameters:
    ///   - registry: The providers that may be named, and their options.
    ///   - read: Reads an included file (the tool reads it as safely as the first one).
    /// - Throws: ``ConfigurationError`` for the first problem; nothing of a broken file is used.
    public static func parse(
        _ text: [UInt8],
        file: String,
        registry: ProviderRegistry,
        read: @escaping (String) throws(ConfigurationError) -> [UInt8] = { path throws(ConfigurationError) in
            throw ConfigurationError(.include, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
        }
    ) throws(ConfigurationError) -> StackConfiguration {
        var configuration = StackConfiguration()
        var parser = Parser(registry: registry, read: read)
        try parser.parse(text, file: file, into: &configuration, including: [file])
        try configuration.checkJumps()
        return configuration
    }

    /// A jump must land on an entry of the stack (in a file, going past the end is a mistake).
    private func checkJumps() throws(ConfigurationError) {
        for (index, entry) in entries.enumerated() {
            let jumps =
                entry.control.actions.values.compactMap { if case .jump(let n) = $0 { n } else { nil } }
                + { if case .jump(let n) = entry.control.defaultAction { [n] } else { [] } }()
            // Compared without adding, so no jump, however large, can overflow.
            if let far = jumps.max(), far > entries.count - index - 1 {
                throw ConfigurationError(
                    .control, at: entry.location, word: String(far),
                    "a jump of \(far) skips past the end of the stack (\(entries.count - index - 1) entries follow)")
            }
        }
    }

    private struct Parser {
        let registry: ProviderRegistry
        let read: (String) throws(ConfigurationError) -> [UInt8]
        var stackStarted = false
        var includesRead = 0
        /// libpam's own bound on nested includes is 16.
        static let maxIncludeDepth = 16
        static let maxIncludes = 256
        static let maxEntries = 1000

        /// `name` as named from `file`: an absolute path as it is, a relative one beside `file`.
        static func resolved(_ name: String, from file: String) -> String {
            guard !name.hasPrefix("/"), let slash = file.utf8.lastIndex(of: UInt8(ascii: "/")) else { return name }
            return String(file[...slash]) + name
        }

        mutating func parse(
            _ text: [UInt8],
            file: String,
            into configuration: inout StackConfiguration,
            including chain: [String]
        ) throws(ConfigurationError) {
            var lineNumber = 0
            for rawLine in text.split(separator: 0x0A, omittingEmptySubsequences: false) {
                lineNumber += 1
                var line = Array(rawLine)
                if line.last == 0x0D { line.removeLast() }
                let words = try Self.words(line, file: file, line: lineNumber)
                guard let first = words.first else { continue }
                let at = Location(file: file, line: lineNumber, column: first.column)
                switch first.text {
                case "include":
                    guard words.count == 2 else {
                        throw ConfigurationError(.syntax, at: at, word: first.text, "include takes one file name")
                    }
                    // A relative name is the including file's neighbour, wherever the tool was started.
                    let path = Self.resolved(words[1].text, from: file)
                    let place = Location(file: file, line: lineNumber, column: words[1].column)
                    guard !chain.contains(path) else {
                        throw ConfigurationError(
                            .include, at: place, word: words[1].text,
                            "includes itself: \((chain + [path]).joined(separator: " -> "))")
                    }
                    // Bounded, so that files including each other many times over cannot keep a tool busy.
                    includesRead += 1
                    guard chain.count <= Self.maxIncludeDepth, includesRead <= Self.maxIncludes else {
                        throw ConfigurationError(
                            .include, at: place, word: words[1].text,
                            "more than \(Self.maxIncludes) includes, or includes \(Self.maxIncludeDepth) deep")
                    }
                    try parse(try read(path), file: path, into: &configuration, including: chain + [path])
                case "session", "attempts", "lockout", "delay", "cache", "audit":
                    guard !stackStarted else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "settings come before the stack; move this line up")
                    }
                    try setting(words, at: at, file: file, line: lineNumber, into: &configuration)
                default:
                    stackStarted = true
                    guard configuration.entries.count < Self.maxEntries else {
                        throw ConfigurationError(
                            .syntax, at: at, word: first.text, "a stack has at most \(Self.maxEntries) entries")
                    }
                    configuration.entries.append(try entry(words, file: file, line: lineNumber))
                }
            }
        }

        struct Word {
            var text: String
            var column: Int
        }

        /// The words of a line: separated by spaces or tabs, `[…]` kept whole, a `#` word ends the line.
        static func words(_ line: [UInt8], file: String, line number: Int) throws(ConfigurationError) -> [Word] {
            var words: [Word] = []
            var index = 0
            while index < line.count {
                if line[index] == 0x20 || line[index] == 0x09 {
                    index += 1
                    continue
                }
                if line[index] == UInt8(ascii: "#") { break }
                let start = index
                if line[index] == UInt8(ascii: "[") {
                    guard let close = line[index...].firstIndex(of: UInt8(ascii: "]")) else {
                        throw ConfigurationError(
                            .control, at: Location(file: file, line: number, column: start + 1), word: "[",
                            "the bracket is not closed on this line")
                    }
                    index = close + 1
                } else {
                    while index < line.count && line[index] != 0x20 && line[index] != 0x09 { index += 1 }
                }
                let bytes = line[start..<index]
                guard let text = String(validating: bytes, as: UTF8.self),
                    !text.unicodeScalars.contains(where: TextSafety.isUnsafe)
                else {
                    throw ConfigurationError(
                        .syntax, at: Location(file: file, line: number, column: start + 1),
                        word: TextSafety.escaped(String(decoding: bytes, as: UTF8.self)),
                        "holds invalid UTF-8 or a control character")
                }
                words.append(Word(text: text, column: start + 1))
            }
            return words
        }

        private func setting(
            _ words: [Word],
            at: Location,
            file: String,
            line: Int,
            into configuration: inout StackConfiguration
        ) throws(ConfigurationError) {
            func location(_ word: Word) -> Location { Location(file: file, line: line, column: word.column) }
            func pairs() throws(ConfigurationError) -> [(String, String, Word)] {
                var result: [(String, String, Word)] = []
                for word in words.dropFirst() {
                    guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else {
                        throw ConfigurationError(.syntax, at: location(word), word: word.text, "expected name=value")
                    }
                    result.append(
                        (String(word.text[..<equals]), String(word.text[word.text.index(after: equals)...]), word))
                }
                return result
            }
            switch words[0].text {
            case "session":
                guard configuration.idleTimeout == nil && configuration.absoluteTimeout == nil else {
                    throw ConfigurationError(.duplicate, at: at, word: "session", "session is set twice")
                }
                for (name, value, word) in try pairs() {
                    let duration = try Self.duration(value, at: location(word))
                    switch name {
                    case "idle": configuration.idleTimeout = .some(duration)
                    case "absolute": configuration.absoluteTimeout = .some(duration)
                    default:
                        throw ConfigurationError(
                            .syntax, at: location(word), word: name, "session takes idle= and absolute=")
                    }
                }
            case "attempts":
                guard configuration.attempts == nil else {
                    throw ConfigurationError(.duplicate, at: at, word: "attempts", "attempts is set twice")
                }
                guard words.count == 2, let count = Int(words[1].text), (1...10).contains(count) else {
                    let word = words.count > 1 ? words[1] : words[0]
                    throw ConfigurationError(
                        .value, at: location(word), word: word.text, "attempts takes a number from 1 to 10")
                }
                configuration.attempts = count
            case "delay":
                guard configuration.failDelay == nil else {
                    throw ConfigurationError(.duplicate, at: at, word: "delay", "delay is set twice")
                }
                guard words.count == 2 else {
                    throw ConfigurationError(
                        .syntax, at: at, word: "delay", "delay takes one duration, such as 2s or 0")
                }
                configuration.failDelay = try Self.delay(words[1].text, at: location(words[1]))
            case "cache":
                guard configuration.cacheTimeout == nil && configuration.cacheDirectory == nil else {
                    throw ConfigurationError(.duplicate, at: at, word: "cache", "cache is set twice")
                }
                for (name, value, word) in try pairs() {
                    switch name {
                    case "timeout":
                        configuration.cacheTimeout = value == "0" ? .zero : try Self.duration(value, at: location(word))
                        if configuration.cacheTimeout == nil {
                            throw ConfigurationError(
                                .value, at: location(word), word: value, "a cache timeout is a duration, or 0 for never"
                            )
                        }
                    case "dir": configuration.cacheDirectory = try Self.absolutePath(value, at: location(word))
                    default:
                        throw ConfigurationError(
                            .syntax, at: location(word), word: name, "cache takes timeout= and dir=")
                    }
                }
            case "audit":
                guard words.count >= 2 else {
                    throw ConfigurationError(.syntax, at: at, word: "audit", "audit takes syslog or json path=FILE")
                }
                let options = Array(words.dropFirst(2))
                var values: [String: String] = [:]
                for word in options {
                    guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else {
                        throw ConfigurationError(.syntax, at: location(word), word: word.text, "expected name=value")
                    }
                    let name = String(word.text[..<equals])
                    let accepted = words[1].text == "syslog" ? "socket" : "path"
                    guard name == accepted, values[name] == nil else {
                        throw ConfigurationError(
                            .syntax, at: location(word), word: name, "audit \(words[1].text) takes \(accepted)= once")
                    }
                    values[name] = try Self.absolutePath(
                        String(word.text[word.text.index(after: equals)...]), at: location(word))
                }
                let destination: AuditDestination
                switch words[1].text {
                case "syslog": destination = .syslog(socket: values["socket"] ?? "/dev/log")
                case "json":
                    guard let path = values["path"] else {
                        throw ConfigurationError(
                            .syntax, at: location(words[1]), word: "json", "audit json needs path=FILE")
                    }
                    destination = .json(path: path)
                default:
                    throw ConfigurationError(
                        .value, at: location(words[1]), word: words[1].text, "audit takes syslog or json path=FILE")
                }
                guard !configuration.audit.contains(destination) else {
                    throw ConfigurationError(
                        .duplicate, at: at, word: words[1].text, "this audit destination is set twice")
                }
                configuration.audit.append(destination)
            default:  // lockout
                guard configuration.lockout == nil && configuration.lockoutDirectory == nil else {
                    throw ConfigurationError(.duplicate, at: at, word: "lockout", "lockout is set twice")
                }
                var policy = LockoutPolicy()
                var rootUnlock: Duration??
                var off = false
                if words.dropFirst().contains(where: { $0.text == "even_deny_root" }) { policy.evenDenyRoot = true }
                let named = Array(words.dropFirst().filter { $0.text != "even_deny_root" })
                for word in named {
                    guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else {
                        throw ConfigurationError(.syntax, at: location(word), word: word.text, "expected name=value")
                    }
                    let name = String(word.text[..<equals])
                    let value = String(word.text[word.text.index(after: equals)...])
                    switch name {
                    case "deny", "threshold":
                        guard let count = Int(value), (0...1000).contains(count) else {
                            throw ConfigurationError(
                                .value, at: location(word), word: value, "deny takes a number from 0 (off) to 1000")
                        }
                        policy.deny = count
                        off = count == 0
                    case "interval":
                        guard let interval = try Self.duration(value, at: location(word)), interval > .zero else {
                            throw ConfigurationError(
                                .value, at: location(word), word: value, "an interval is a duration such as 15m")
                        }
                        policy.interval = interval
                    case "unlock", "duration":
                        policy.unlockAfter = try Self.unlockTime(value, at: location(word))
                    case "root_unlock":
                        rootUnlock = .some(try Self.unlockTime(value, at: location(word)))
                    case "dir":
                        configuration.lockoutDirectory = try Self.absolutePath(value, at: location(word))
                    default:
                        throw ConfigurationError(
                            .syntax, at: location(word), word: name,
                            "lockout takes deny=, interval=, unlock=, root_unlock=, dir= and even_deny_root")
                    }
                }
                policy.rootUnlockAfter = rootUnlock ?? policy.unlockAfter
                configuration.lockout = .some(off ? nil : policy)
            }
        }

        /// An unlock time: a duration, or `0` (or `never`) for only when an administrator unlocks.
        static func unlockTime(_ text: String, at location: Location) throws(ConfigurationError) -> Duration? {
            if text == "0" || text == "never" { return nil }
            guard let duration = try duration(text, at: location), duration > .zero else { return nil }
            return duration
        }

        /// A fail delay: a duration of at most a minute, `0` for none; `1.5s` and `500ms` are allowed.
        static func delay(_ text: String, at location: Location) throws(ConfigurationError) -> Duration {
            if text == "0" { return .zero }
            let milliseconds: Double?
            if text.hasSuffix("ms") {
                milliseconds = Double(text.dropLast(2))
            } else if text.hasSuffix("s") {
                milliseconds = Double(text.dropLast()).map { $0 * 1000 }
            } else {
                milliseconds = nil
            }
            guard let milliseconds, milliseconds.isFinite, (0...60_000).contains(milliseconds) else {
                throw ConfigurationError(
                    .value, at: location, word: text, "expected a delay such as 2s, 1.5s or 500ms (at most 60s), or 0")
            }
            return .milliseconds(Int64(milliseconds.rounded()))
        }

        /// A path the tool will write to: absolute, so it does not depend on where the tool is started.
        static func absolutePath(_ text: String, at location: Location) throws(ConfigurationError) -> String {
            guard text.hasPrefix("/"), !text.split(separator: "/").contains("..") else {
                throw ConfigurationError(.value, at: location, word: text, "expected an absolute path without ..")
            }
            return text
        }

        /// `90s`, `15m`, `8h`, `2d`, or `none`; at most 30 days.
        static func duration(_ text: String, at location: Location) throws(ConfigurationError) -> Duration? {
            if text == "none" { return nil }
            guard let duration = ConfigurationValue.duration(text, atMost: .seconds(30 * 86_400)) else {
                throw ConfigurationError(
                    .value, at: location, word: text,
                    "expected a duration such as 90s, 15m, 8h or 2d (at most 30d), or none")
            }
            return duration
        }

        private func entry(_ words: [Word], file: String, line: Int) throws(ConfigurationError) -> Entry {
            func location(_ word: Word) -> Location { Location(file: file, line: line, column: word.column) }
            let control = try Self.control(words[0], at: location(words[0]))
            guard words.count >= 2 else {
                throw ConfigurationError(
                    .syntax, at: location(words[0]), word: words[0].text, "a provider's name must follow the control")
            }
            let name = words[1].text
            let resolved: ProviderPluginDescriptor?
            do throws(ProviderConfigurationError) {
                resolved = try registry.resolve(name)
            } catch {
                throw ConfigurationError(.provider, at: location(words[1]), word: name, error.description)
            }
            guard let plugin = resolved else {
                throw ConfigurationError(
                    .provider, at: location(words[1]), word: name,
                    "unknown provider; available: \(registry.names.joined(separator: ", ")), or a plugin's path")
            }
            var options: [String: String] = [:]
            let accepted = plugin.options.map(\.name)
            for word in words.dropFirst(2) {
                guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else {
                    throw ConfigurationError(.syntax, at: location(word), word: word.text, "expected option=value")
                }
                let option = String(word.text[..<equals])
                guard accepted.contains(option) else {
                    throw ConfigurationError(
                        .option, at: location(word), word: option,
                        "\(plugin.name) has no option \(option); its options: \(accepted.joined(separator: ", "))")
                }
                guard options[option] == nil else {
                    throw ConfigurationError(.duplicate, at: location(word), word: option, "\(option) is given twice")
                }
                options[option] = String(word.text[word.text.index(after: equals)...])
            }
            return Entry(control: control, provider: name, options: options, location: location(words[0]))
        }

        static func control(_ word: Word, at location: Location) throws(ConfigurationError) -> ChainControl {
            switch word.text {
            case "required": return .required
            case "requisite": return .requisite
            case "sufficient": return .sufficient
            case "optional": return .optional
            default: break
            }
            guard word.text.hasPrefix("["), word.text.hasSuffix("]") else {
                throw ConfigurationError(
                    .control, at: location, word: word.text,
                    "unknown control; expected required, requisite, sufficient, optional or [value=action …]")
            }
            var actions: [PAMResult: ChainControl.Action] = [:]
            var defaultAction: ChainControl.Action?
            let inside = word.text.dropFirst().dropLast()
            var column = location.column + 1
            for pair in inside.split(separator: " ", omittingEmptySubsequences: false) {
                defer { column += pair.count + 1 }
                guard !pair.isEmpty else { continue }
                let at = Location(file: location.file, line: location.line, column: column)
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else {
                    throw ConfigurationError(.control, at: at, word: String(pair), "expected value=action")
                }
                let action: ChainControl.Action
                switch parts[1] {
                case "ignore": action = .ignore
                case "bad": action = .bad
                case "die": action = .die
                case "ok": action = .ok
                case "done": action = .done
                case "reset": action = .reset
                default:
                    guard let count = Int(parts[1]), count >= 1 else {
                        throw ConfigurationError(
                            .control, at: at, word: String(parts[1]),
                            "unknown action; expected ignore, bad, die, ok, done, reset or a jump of 1 or more")
                    }
                    action = .jump(count)
                }
                if parts[0] == "default" {
                    // libpam keeps the first default (a later one fills no slot); rather than a meaning
                    // nobody reading the line would guess, a second one is refused, as a repeated key is.
                    guard defaultAction == nil else {
                        throw ConfigurationError(.duplicate, at: at, word: "default", "default is given twice")
                    }
                    defaultAction = action
                } else if let value = PAMResult(rawValue: String(parts[0])) {
                    guard actions[value] == nil else {
                        throw ConfigurationError(
                            .duplicate, at: at, word: String(parts[0]), "\(parts[0]) is given twice")
                    }
                    actions[value] = action
                } else {
                    throw ConfigurationError(
                        .control, at: at, word: String(parts[0]),
                        "unknown value; expected default or one of \(PAMResult.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
            }
            return ChainControl(actions: actions, default: defaultAction ?? .bad)
        }
    }
}

/// A configuration that cannot be used: a ``code``, where, the word at fault, and what was expected.
/// Equal when the codes are.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        public static let syntax = Code("syntax")
        public static let control = Code("control")
        public static let provider = Code("provider")
        public static let option = Code("option")
        public static let value = Code("value")
        public static let duplicate = Code("duplicate")
        public static let include = Code("include")
        public static let file = Code("file")
    }

    public let code: Code
    public let location: StackConfiguration.Location
    /// The word at fault, escaped.
    public let word: String
    public let message: String

    public init(_ code: Code, at location: StackConfiguration.Location, word: String, _ message: String) {
        self.code = code
        self.location = location
        self.word = TextSafety.escaped(word)
        self.message = message
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `FILE:LINE:COLUMN: WORD: message`, or `FILE: message` for the file as a whole.
    public var description: String {
        location.line == 0 ? "\(location.file): \(message)" : "\(location): \(word): \(message)"
    }

    /// Where the problem is and its kind, without anything of the file's contents (the word at fault and
    /// a message that may quote it): what goes to syslog or an audit trail, which others read, when the
    /// file named may be one they may not (`--config /etc/shadow`).
    public var withoutContents: String {
        location.line == 0 ? "\(location.file): \(message)" : "\(location): the file is refused (\(code) error)"
    }
}
