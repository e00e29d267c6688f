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
        /// The uid owning the file named; root's file is an administrator's, whose state no invoker moves.
        public let owner: UInt32
    }

    /// - Throws: ``ConfigurationError``; a broken file, or an unsafe one, is never half used.
    public static func load(_ path: String, registry: ProviderRegistry) throws(ConfigurationError) -> StackConfiguration
    {
        try read(path, registry: registry).stack
    }

    /// The configuration in `path` and who owns that file.
    /// - Throws: ``ConfigurationError``; a broken file, or an unsafe one, is never half used.
    public static func read(_ path: String, registry: ProviderRegistry) throws(ConfigurationError) -> Loaded {
        // Named absolutely, so that what its relative names resolve to — and what --check-config prints —
        // does not depend on the directory the tool was started from.
        let path = path.hasPrefix("/") ? path : HostSettings.workingDirectory().map { $0 + "/" + path } ?? path
        let (bytes, owner) = try contents(path)
        let stack = try StackConfiguration.parse(bytes, file: path, registry: registry) {
            include throws(ConfigurationError) in
            try contents(include).bytes
        }
        return Loaded(stack: stack, owner: owner)
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
