import GatekeeperSupport
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Finding shared-object plugins by the name a configuration gives them.
public enum SharedObjectPlugins {
    /// Where a short name (`example`) is looked for, as `DIRECTORY/NAME.so`: `PREFIX/lib/gatekeeper/plugins`
    /// for a tool installed in `PREFIX/bin` (`/usr/lib/gatekeeper/plugins` from the Debian package),
    /// `/usr/lib/gatekeeper/plugins` for one elsewhere.
    public static var directory: String { Installation.pluginDirectory }

    /// A resolver for ``ProviderRegistry/resolving(with:)``: an absolute path loads that file; a short name
    /// (letters, digits, `-`, `_`) loads `directory/NAME.so` if there is one; a relative path is refused.
    /// Without a `directory`, ``directory``, found only when a name is resolved (a tool that names no
    /// plugin never looks for its installation).
    public static func resolver(
        directory: String? = nil
    ) -> @Sendable (String) throws(ConfigurationError) -> ProviderPluginDescriptor? {
        { name throws(ConfigurationError) in
            let directory = directory ?? Self.directory
            let path: String
            if name.hasPrefix("/") {
                path = name
            } else if name.contains("/") {
                throw .unusable(
                    provider: name, reason: "a plugin is named by absolute path or by a short name in \(directory)")
            } else if !name.isEmpty,
                name.unicodeScalars.allSatisfy({
                    $0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == "-"
                        || $0 == "_"
                })
            {
                path = directory + "/" + name + ".so"
                var info = stat()
                guard lstat(path, &info) == 0 else { return nil }
            } else {
                return nil
            }
            do throws(PluginLoadError) {
                return try SharedObjectPlugin.load(path).descriptor
            } catch {
                throw .unusable(provider: name, reason: error.reason)
            }
        }
    }
}
