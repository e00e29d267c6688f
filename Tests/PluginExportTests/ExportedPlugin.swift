import Authentication
import BlockingPools
import CGatekeeperPlugin
import PluginExport
import ProviderPlugins
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The plugin table this test process exports, reached the way a host reaches a plugin's: through the
/// table's C function pointers only. One table per process (as one per shared object), made on first
/// use; each test registers the provider its instance is to be made of, named by the `double=` option.
enum ExportedPlugin {
    static let name = "export-test"

    /// The table, as `gatekeeper_plugin_entry` would return it.
    static let table = TablePointer(
        PluginExport.table(
            name: name, summary: "providers registered by the tests",
            options: [
                ProviderOption("double", valueName: "ID", help: "the registered provider"),
                ProviderOption("fail", valueName: "TEXT", help: "refuse to start, with this message"),
            ]
        ) { options in try make(options) }
        .assumingMemoryBound(to: gk_plugin.self))

    private static let registered = Locked<(next: Int, providers: [String: any AuthProvider])>((0, [:]))

    /// Registers `provider` for the next `create` naming the returned id (which takes it out again, so
    /// that only the instance holds it).
    static func register(_ provider: any AuthProvider) -> String {
        registered.withLock { registered in
            registered.next += 1
            registered.providers["\(registered.next)"] = provider
            return "\(registered.next)"
        }
    }

    private static func make(_ options: ProviderOptions) throws -> any AuthProvider {
        if let message = options["fail"] { throw ConfigurationError.unusable(provider: name, reason: message) }
        guard let id = options["double"], let provider = registered.withLock({ $0.providers.removeValue(forKey: id) })
        else { throw ConfigurationError.missingOption("double", provider: name) }
        return provider
    }
}

/// The table's address: constant for the life of the process, never freed.
struct TablePointer: @unchecked Sendable {
    let pointer: UnsafePointer<gk_plugin>

    init(_ pointer: UnsafePointer<gk_plugin>) { self.pointer = pointer }

    var entry: gk_plugin { pointer.pointee }
}

/// One instance the table's `create` made, as a host holds it: destroyed once, through `destroy`.
final class ExportedInstance: @unchecked Sendable {
    // @unchecked: the plugin's opaque pointer, which the ABI lets any thread use.
    let pointer: UnsafeMutableRawPointer
    private let destroyed = Locked(false)

    /// An instance of `provider`.
    init(_ provider: any AuthProvider) throws {
        let (made, message) = Self.create(["double": ExportedPlugin.register(provider)])
        guard let made else { throw CreateRefused(message: message) }
        pointer = made
    }

    /// Calls `create` with `options` as a host does: two arrays of C strings and their count. The
    /// instance, or `nil` and the plugin's message.
    static func create(_ options: KeyValuePairs<String, String>) -> (UnsafeMutableRawPointer?, String?) {
        let names = options.map { UnsafePointer(strdup($0.key)) }
        let values = options.map { UnsafePointer(strdup($0.value)) }
        defer { (names + values).forEach { free(UnsafeMutableRawPointer(mutating: $0)) } }
        var error: UnsafeMutablePointer<CChar>?
        let instance = names.withUnsafeBufferPointer { names in
            values.withUnsafeBufferPointer { values in
                ExportedPlugin.table.entry.create(names.baseAddress, values.baseAddress, options.count, &error)
            }
        }
        defer { free(error) }
        return (instance, error.map { String(cString: $0) })
    }

    /// `destroy`, once.
    func destroy() {
        guard
            destroyed.withLock({ done in
                defer { done = true }; return !done
            })
        else { return }
        ExportedPlugin.table.entry.destroy(pointer)
    }

    deinit { destroy() }

    /// `authenticate` for `username` (NUL-terminated here), with `host`'s conversation: blocks, as it
    /// does for a host. The outcome is copied out, then given back with `release_outcome`.
    func authenticate(_ username: [UInt8]?, _ host: HostConversation) -> ExportedAnswer {
        var conversation = host.conversation
        return authenticate(username, conversation: &conversation)
    }

