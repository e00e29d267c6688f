public import Authentication
import GatekeeperSupport
public import ProviderPlugins

/// The backend named on a command line: `--provider NAME` and that backend's options (`--delay 0.5`,
/// `--users PATH`, …), in the same spelling for every executable.
public struct ProviderSelection: Sendable {
    /// The backends to choose from; the first is the default.
    public let registry: ProviderRegistry
    /// The backend's name, or `nil` for the default.
    public private(set) var name: String?
    /// The option values given.
    public private(set) var options: [String: String] = [:]

    public init(registry: ProviderRegistry) {
        self.registry = registry
    }

    /// Takes `--provider` and the backend options from a parsed command line (one parsed with
    /// ``CommandLineSyntax/selectingProviders(from:)``).
    public mutating func take(from parsed: ParsedCommandLine) {
        name = parsed.values["provider"]
        options = parsed.values.filter { registry.optionNames.contains($0.key) }
    }

    /// Builds the selected backend, or the registry's first when none was named and `defaultsToFirst`
    /// is set (a demo may default; a host tool must not, or a forgotten `--provider` would admit the
    /// demo backend's published accounts).
    /// - Throws: ``UsageError`` when no backend was named and there is no default;
    ///   ``ConfigurationError`` when the name is unknown or an option does not fit it.
    public func makeProvider(defaultsToFirst: Bool = false) throws -> any AuthProvider {
        guard let chosen = name ?? (defaultsToFirst ? registry.names.first : nil) else {
            throw UsageError(
                "Name the backend with --provider (\(registry.names.joined(separator: ", "))); there is no default.")
        }
        return try registry.makeProvider(named: chosen, options: options)
    }

    /// Help text listing the backends and their options.
    /// - Parameter defaultsToFirst: Whether the first backend is the default (as in ``makeProvider(defaultsToFirst:)``).
    public func help(defaultsToFirst: Bool = false) -> String {
        let header =
            defaultsToFirst
            ? "Providers (--provider NAME, default \(registry.names.first ?? "none")):"
            : "Providers (--provider NAME, required):"
        var lines = [header]
        for name in registry.names {
            guard let plugin = registry.plugin(named: name) else { continue }
            lines.append("  \(name.padded(to: 8))\(plugin.summary)")
            for option in plugin.options {
                let flag = "--\(option.name) \(option.valueName)"
                lines.append("    \(flag.padded(to: 22))\(option.help)")
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// A command line that cannot be followed: a ``code`` and a message saying what is wrong; equal when
/// the codes are, as every error of the package is.
public struct UsageError: CodedError {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<UsageError>

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// An argument the tool cannot use (``Code/badArgument``), for the reason given.
    public init(_ description: String) {
        self.init(.badArgument, description)
    }

}

extension ErrorCode where Domain == UsageError {
    /// An option the tool does not know.
    public static var unknownOption: Self { Self("unknownOption") }
    /// An option given without its value.
    public static var missingValue: Self { Self("missingValue") }
    /// An option given twice.
    public static var repeatedOption: Self { Self("repeatedOption") }
    /// Any other argument the tool cannot use (a missing command, a stray word, no backend named).
    public static var badArgument: Self { Self("badArgument") }
}
