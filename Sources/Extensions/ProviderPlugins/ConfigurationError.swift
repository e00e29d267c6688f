public import Authentication

/// A configuration that cannot be used — a stack file, a backend's name or options (from a file, a
/// command line or a program), or one value of either — with a ``code`` to act on, where it is in a file
/// (``location``), the option and the word at fault, and what was expected. Equal when the codes are, as
/// ``AuthError`` is.
public struct ConfigurationError: CodedError {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<ConfigurationError>

    public let code: Code
    /// Where in a configuration file the problem is (line 0: the file as a whole); `nil` for a backend's
    /// name or options given otherwise, on a command line or by a program.
    public let location: ConfigurationLocation?
    /// The option at fault, without dashes, when one is.
    public let option: String?
    /// The word at fault, escaped and at most 64 Unicode scalars long; empty when there is none.
    public let word: String
    public let message: String
    /// For a value refused by ``ConfigurationValue``'s grammar: what it should have been, as a phrase
    /// ("a duration from 1s to 30d, such as 90s, 2.5m, 8h or 7d").
    public let expected: String?

    /// A problem at `location` in a configuration file, with `word` there.
    public init(_ code: Code, at location: ConfigurationLocation, word: String, _ message: String) {
        self.init(code, location: location, option: nil, word: word, message, expected: nil)
    }

    private init(
        _ code: Code, location: ConfigurationLocation?, option: String?, word: String, _ message: String,
        expected: String?
    ) {
        self.code = code
        self.location = location
        self.option = option
        self.word = Self.shortened(TextSafety.escaped(word))
        self.message = message
        self.expected = expected
    }

    /// The same problem, as found at `location` in a configuration file where `word` was written.
    public func located(at location: ConfigurationLocation, word: String) -> Self {
        Self(code, location: location, option: option, word: word, message, expected: expected)
    }

    /// `text` cut to 64 characters, so that a megabyte-long word is not echoed whole — counted as Unicode
    /// scalars, so that one letter under a megabyte of accents (one `Character`) is cut too.
    package static func shortened(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let cut = scalars.index(scalars.startIndex, offsetBy: 64, limitedBy: scalars.endIndex),
            cut != scalars.endIndex
        else { return text }
        return String(scalars[..<cut]) + "…"
    }

    /// `FILE:LINE:COLUMN: WORD: message`, `FILE: message` for a file as a whole, or the message alone for
    /// options given outside a file.
    public var description: String {
        guard let location else { return message }
        return location.line == 0 ? "\(location.file): \(message)" : "\(location): \(word): \(message)"
    }

    /// Where the problem is and its kind, without anything of the file's contents (the word at fault and
    /// a message that may quote it): what goes to syslog or an audit trail, which others read, when the
    /// file named may be one they may not (`--config /etc/shadow`).
    public var withoutContents: String {
        guard let location else { return "the configuration is refused (\(code) error)" }
        return location.line == 0
            ? "\(location.file): \(message)" : "\(location): the file is refused (\(code) error)"
    }
}

/// Where something was written in a configuration file: the file's name, the line and the column (both
/// from 1; line 0 stands for the file as a whole). A file's grammar (GatekeeperHost's `StackConfiguration`)
/// gives it to its entries and to the errors it finds; a backend's own errors carry none, and are placed
/// where the option at fault was written (``ConfigurationError/located(at:word:)``).
public struct ConfigurationLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    /// `FILE:LINE:COLUMN`.
    public var description: String { "\(file):\(line):\(column)" }

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }
}

extension ConfigurationError {
    /// A value that is not of its kind or is out of its bounds; `expected` says what it should be.
    public static func invalid(expected: String) -> Self {
        Self(.value, location: nil, option: nil, word: "", "expected \(expected)", expected: expected)
    }

    public static func unknownProvider(_ name: String, available: [String]) -> Self {
        Self(
            .provider, location: nil, option: nil, word: name,
            "Unknown provider '\(TextSafety.escaped(name))'; available: \(available.joined(separator: ", ")).",
            expected: nil)
    }

    public static func unknownOption(_ option: String, provider: String) -> Self {
        Self(
            .option, location: nil, option: option, word: option,
            "The \(provider) provider has no option --\(TextSafety.escaped(option)).", expected: nil)
    }

    public static func invalidValue(option: String, value: String, expected: String) -> Self {
        let shown = shortened(value)
        return Self(
            .value, location: nil, option: option, word: value,
            "--\(option) \(shown.debugDescription) is not \(expected).", expected: expected)
    }

    public static func missingOption(_ option: String, provider: String) -> Self {
        Self(
            .missingOption, location: nil, option: option, word: option, "The \(provider) provider needs --\(option).",
            expected: nil)
    }

    public static func unusable(provider: String, reason: String) -> Self {
        Self(
            .unusable, location: nil, option: nil, word: provider, "The \(provider) provider cannot start: \(reason)",
            expected: nil)
    }
}

extension ErrorCode where Domain == ConfigurationError {
    /// A line that is not an entry or a setting.
    public static var syntax: Self { Self("syntax") }
    /// A control that is no keyword and no bracket of PAM's.
    public static var control: Self { Self("control") }
    /// No backend has this name, or its plugin cannot be loaded.
    public static var provider: Self { Self("provider") }
    /// The backend or setting takes no such option.
    public static var option: Self { Self("option") }
    /// A value that is not of its kind or is out of its bounds.
    public static var value: Self { Self("value") }
    /// The backend needs this option.
    public static var missingOption: Self { Self("missingOption") }
    /// The backend cannot start (a file it needs is missing or unsafe, for instance).
    public static var unusable: Self { Self("unusable") }
    /// A setting or option given twice.
    public static var duplicate: Self { Self("duplicate") }
    /// An include that cannot be used.
    public static var include: Self { Self("include") }
    /// The file itself cannot be used (unreadable, unsafe, too large).
    public static var file: Self { Self("file") }
}

/// The error a backend's options throw: ``ConfigurationError``, the one error of this module.
@available(*, deprecated, renamed: "ConfigurationError")
public typealias ProviderConfigurationError = ConfigurationError
