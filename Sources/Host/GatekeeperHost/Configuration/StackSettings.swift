public import Authentication
public import ProviderPlugins

/// What a configuration file's setting lines mean for a host: the session's timeouts, the attempts, the
/// lockout and where it is kept, the fail delay, the remembered logins, the audit destinations. The file's
/// grammar (``StackConfiguration``, in this module) knows which lines are settings and where they stand;
/// this reads each one as the file is parsed (``ConfigurationFile``), refusing a bad value where it is
/// written, and prints them back normalised (``lines``).
public struct StackSettings: Sendable {
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
    var auditRequiredAt: ConfigurationLocation?

    typealias Parser = StackConfiguration.Parser
    typealias Location = ConfigurationLocation

    /// No settings: every default.
    public init() {}

    /// The settings of `configuration`'s setting lines.
    /// - Throws: ``ConfigurationError`` for the first line that cannot be read, where it is.
    public init(_ configuration: StackConfiguration) throws(ConfigurationError) {
        for setting in configuration.settings { try read(setting) }
        try finish()
    }

    /// What the whole file must hold once every line is read: an `audit required` needs a destination.
    mutating func finish() throws(ConfigurationError) {
        if let at = auditRequiredAt, audit.isEmpty {
            throw ConfigurationError(
                .value, at: at, word: "required", "audit required needs an audit json or audit syslog line")
        }
    }

    /// The gatekeeper configuration these settings make, from `base` for what the file does not set.
    public func gatekeeperConfiguration(_ base: Gatekeeper.Configuration = .init()) -> Gatekeeper.Configuration {
        var configuration = base
        if let idleTimeout { configuration.sessions.idleTimeout = idleTimeout.duration }
        if let absoluteTimeout { configuration.sessions.absoluteTimeout = absoluteTimeout.duration }
        if let attempts { configuration.attempts.perLogin = attempts }
        if let lockout { configuration.attempts.lockout = lockout.policy }
        if let failDelay { configuration.attempts.failDelay = failDelay }
        if auditRequired { configuration.login.requiresAudit = true }
        return configuration
    }

    /// The settings as lines of a file, in a fixed order with their values normalised (`15m`, `500ms`):
    /// read again, they give the same settings.
    public var lines: [String] {
        var lines: [String] = []
        func duration(_ value: Duration) -> String { ConfigurationValue.describe(value) }
        func limit(_ value: Limit) -> String { value.duration.map(duration) ?? "none" }
        let session = [idleTimeout.map { "idle=\(limit($0))" }, absoluteTimeout.map { "absolute=\(limit($0))" }]
            .compactMap { $0 }
        if !session.isEmpty { lines.append((["session"] + session).joined(separator: " ")) }
        if let attempts { lines.append("attempts \(attempts)") }
        if lockout != nil || lockoutDirectory != nil {
            var words = ["lockout"]
            switch lockout {
            case .off?: words.append("deny=0")
            case .on(let policy)?:
                words += ["deny=\(policy.deny)", "interval=\(duration(policy.interval))"]
                words.append("unlock=" + (policy.unlockAfter.map(duration) ?? "never"))
                words.append("root_unlock=" + (policy.rootUnlockAfter.map(duration) ?? "never"))
                if policy.evenDenyRoot { words.append("even_deny_root") }
            case nil: break
            }
            if let lockoutDirectory { words.append("dir=\(lockoutDirectory)") }
            lines.append(words.joined(separator: " "))
        }
        if let failDelay { lines.append("delay \(duration(failDelay))") }
        if cacheTimeout != nil || cacheDirectory != nil {
            let words = ["cache", cacheTimeout.map { "timeout=\(duration($0))" }, cacheDirectory.map { "dir=\($0)" }]
            lines.append(words.compactMap { $0 }.joined(separator: " "))
        }
        for destination in audit {
            switch destination {
            case .syslog(let socket): lines.append("audit syslog socket=\(socket)")
            case .json(let path): lines.append("audit json path=\(path)")
            }
        }
        if auditRequired { lines.append("audit required") }
        return lines
    }

    /// Reads one setting line into these settings.
    /// - Throws: ``ConfigurationError`` at the word at fault; a setting given twice is refused.
    mutating func read(_ setting: StackConfiguration.Setting) throws(ConfigurationError) {
        let line = Line(setting: setting)
        switch line.name {
        case "session":
            try line.once(idleTimeout != nil || absoluteTimeout != nil)
            let given = try line.values(["idle", "absolute"])
            idleTimeout = try given.value("idle", Self.limit)
            absoluteTimeout = try given.value("absolute", Self.limit)
        case "attempts":
            try line.once(attempts != nil)
            attempts = try line.single(example: "3") { text throws(ConfigurationError) in
                try ConfigurationValue.count(text, in: 1...10)
            }
        case "delay":
            try line.once(failDelay != nil)
            failDelay = try line.single(example: "2s or 0") { text throws(ConfigurationError) in
                try ConfigurationValue.duration(text, in: .zero ... .seconds(60))
            }
        case "cache":
            try line.once(cacheTimeout != nil || cacheDirectory != nil)
            let given = try line.values(["timeout", "dir"])
            cacheTimeout = try given.value("timeout") { text throws(ConfigurationError) in
                try ConfigurationValue.duration(text, in: .zero...Parser.month)
            }
            cacheDirectory = try given.value("dir", ConfigurationValue.absolutePath)
        case "audit": try readAudit(line)
        default: try readLockout(line)
        }
    }

