public import Authentication
import GatekeeperSupport
public import ProviderPlugins

/// Reads a stack configuration (``StackConfiguration``) from a file, and every file it includes, as
/// safely as sudo reads sudoers: no symbolic link, a regular file owned by root or the running user,
/// not writable by group or others.
public enum ConfigurationFile {
    /// - Throws: ``ConfigurationError``; a broken file, or an unsafe one, is never half used.
    public static func load(_ path: String, registry: ProviderRegistry) throws(ConfigurationError) -> StackConfiguration
    {
        try StackConfiguration.parse(try read(path), file: path, registry: registry) {
            include throws(ConfigurationError) in
            try read(include)
        }
    }

    private static func read(_ path: String) throws(ConfigurationError) -> [UInt8] {
        switch readPrivateFile(path) {
        case .success(let bytes): return bytes
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
            throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, why)
        }
    }
}
