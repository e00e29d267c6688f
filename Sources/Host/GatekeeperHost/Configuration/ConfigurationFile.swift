import Authentication
import GatekeeperSupport
public import ProviderPlugins

/// Reads a stack configuration (``StackConfiguration``) from a file, and every file it includes, as
/// safely as sudo reads sudoers: no symbolic link, a regular file owned by root or the running user,
/// not writable by group or others, in directories that are not either (the rule for plugins).
public enum ConfigurationFile {
    /// A configuration as read, with the owner of its file (from `fstat` of the descriptor read).
    public struct Loaded: Sendable {
        public let stack: StackConfiguration
        /// What its setting lines mean for the host.
        public let settings: StackSettings
        /// The uid owning the file named; root's file is an administrator's, whose state no invoker moves.
        public let owner: UInt32
    }

    /// - Throws: ``ConfigurationError``; a broken file, or an unsafe one, is never half used.
    public static func load(_ path: String, registry: ProviderRegistry) throws(ConfigurationError) -> StackConfiguration
    {
        try read(path, registry: registry).stack
    }

    /// `text` read as the file `file`: its stack and what its settings mean, each setting line read as it
    /// comes so that the first problem is the one reported; included files read with `read`.
    public static func parse(
        _ text: [UInt8], file: String, registry: ProviderRegistry,
        read: @escaping (String) throws(ConfigurationError) -> [UInt8] = { path throws(ConfigurationError) in
            throw ConfigurationError(.include, at: .init(file: path, line: 0, column: 0), word: path, "cannot be read")
        }
    ) throws(ConfigurationError) -> (stack: StackConfiguration, settings: StackSettings) {
        var settings = StackSettings()
        let stack = try StackConfiguration.parse(text, file: file, registry: registry, read: read) {
            line throws(ConfigurationError) in
            try settings.read(line)
        }
        try settings.finish()
        return (stack, settings)
    }

    /// The configuration in `path` and who owns that file.
    /// - Throws: ``ConfigurationError``; a broken file, or an unsafe one, is never half used.
    public static func read(_ path: String, registry: ProviderRegistry) throws(ConfigurationError) -> Loaded {
        // Named absolutely, so that what its relative names resolve to — and what --check-config prints —
        // does not depend on the directory the tool was started from.
        let path = path.hasPrefix("/") ? path : HostSettings.workingDirectory().map { $0 + "/" + path } ?? path
        let (bytes, owner) = try contents(path)
        let (stack, settings) = try parse(bytes, file: path, registry: registry) { include throws(ConfigurationError) in
            try contents(include).bytes
        }
        return Loaded(stack: stack, settings: settings, owner: owner)
    }

    private static func contents(_ path: String) throws(ConfigurationError) -> (bytes: [UInt8], owner: UInt32) {
        // The directories above it too, as for plugins and helpers: in a directory others may write, the
        // file checked is not the file read the next time.
        func refused(_ why: String) -> ConfigurationError {
            ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, why)
        }
        guard let resolved = resolvedPath(path) else { throw refused("cannot be found: \(errorDescription())") }
        if let problem = untrustedDirectory(above: resolved) { throw refused("is refused: \(problem)") }
        switch readPrivateFileAndOwner(path) {
        case .success(let read): return read
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
            throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, why)
        }
    }
}
