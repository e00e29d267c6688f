#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where an installed tool finds what was installed with it, from where its own executable lies: a tool
/// in `PREFIX/bin` (`make install` puts them in `/usr/local/bin`, the Debian package in `/usr/bin`) uses
/// `PREFIX/libexec/gatekeeper` for its helper programs and `PREFIX/lib/gatekeeper/plugins` for plugins.
///
/// The executable is `/proc/self/exe`, which the kernel resolves: not `argv[0]`, and not anything in the
/// environment, so a caller cannot point a tool at other helpers or plugins. A tool elsewhere (the build
/// tree, say) uses the Debian package's places, `/usr/libexec/gatekeeper` and `/usr/lib/gatekeeper/plugins`.
package enum Installation {
    /// The directory holding the running executable, or `nil` when the kernel does not tell.
    package static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }

    /// `PREFIX` when `directory` is `PREFIX/bin`; `nil` otherwise.
    package static func prefix(ofExecutableDirectory directory: String) -> String? {
        // Compared as bytes, as the kernel names files.
        let bytes = Array(directory.utf8)
        guard bytes.count >= 4, bytes.suffix(4).elementsEqual("/bin".utf8) else { return nil }
        return String(decoding: bytes.dropLast(4), as: UTF8.self)
    }

    /// The installation prefix of the running tool (`/usr`, `/usr/local`, …), or `/usr` when it is not
    /// installed under a `bin` directory. Read once: the executable does not move.
    package static let prefix: String = executableDirectory().flatMap(prefix(ofExecutableDirectory:)) ?? "/usr"

    /// Where helper programs such as `gatekeeper-pam-helper` are installed.
    package static var helperDirectory: String { prefix + "/libexec/gatekeeper" }

    /// Where shared-object plugins named by a short name are looked for.
    package static var pluginDirectory: String { prefix + "/lib/gatekeeper/plugins" }
}
