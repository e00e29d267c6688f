public import Authentication
import CGatekeeperPlugin
import GatekeeperSupport
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A provider plugin loaded at run time from a shared object that speaks the C ABI of
/// `gatekeeper_plugin.h`.
///
/// Loading is refused, before `dlopen`, for a relative path, a file that is not regular, an owner other
/// than root or the running user, and a file or any directory on its (resolved) path that group or others
/// may write; then the checked file itself is loaded (through its descriptor, so it cannot be swapped
/// between the check and the load). After `dlopen`, before any call: a missing entry point, or an ABI
/// version this host does not speak. Plugins are never unloaded; loading one path twice gives the same
/// plugin.
public final class SharedObjectPlugin: Sendable {
    /// The file it was loaded from, as resolved.
    public let path: String
    public let name: String
    public let summary: String
    public let options: [ProviderOption]
    let table: PluginTable

    /// The ABI version this host speaks.
    public static let abiVersion = UInt32(GK_PLUGIN_ABI_VERSION)

    private init(path: String, table: PluginTable) throws(PluginLoadError) {
        let entry = table.pointer.pointee
        guard entry.abi_version == Self.abiVersion else {
            throw PluginLoadError(
                .incompatible, path,
                "speaks plugin ABI version \(entry.abi_version); this host speaks version \(Self.abiVersion)")
        }
        guard entry.size >= MemoryLayout<gk_plugin>.size else {
            throw PluginLoadError(
                .incompatible, path, "its plugin table is \(entry.size) bytes, shorter than version 1's")
        }
        guard let name = Self.text(entry.name), !name.isEmpty, name.utf8.count <= 64,
            name.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "/" && $0 != "=" }),
            entry.create != nil, entry.authenticate != nil, entry.option_count <= 64
        else {
            throw PluginLoadError(.incompatible, path, "its plugin table lacks a usable name, create or authenticate")
        }
        var options: [ProviderOption] = []
        for index in 0..<entry.option_count {
            guard let option = entry.options?[index], let optionName = Self.text(option.name), !optionName.isEmpty,
                optionName.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "=" })
            else { throw PluginLoadError(.incompatible, path, "option \(index + 1) of its table has no usable name") }
            options.append(
                ProviderOption(
                    optionName, valueName: Self.text(option.value_name) ?? "VALUE", help: Self.text(option.help) ?? ""))
        }
        self.path = path
        self.name = name
        self.summary = Self.text(entry.summary) ?? ""
        self.options = options
        self.table = table
    }

    /// A C string from the plugin, as safe text (at most 1,024 bytes), or `nil`.
    static func text(_ pointer: UnsafePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        let length = strnlen(pointer, 1025)
        guard length <= 1024 else { return nil }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        return String(validating: bytes, as: UTF8.self).map { TextSafety.escaped($0) }
    }

    /// Plugins loaded so far, by device and inode: loading is once per file.
    private static let loaded = Locked<[FileIdentity: SharedObjectPlugin]>([:])

    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// Loads the plugin at `path` (absolute), checking it first as described above.
    /// - Throws: ``PluginLoadError`` naming the path and what is wrong.
    public static func load(_ path: String) throws(PluginLoadError) -> SharedObjectPlugin {
        guard path.hasPrefix("/") else {
            throw PluginLoadError(
                .notFound, path, "is not an absolute path; plugins are named by absolute path or short name")
        }
        guard let resolvedPointer = realpath(path, nil) else {
            throw PluginLoadError(.notFound, path, "cannot be found: \(errorDescription())")
        }
        let resolved = String(cString: resolvedPointer)
        free(resolvedPointer)
        if let problem = untrustedDirectory(above: resolved) { throw PluginLoadError(.untrusted, path, problem) }
        let file = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard file >= 0 else { throw PluginLoadError(.notFound, path, "cannot be opened: \(errorDescription())") }
        var loading = false
        // Once given to dlopen, the descriptor stays open for the life of the process: the loader knows
        // objects by name, and a reused /proc/self/fd/N would be taken for the object loaded before.
        defer { if !loading { close(file) } }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw PluginLoadError(.untrusted, path, "cannot be examined") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw PluginLoadError(.untrusted, path, "is not a regular file") }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            throw PluginLoadError(
                .untrusted, path, "is owned by uid \(info.st_uid), neither root nor the user running this program")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw PluginLoadError(
                .untrusted, path, "may be written by group or others; make it private with chmod go-w")
        }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        if let plugin = loaded.withLock({ $0[identity] }) { return plugin }
        // The checked file itself, through its descriptor: a rename in between cannot swap it.
        loading = true
        guard let handle = dlopen("/proc/self/fd/\(file)", RTLD_NOW | RTLD_LOCAL) else {
            throw PluginLoadError(
                .incompatible, path, "cannot be loaded: \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        guard let symbol = dlsym(handle, GK_PLUGIN_ENTRY) else {
            throw PluginLoadError(
                .incompatible, path, "has no entry point \(GK_PLUGIN_ENTRY); it is not a gatekeeper plugin")
        }
        let entry = unsafeBitCast(symbol, to: gk_plugin_entry_fn.self)
        guard let table = entry() else {
            throw PluginLoadError(.incompatible, path, "its entry point returned no plugin table")
        }
        let plugin = try SharedObjectPlugin(path: resolved, table: PluginTable(pointer: table))
        return loaded.withLock { loaded in
            if let earlier = loaded[identity] { return earlier }
            loaded[identity] = plugin
            return plugin
        }
    }

    /// The plugin as a registry entry: its name, options and how to build it.
    public var descriptor: ProviderPluginDescriptor {
        ProviderPluginDescriptor(name: name, summary: summary, options: options) {
            options throws(ConfigurationError) in
            try self.makeProvider(options)
        }
    }

    /// Makes an instance from `options` (the plugin's own `create`).
    /// - Throws: ``ConfigurationError/unusable(provider:reason:)`` with the plugin's message.
    public func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> SharedObjectProvider {
        let pairs = self.options.compactMap { option in options[option.name].map { (option.name, $0) } }
        var names = pairs.map { strdup($0.0) }
        var values = pairs.map { strdup($0.1) }
        defer {
            names.forEach { free($0) }
            values.forEach { free($0) }
        }
        var error: UnsafeMutablePointer<CChar>?
        let instance = names.withUnsafeMutableBufferPointer { namesBuffer in
            values.withUnsafeMutableBufferPointer { valuesBuffer in
                namesBuffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: pairs.count) { n in
                    valuesBuffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: pairs.count) {
                        v in table.pointer.pointee.create(n, v, pairs.count, &error)
                    }
                }
            }
        }
        guard let instance else {
            let message = error.flatMap { Self.text($0) } ?? "it gave no reason"
            free(error)
            throw .unusable(provider: name, reason: message)
        }
        free(error)
        return SharedObjectProvider(plugin: self, instance: PluginInstance(pointer: instance, table: table))
    }
}