    func authenticate(_ username: [UInt8]?, conversation: UnsafePointer<gk_conversation>?) -> ExportedAnswer {
        var outcome = gk_outcome()
        let status: Int32
        if let username {
            status = (username + [0]).withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { name in
                    ExportedPlugin.table.entry.authenticate(pointer, name.baseAddress, conversation, &outcome)
                }
            }
        } else {
            status = ExportedPlugin.table.entry.authenticate(pointer, nil, conversation, &outcome)
        }
        let answer = ExportedAnswer(status: status, outcome)
        ExportedPlugin.table.entry.release_outcome(pointer, &outcome)
        return answer
    }
}

struct CreateRefused: Error {
    let message: String?
}

/// A `gk_outcome` as the host reads it, with the call's status; strings copied out.
struct ExportedAnswer: Hashable, Sendable {
    var status: Int32
    var kind: Int32
    var rejection: Int32
    var username: String?
    var displayName: String?
    var groups: [String]
    var attributes: [String: String]
    var reason: String?
    /// Whether the plugin left something for `release_outcome`.
    var hasPluginData: Bool

    init(status: Int32, _ outcome: gk_outcome) {
        func strings(_ array: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int) -> [String] {
            (0..<count).map { index in array?[index].map { String(cString: $0) } ?? "<NULL>" }
        }
        self.status = status
        kind = outcome.kind
        rejection = outcome.rejection
        username = outcome.username.map { String(cString: $0) }
        displayName = outcome.display_name.map { String(cString: $0) }
        groups = strings(outcome.groups, outcome.group_count)
        attributes = Dictionary(
            zip(
                strings(outcome.attribute_keys, outcome.attribute_count),
                strings(outcome.attribute_values, outcome.attribute_count)),
            uniquingKeysWith: { first, _ in first })
        reason = outcome.reason.map { String(cString: $0) }
        hasPluginData = outcome.plugin_data != nil
    }

    /// Every text the plugin handed back.
    var texts: [String] {
        [username, displayName, reason].compactMap { $0 } + groups + attributes.keys + attributes.values
    }

    static let authenticated = Int32(GK_OUTCOME_AUTHENTICATED.rawValue)
    static let rejected = Int32(GK_OUTCOME_REJECTED.rawValue)
    static let notMine = Int32(GK_OUTCOME_NOT_MINE.rawValue)
    static let unavailable = Int32(GK_OUTCOME_UNAVAILABLE.rawValue)
    static let ignored = Int32(GK_OUTCOME_IGNORED.rawValue)
    static let cancelled = Int32(GK_OUTCOME_CANCELLED.rawValue)
}

/// One blocking call into the plugin on a thread of its own, as a host makes it (the cooperative pool
/// is never blocked), awaited with a deadline.
final class RunningCall<Value: Sendable>: Sendable {
    private let result = Locked<Value?>(nil)

    init(_ call: @escaping @Sendable () -> Value) {
        hostThreads.submit { [result] in
            let value = call()
            result.withLock { $0 = value }
        }
    }

    var hasReturned: Bool { result.withLock { $0 != nil } }

    /// The call's value once it has returned, or `nil` if it has not within `seconds` (then the test
    /// has failed: the call is left to return whenever it does).
    func value(within seconds: Int = 20) async -> Value? {
        _ = await eventually(within: seconds) { hasReturned }
        return result.withLock { $0 }
    }
}

private let hostThreads = BlockingPool(name: "test.host", maxThreads: 32, maxIdle: 0)

extension ExportedInstance {
    /// `authenticate`, started on a thread of its own.
    func start(_ username: String, _ host: HostConversation) -> RunningCall<ExportedAnswer> {
        RunningCall { [self] in authenticate(Array(username.utf8), host) }
    }

    /// `authenticate` run to its end (at most 20 s).
    func login(_ username: String, _ host: HostConversation) async -> ExportedAnswer? {
        await start(username, host).value()
    }
}
