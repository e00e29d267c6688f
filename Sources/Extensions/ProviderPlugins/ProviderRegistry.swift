public import Authentication
import GatekeeperSupport

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
    /// Whether the backend checks something the person knows or has (a password, a code); `false` for
    /// one that answers without asking (`debug`). `--check-config` warns about stacks that can succeed
    /// without any such check.
    static var checksCredentials: Bool { get }
    /// Builds the provider from checked options.
    /// - Throws: ``ConfigurationError`` when an option's value is unusable or a resource is missing.
    static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider
}

extension AuthProviderPlugin {
    public static var checksCredentials: Bool { true }
}

/// An option a backend accepts, such as `--delay DURATION`.
public struct ProviderOption: Sendable, Hashable {
    /// The option's name without dashes (`"delay"`).
    public var name: String
    /// What its value is, for help text (`"DURATION"`).
    public var valueName: String
    /// One line of help.
    public var help: String

    /// Whether the value names a file or directory (`PATH`, `DIR` or `FILE`): in a configuration file,
    /// a relative one is beside that file, as an include is — never wherever the tool was started.
    public var isPath: Bool { ["PATH", "DIR", "FILE"].contains(valueName) }

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

    /// `name`'s value read with one of ``ConfigurationValue``'s parsers; `nil` when not given.
    /// - Throws: ``ConfigurationError/invalidValue(option:value:expected:)`` saying what was expected.
    public func value<T>(
        _ name: String,
        _ parse: (String) throws(ConfigurationError) -> T
    ) throws(ConfigurationError) -> T? {
        guard let text = values[name] else { return nil }
        do throws(ConfigurationError) {
            return try parse(text)
        } catch {
            throw .invalidValue(option: name, value: text, expected: error.expected ?? error.message)
        }
    }

    /// A duration in `range` (`500ms`, `2s`, `2.5m`; a bare number is seconds).
    public func duration(
        _ name: String,
        in range: ClosedRange<Duration> = .zero ... .seconds(3600)
    ) throws(ConfigurationError) -> Duration? {
        try value(name) { text throws(ConfigurationError) in try ConfigurationValue.duration(text, in: range) }
    }

    /// A count in `range`.
    public func count(_ name: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        try value(name) { text throws(ConfigurationError) in try ConfigurationValue.count(text, in: range) }
    }

    /// `yes` or `no`.
    public func boolean(_ name: String) throws(ConfigurationError) -> Bool? {
        try value(name, ConfigurationValue.boolean)
    }

    /// A comma-separated list.
    public func list(_ name: String) throws(ConfigurationError) -> [String]? {
        try value(name, ConfigurationValue.list)
    }

    /// The secret in the file `name` names (a service account's password, a client's secret): the file's
    /// bytes without a trailing line break. The file is read as every file that decides who gets in is
    /// (not a link, owned by root or the user running the tool, written by no one else, at most 4 KiB).
    /// - Throws: ``ConfigurationError/unusable(provider:reason:)`` naming the file and what is
    ///   wrong with it, or that it is empty.
    public func secretFile(_ name: String, provider: String) throws(ConfigurationError) -> Secret? {
        guard let path = values[name] else { return nil }
        switch readSecretFile(path, maxBytes: 4096) {
        case .success(var bytes):
            while bytes.last == 0x0A || bytes.last == 0x0D { bytes.removeLast() }
            guard !bytes.isEmpty else { throw .unusable(provider: provider, reason: "\(name) \(path) is empty") }
            return Secret(wiping: &bytes)
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
            throw .unusable(provider: provider, reason: "\(name) \(path) \(why)")
        }
    }
}

/// A backend as a registry holds it: its name, options, and how to build it — from a plugin type
/// compiled in, or from a plugin loaded at run time.
public struct ProviderPluginDescriptor: Sendable {
    public let name: String
    public let summary: String
    public let options: [ProviderOption]
    public let checksCredentials: Bool
    private let make: @Sendable (ProviderOptions) throws(ConfigurationError) -> any AuthProvider

    public init(
        name: String,
        summary: String,
        options: [ProviderOption],
        checksCredentials: Bool = true,
        make: @escaping @Sendable (ProviderOptions) throws(ConfigurationError) -> any AuthProvider
    ) {
        self.name = name
        self.summary = summary
        self.options = options
        self.checksCredentials = checksCredentials
        self.make = make
    }

    /// The descriptor of a plugin type compiled into the executable.
    public init(_ type: any AuthProviderPlugin.Type) {
        self.init(
            name: type.name, summary: type.summary, options: type.options, checksCredentials: type.checksCredentials
        ) { options throws(ConfigurationError) in
            try type.makeProvider(options)
        }
    }

    /// Builds the provider from checked options.
    public func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        try make(options)
    }
}

/// The backends an executable offers, by name: those compiled in, and — with a resolver — plugins found
/// at run time by path or short name (`PluginHost`'s shared objects).
public struct ProviderRegistry: Sendable {
    private let plugins: [ProviderPluginDescriptor]
    private let resolver: (@Sendable (String) throws(ConfigurationError) -> ProviderPluginDescriptor?)?

    /// A registry of `plugins`, in the order given (the first is the default).
    public init(_ plugins: [any AuthProviderPlugin.Type]) {
        self.plugins = plugins.map(ProviderPluginDescriptor.init)
        self.resolver = nil
    }

    private init(
        plugins: [ProviderPluginDescriptor],
        resolver: (@Sendable (String) throws(ConfigurationError) -> ProviderPluginDescriptor?)?
    ) {
        self.plugins = plugins
        self.resolver = resolver
    }

    /// The same registry, asking `resolver` for names it does not hold (an absolute path to a shared
    /// object, a short name in a plugin directory). The resolver returns `nil` for a name it does not
    /// know, and throws for one it knows but cannot load.
    public func resolving(
        with resolver: @escaping @Sendable (String) throws(ConfigurationError) -> ProviderPluginDescriptor?
    ) -> ProviderRegistry {
        ProviderRegistry(plugins: plugins, resolver: resolver)
    }

    /// The backends' names, default first (those compiled in).
    public var names: [String] { plugins.map(\.name) }

    /// The plugin named `name`, if registered (compiled in).
    public func plugin(named name: String) -> ProviderPluginDescriptor? {
        plugins.first { $0.name == name }
    }

    /// The plugin named `name`: compiled in, or found by the resolver.
    /// - Throws: ``ConfigurationError`` when the resolver found it but could not load it.
    public func resolve(_ name: String) throws(ConfigurationError) -> ProviderPluginDescriptor? {
        if let plugin = plugin(named: name) { return plugin }
        return try resolver?(name)
    }

    /// Every option name any backend takes, for command-line parsing.
    public var optionNames: Set<String> {
        Set(plugins.flatMap { $0.options.map(\.name) })
    }

    /// Builds the backend `name` with `options`, refusing options it does not take.
    /// - Throws: ``ConfigurationError``.
    public func makeProvider(
        named name: String,
        options: [String: String] = [:]
    ) throws(ConfigurationError) -> any AuthProvider {
        guard let plugin = try resolve(name) else { throw .unknownProvider(name, available: names) }
        let accepted = Set(plugin.options.map(\.name))
        if let stray = options.keys.sorted().first(where: { !accepted.contains($0) }) {
            throw .unknownOption(stray, provider: name)
        }
        return try plugin.makeProvider(ProviderOptions(options))
    }
}