/// The plugin's table: constant once returned, never freed.
struct PluginTable: @unchecked Sendable {
    let pointer: UnsafePointer<gk_plugin>
}

/// One instance a plugin's `create` made; destroyed with the provider.
final class PluginInstance: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    let table: PluginTable

    init(pointer: UnsafeMutableRawPointer, table: PluginTable) {
        self.pointer = pointer
        self.table = table
    }

    deinit { table.pointer.pointee.destroy?(pointer) }
}

/// A plugin that could not be loaded: a ``code`` to act on, the path, and what is wrong. Equal when the
/// codes are.
public struct PluginLoadError: CodedError {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<PluginLoadError>

    public let code: Code
    public let path: String
    public let reason: String

    public init(_ code: Code, _ path: String, _ reason: String) {
        self.code = code
        self.path = TextSafety.escaped(path)
        self.reason = reason
    }

    /// A plugin that is no plugin this host can use (``Code/incompatible``), as this type was made before
    /// it had codes.
    public init(_ path: String, _ reason: String) {
        self.init(.incompatible, path, reason)
    }

    public var description: String { "\(path): \(reason)" }
}

extension ErrorCode where Domain == PluginLoadError {
    /// No file is there to load (or the name is not an absolute path).
    public static var notFound: Self { Self("notFound") }
    /// The file is refused as unsafe: not a regular file, owned by someone else, writable by others, or in
    /// a directory others may write.
    public static var untrusted: Self { Self("untrusted") }
    /// The file is no plugin this host can use: it does not load, has no entry point, or its table is of
    /// another ABI version or unusable.
    public static var incompatible: Self { Self("incompatible") }
}
