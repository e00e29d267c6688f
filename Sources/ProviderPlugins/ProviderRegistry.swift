public import Authentication

/// A provider backend that an executable can pick by name, with options from its command line.
///
/// Each provider module ships one plugin type; an executable lists the plugins it links in a
/// ``ProviderRegistry``, so a host tool carries only the backends it uses.
public protocol AuthProviderPlugin: Sendable {
    /// The name that selects this backend (`--provider NAME`).
    static var name: String { get }
    /// One line saying what the backend checks.
    static var summary: String { get }
    /// The options this backend accepts.
    static var options: [ProviderOption] { get }
    /// Builds the provider from checked options.
    /// - Throws: ``ProviderConfigurationError`` when an option's value is unusable or a resource is missing.
    static func makeProvider(_ options: ProviderOptions) throws(ProviderConfigurationError) -> any AuthProvider
}

/// An option a backend accepts, such as `--delay SECONDS`.
public struct ProviderOption: Sendable, Hashable {
    /// The option's name without dashes (`"delay"`).
    public var name: String
    /// What its value is, for help text (`"SECONDS"`).
    public var valueName: String
    /// One line of help.
    public var help: String

    public init(_ name: String, valueName: String, help: String) {
        self.name = name
        self.valueName = valueName
        self.help = help
    }
}

/// The option values given for one backend.
public struct ProviderOptions: Sendable {
    private let values: [String: String]

    public init(_ values: [String: String] = [:]) {
        self.values = values
    }

    /// The raw value of an option, if given.
    public subscript(_ name: String) -> String? { values[name] }

    /// An option given in seconds (`0.5`, `2`), as a duration.
    /// - Throws: ``ProviderConfigurationError/invalidValue(option:value:expected:)`` for anything but a
    ///   finite number of seconds from 0 to 3600.
    public func duration(_ name: String) throws(ProviderConfigurationError) -> Duration? {
        guard let text = values[name] else { return nil }
        guard let seconds = Double(text), seconds.isFinite, (0...3600).contains(seconds) else {
            throw .invalidValue(option: name, value: text, expected: "a number of seconds from 0 to 3600")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}

/// Why a backend could not be built from its name and options.
public enum ProviderConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No backend has this name.
    case unknownProvider(String, available: [String])
    /// The backend does not take this option.
    case unknownOption(String, provider: String)
    /// The option's value is unusable.
    case invalidValue(option: String, value: String, expected: String)
    /// The backend needs this option.
    case missingOption(String, provider: String)
    /// The backend cannot start (a file it needs is missing, for instance).
    case unusable(provider: String, reason: String)

    public var description: String {
        switch self {
        case .unknownProvider(let name, let available):
            "Unknown provider '\(name)'; available: \(available.joined(separator: ", "))."
        case .unknownOption(let option, let provider):
            "The \(provider) provider has no option --\(option)."
        case .invalidValue(let option, let value, let expected):
            "--\(option) \(value.debugDescription) is not \(expected)."
        case .missingOption(let option, let provider):
            "The \(provider) provider needs --\(option)."
        case .unusable(let provider, let reason):
            "The \(provider) provider cannot start: \(reason)"
        }
    }
}

/// The backends an executable offers, by name.
public struct ProviderRegistry: Sendable {
    private let plugins: [(name: String, type: any AuthProviderPlugin.Type)]

    /// A registry of `plugins`, in the order given (the first is the default).
    public init(_ plugins: [any AuthProviderPlugin.Type]) {
        self.plugins = plugins.map { ($0.name, $0) }
    }

    /// The backends' names, default first.
    public var names: [String] { plugins.map(\.name) }

    /// The plugin named `name`, if registered.
    public func plugin(named name: String) -> (any AuthProviderPlugin.Type)? {
        plugins.first { $0.name == name }?.type
    }

    /// Every option name any backend takes, for command-line parsing.
    public var optionNames: Set<String> {
        Set(plugins.flatMap { $0.type.options.map(\.name) })
    }

    /// Builds the backend `name` with `options`, refusing options it does not take.
    /// - Throws: ``ProviderConfigurationError``.
    public func makeProvider(
        named name: String,
        options: [String: String] = [:]
    ) throws(ProviderConfigurationError) -> any AuthProvider {
        guard let plugin = plugin(named: name) else { throw .unknownProvider(name, available: names) }
        let accepted = Set(plugin.options.map(\.name))
        if let stray = options.keys.sorted().first(where: { !accepted.contains($0) }) {
            throw .unknownOption(stray, provider: name)
        }
        return try plugin.makeProvider(ProviderOptions(options))
    }
}
