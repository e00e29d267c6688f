import Authentication
public import ProviderPlugins

/// The options a tool accepts, and the one parser the tools share: `--name value` or `--name=value`
/// for options that take a value, bare flags, positional arguments, and everything after `--` (or, for
/// a tool that runs a command, after the first positional argument) left as it is.
public struct CommandLineSyntax: Sendable {
    /// Options without a value (`--create`, `-h`).
    public var flags: Set<String>
    /// Options that take a value (`--user`), without their dashes.
    public var valueOptions: Set<String>
    /// Whether the first positional argument starts the trailing command (as in `gatekeeper-run … CMD`).
    public var commandFollows: Bool

    public init(flags: Set<String> = [], valueOptions: Set<String> = [], commandFollows: Bool = false) {
        self.flags = flags
        self.valueOptions = valueOptions
        self.commandFollows = commandFollows
    }

    /// The same syntax, also accepting `--provider` and every option of `registry`'s backends.
    public func selectingProviders(from selection: ProviderSelection) -> CommandLineSyntax {
        var syntax = self
        syntax.valueOptions.formUnion(selection.registry.optionNames)
        syntax.valueOptions.insert("provider")
        return syntax
    }

    /// Parses `arguments` (without the program's name).
    /// - Throws: ``UsageError`` for an unknown option, a missing value, or an option given twice.
    ///
    /// Inlinable, so that the arguments become an array where the tool calls it: copied by unspecialised
    /// generic code, the runtime searched every protocol conformance in the program on first use (about
    /// 0.2 ms of every run of a tool).
    @inlinable
    public func parse(_ arguments: some Sequence<String>) throws(UsageError) -> ParsedCommandLine {
        try parse(list: Array(arguments))
    }

    @usableFromInline
    func parse(list arguments: [String]) throws(UsageError) -> ParsedCommandLine {
        var parsed = ParsedCommandLine()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                parsed.trailing = Array(rest)
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                if commandFollows {
                    parsed.trailing = [argument] + rest
                    break
                }
                parsed.positionals.append(argument)
                continue
            }
            if flags.contains(argument) {
                parsed.flags.insert(argument)
                continue
            }
            var name = String(argument.drop { $0 == "-" })
            var value: String?
            if let pair = ConfigurationValue.pair(name) { (name, value) = pair }
            guard argument.hasPrefix("--"), valueOptions.contains(name) else {
                throw UsageError(.unknownOption, "Unknown option \(argument).")
            }
            if value == nil { value = rest.popFirst() }
            guard let value else { throw UsageError(.missingValue, "--\(name) needs a value.") }
            guard parsed.values[name] == nil else { throw UsageError(.repeatedOption, "--\(name) is given twice.") }
            parsed.values[name] = value
        }
        return parsed
    }
}

/// What ``CommandLineSyntax/parse(_:)`` found.
public struct ParsedCommandLine: Sendable, Equatable {
    /// The flags given.
    public var flags: Set<String> = []
    /// The options given with their values, by name without dashes.
    public var values: [String: String] = [:]
    /// The positional arguments, in order.
    public var positionals: [String] = []
    /// What follows `--`, or the command and its arguments.
    public var trailing: [String] = []

    public init() {}

    /// Whether any of `names` was given as a flag.
    public func has(_ names: String...) -> Bool { names.contains(where: flags.contains) }

    /// `--name`'s value read with one of the grammar's parsers (``ConfigurationValue``), as the
    /// configuration file and providers' options read theirs; `nil` when not given.
    /// - Throws: ``UsageError`` saying what was expected.
    public func value<T>(
        _ name: String,
        _ parse: (String) throws(ConfigurationError) -> T
    ) throws(UsageError) -> T? {
        guard let text = values[name] else { return nil }
        do throws(ConfigurationError) {
            return try parse(text)
        } catch {
            throw UsageError(
                .badArgument, "--\(name) takes \(error.expected ?? error.message), not \(TextSafety.escaped(text)).")
        }
    }
}