    /// `audit required`, `audit syslog [socket=PATH]` or `audit json path=PATH`.
    private mutating func readAudit(_ line: Line) throws(ConfigurationError) {
        let words = line.words
        if words.count >= 2 && words[1].text == "required" {
            try line.once(auditRequired)
            if let extra = words.dropFirst(2).first {
                throw ConfigurationError(
                    .syntax, at: line.location(extra), word: extra.text, "audit required takes nothing more")
            }
            auditRequiredAt = line.location(words[1])
            return
        }
        guard words.count >= 2, words[1].text == "syslog" || words[1].text == "json" else {
            let word = words.count >= 2 ? words[1] : words[0]
            throw ConfigurationError(
                .value, at: line.location(word), word: word.text,
                "audit takes syslog [socket=PATH], json path=PATH, or required")
        }
        let syslog = words[1].text == "syslog"
        let given = try Parser.values(
            words.dropFirst(2), at: line.location, accepted: [syslog ? "socket" : "path"],
            owner: "audit \(words[1].text)")
        let path = try given.value(syslog ? "socket" : "path", ConfigurationValue.absolutePath)
        let destination: AuditDestination
        if syslog {
            destination = .syslog(socket: path ?? "/dev/log")
        } else {
            guard let path else {
                throw ConfigurationError(
                    .syntax, at: line.location(words[1]), word: "json", "audit json needs path=PATH")
            }
            destination = .json(path: path)
        }
        guard !audit.contains(destination) else {
            throw ConfigurationError(
                .duplicate, at: line.setting.location, word: words[1].text, "this audit destination is set twice")
        }
        audit.append(destination)
    }

    /// `lockout deny=N interval=D unlock=D root_unlock=D dir=PATH [even_deny_root]`, pam_faillock's words.
    private mutating func readLockout(_ line: Line) throws(ConfigurationError) {
        try line.once(lockout != nil || lockoutDirectory != nil)
        // `threshold` and `duration` are older names of `deny` and `unlock`.
        var given = try line.values(
            ["deny", "interval", "unlock", "root_unlock", "dir", "threshold", "duration"], flags: ["even_deny_root"])
        for (old, new) in [("threshold", "deny"), ("duration", "unlock")] {
            guard let value = given.values.removeValue(forKey: old) else { continue }
            guard given.values[new] == nil else {
                throw ConfigurationError(
                    .duplicate, at: value.at, word: old, "\(old) is another name of \(new), given too")
            }
            given.values[new] = value
        }
        var policy = LockoutPolicy()
        let deny = try given.value("deny") { text throws(ConfigurationError) in
            do throws(ConfigurationError) {
                return try ConfigurationValue.count(text, in: 0...1000)
            } catch {
                throw ConfigurationError.invalid(expected: "a number from 0 (off) to 1000")
            }
        }
        if let deny { policy.deny = deny }
        let interval = try given.value("interval") { text throws(ConfigurationError) in
            try ConfigurationValue.duration(text, in: .milliseconds(1)...Parser.month)
        }
        if let interval { policy.interval = interval }
        if let unlock = try given.value("unlock", Self.unlockTime) { policy.unlockAfter = unlock }
        policy.rootUnlockAfter = try given.value("root_unlock", Self.unlockTime) ?? policy.unlockAfter
        policy.evenDenyRoot = given.flags.contains("even_deny_root")
        lockoutDirectory = try given.value("dir", ConfigurationValue.absolutePath)
        lockout = policy.deny == 0 ? .off : .on(policy)
    }

    /// One setting line being read, and what every setting asks of its words.
    private struct Line {
        let setting: StackConfiguration.Setting
        var words: [Parser.Word] { setting.words }
        var name: String { words[0].text }

        func location(_ word: Parser.Word) -> Location {
            Location(file: setting.location.file, line: word.line, column: word.column)
        }

        /// Refuses the line when its setting `isSet` already.
        func once(_ isSet: Bool) throws(ConfigurationError) {
            guard !isSet else {
                throw ConfigurationError(.duplicate, at: setting.location, word: name, "\(name) is set twice")
            }
        }

        /// The line's `name=value` words, and `flags`.
        func values(_ accepted: [String], flags: [String] = []) throws(ConfigurationError) -> Parser.Values {
            try Parser.values(words.dropFirst(), at: location, accepted: accepted, flags: flags, owner: name)
        }

        /// The line's one value, read with `parse`.
        func single<T>(example: String, _ parse: (String) throws(ConfigurationError) -> T) throws(ConfigurationError)
            -> T
        {
            guard words.count == 2 else {
                throw ConfigurationError(
                    .syntax, at: setting.location, word: name, "\(name) takes one value, such as \(example)")
            }
            do throws(ConfigurationError) {
                return try parse(words[1].text)
            } catch {
                throw ConfigurationError(
                    .value, at: location(words[1]), word: words[1].text,
                    "\(name) takes \(error.expected ?? error.message)")
            }
        }
    }

    /// A duration of at most 30 days, or `none`.
    static func limit(_ text: String) throws(ConfigurationError) -> Limit {
        if text == "none" { return .never }
        do throws(ConfigurationError) {
            return .after(try ConfigurationValue.duration(text, in: .zero...Parser.month))
        } catch {
            throw ConfigurationError.invalid(expected: (error.expected ?? error.message) + ", or none")
        }
    }

    /// An unlock time: a duration of at most 30 days, or `never` (or `0`) for only when an administrator
    /// unlocks.
    static func unlockTime(_ text: String) throws(ConfigurationError) -> Duration? {
        if text == "never" { return nil }
        do throws(ConfigurationError) {
            let duration = try ConfigurationValue.duration(text, in: .zero...Parser.month)
            return duration == .zero ? nil : duration
        } catch {
            throw ConfigurationError.invalid(expected: (error.expected ?? error.message) + ", or never")
        }
    }
}
