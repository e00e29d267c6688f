public import Authentication
import BlockingPools
import CGatekeeperPlugin
import GatekeeperSupport
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Exports an ``AuthProvider`` written in Swift as a shared-object plugin, through the C ABI of
/// `gatekeeper_plugin.h` — the only thing that crosses into the host, which may carry other copies of
/// these modules.
///
/// ```swift
/// @_cdecl("gatekeeper_plugin_entry")
/// public func gatekeeperPluginEntry() -> UnsafeRawPointer {
///     PluginExport.table(name: "example", summary: "…", options: [ProviderOption("users", …)]) { options in
///         try ExampleProvider(options)
///     }
/// }
/// ```
///
/// The host calls `authenticate` on a thread of its own; the provider's async `authenticate` runs as a task,
/// its questions go to the host's callbacks on a thread apart from the cooperative pool, and the host's
/// `cancel` cancels the task. One plugin per shared object.
public enum PluginExport {
    /// The plugin table, made on the first call and kept for the life of the process.
    public static func table(
        name: String,
        summary: String,
        options: [ProviderOption],
        make: @escaping @Sendable (ProviderOptions) throws -> any AuthProvider
    ) -> UnsafeRawPointer {
        exported.withLock { exported in
            if let table = exported?.table { return UnsafeRawPointer(table) }
            let plugin = ExportedPlugin(name: name, make: make)
            let optionTable = UnsafeMutablePointer<gk_option>.allocate(capacity: max(options.count, 1))
            for (index, option) in options.enumerated() {
                optionTable[index] = gk_option(
                    name: UnsafePointer(strdup(option.name)), value_name: UnsafePointer(strdup(option.valueName)),
                    help: UnsafePointer(strdup(option.help)))
            }
            let table = UnsafeMutablePointer<gk_plugin>.allocate(capacity: 1)
            table.initialize(
                to: gk_plugin(
                    abi_version: UInt32(GK_PLUGIN_ABI_VERSION), size: UInt32(MemoryLayout<gk_plugin>.size),
                    name: UnsafePointer(strdup(name)), summary: UnsafePointer(strdup(summary)),
                    options: UnsafePointer(optionTable), option_count: options.count, create: exportedCreate,
                    authenticate: exportedAuthenticate, release_outcome: exportedRelease, cancel: exportedCancel,
                    sign_out: exportedSignOut, destroy: exportedDestroy))
            plugin.table = UnsafePointer(table)
            exported = plugin
            return UnsafeRawPointer(table)
        }
    }

    /// The most options `create` reads.
    static let maxOptions = 1024

    /// Questions go to the host from these threads, never from the cooperative pool: the host answers
    /// them with tasks of its own, which blocked cooperative threads would starve. The host's code runs on
    /// them, so they run no other pool's jobs.
    /// (``ProcessPools/Role/pluginExport``).
    static var threads: BlockingPool { ProcessPools.pool(.pluginExport) }
}

private let exported = Locked<ExportedPlugin?>(nil)

private final class ExportedPlugin: @unchecked Sendable {
    let name: String
    let make: @Sendable (ProviderOptions) throws -> any AuthProvider
    var table: UnsafePointer<gk_plugin>?

    init(name: String, make: @escaping @Sendable (ProviderOptions) throws -> any AuthProvider) {
        self.name = name
        self.make = make
    }
}

/// One instance: the provider, and the logins in progress by their conversation context.
private final class ExportedInstance: Sendable {
    let provider: any AuthProvider
    /// Several logins may share a context (a host that keeps one for all): each is kept under its own
    /// number, so that one ending leaves the others within reach of a `cancel` for it.
    private let logins = Locked<(next: Int, byContext: [UInt: [Int: Task<Void, Never>]])>((0, [:]))

    init(_ provider: any AuthProvider) { self.provider = provider }

    /// Keeps `task` as a login with `context` until ``end(_:of:)``; returns its number.
    func begin(_ task: Task<Void, Never>, context: UInt) -> Int {
        logins.withLock { logins in
            logins.next += 1
            logins.byContext[context, default: [:]][logins.next] = task
            return logins.next
        }
    }

    func end(_ login: Int, of context: UInt) {
        logins.withLock { logins in
            logins.byContext[context]?[login] = nil
            if logins.byContext[context]?.isEmpty == true { logins.byContext[context] = nil }
        }
    }

    /// Cancels every login in progress with `context`.
    func cancel(_ context: UInt) {
        logins.withLock { $0.byContext[context].map { Array($0.values) } ?? [] }.forEach { $0.cancel() }
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> ExportedInstance? {
        pointer.map { Unmanaged<ExportedInstance>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// What `authenticate` filled in, freed by `release_outcome`.
private final class OutcomeStorage {
    var allocations: [UnsafeMutableRawPointer] = []

    func string(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        allocations.append(UnsafeMutableRawPointer(copy))
        return UnsafePointer(copy)
    }

    func strings(_ texts: [String]) -> UnsafePointer<UnsafePointer<CChar>?> {
        let array = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(texts.count, 1))
        for (index, text) in texts.enumerated() { array[index] = string(text) }
        allocations.append(UnsafeMutableRawPointer(array))
        return UnsafePointer(array)
    }

    deinit { allocations.forEach { free($0) } }
}

/// The host's callbacks: plain C function pointers and the host's context, valid while the login runs.
private struct Callbacks: @unchecked Sendable {
    let value: gk_conversation
}

/// The host's callbacks one login has running, so that `authenticate` returns only once none is: the
/// conversation is the host's only during that call (gatekeeper_plugin.h), and a question the provider
/// stopped waiting for — its task cancelled — may still be running in the host. Once the login ends, no
/// callback starts.
private final class HostCalls: Sendable {
    private let state = Locked<(running: Int, ended: Bool, idle: Signal?)>((0, false, nil))

    /// Runs `call` unless the login has ended; `nil` when it has.
    func run<T>(_ call: () -> T) -> T? {
        let started = state.withLock { state in
            guard !state.ended else { return false }
            state.running += 1
            return true
        }
        guard started else { return nil }
        defer {
            state.withLock { state in
                state.running -= 1
                if state.running == 0 { state.idle?.post() }
            }
        }
        return call()
    }

    /// The login ended: no callback starts any more, and this waits for those running.
    func end() {
        let idle = state.withLock { state -> Signal? in
            state.ended = true
            guard state.running > 0 else { return nil }
            state.idle = Signal()
            return state.idle
        }
        idle?.wait()
    }
}

/// The host's conversation, reached through its callbacks off the cooperative pool.
///
/// What the host answers is checked before the provider sees it, as a ``Gatekeeper`` checks it: a
/// provider may rely on the same answers whether it runs in a host of this package or another. An
/// answer longer than any may be is refused before it is read; a hidden one must pass
/// ``Credentials/validatePassword(_:)``, a visible one must be UTF-8 without a NUL (as the ABI says).
private struct CallbackConversation: Conversation {
    let wrapped: Callbacks
    let calls: HostCalls
    var callbacks: gk_conversation { wrapped.value }

    /// The longest visible answer taken from the host.
    static let maxVisibleBytes = 65_536

    /// The host's answer, at most `limit` bytes (`tooLong` when the host says it is longer).
    func askBytes(_ prompt: String, style: gk_style, limit: Int, tooLong: AuthError) async throws(AuthError)
        -> [UInt8]
    {
        // A C string ends at its first NUL: the host would ask another question.
        guard !prompt.utf8.contains(0) else {
            throw .providerUnavailable(reason: "a prompt with a NUL byte cannot cross the plugin ABI")
        }
        let (wrapped, calls) = (self.wrapped, self.calls)
        let answer = await PluginExport.threads.run { () -> Result<[UInt8], AuthError> in
            let callbacks = wrapped.value
            var pointer: UnsafePointer<CChar>?
            var length = 0
            let asked = calls.run {
                prompt.withCString { callbacks.ask(callbacks.context, Int32(style.rawValue), $0, &pointer, &length) }
            }
            guard let status = asked else { return .failure(.cancelled) }
            switch status {
            case Int32(GK_OK.rawValue):
                guard let pointer else { return .failure(.providerUnavailable(reason: "the host gave no answer")) }
                // A size_t past Int.max reads as negative here.
                guard (0...limit).contains(length) else { return .failure(tooLong) }
                return .success(Array(UnsafeRawBufferPointer(start: pointer, count: length)))
            case Int32(GK_CANCELLED.rawValue): return .failure(.cancelled)
            default: return .failure(.providerUnavailable(reason: "the host's conversation failed"))
            }
        }
        guard let answer else { throw .cancelled }
        return try answer.get()
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        let limit = Self.maxVisibleBytes
        let bytes = try await askBytes(
            prompt, style: GK_ASK_VISIBLE, limit: limit,
            tooLong: .providerUnavailable(reason: "the host's answer is longer than \(limit) bytes"))
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else {
            throw .providerUnavailable(reason: "the host's answer is not UTF-8 text without NUL bytes")
        }
        return text
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let limit = Credentials.maxPasswordBytes
        var bytes = try await askBytes(
            prompt, style: GK_ASK_HIDDEN, limit: limit, tooLong: .invalidPassword(.tooLong(maxBytes: limit)))
        defer { bytes.withUnsafeMutableBytes { Secret.wipe($0) } }
        let secret = Secret(copying: bytes)
        try Credentials.validatePassword(secret)
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        let message = withoutNUL(message)
        let (wrapped, calls) = (self.wrapped, self.calls)
        let style = Int32((kind == .error ? GK_SHOW_ERROR : GK_SHOW_INFO).rawValue)
        _ = await PluginExport.threads.run {
            calls.run { message.withCString { wrapped.value.show(wrapped.value.context, style, $0) } }
        }
    }
}

private let exportedCreate:
    @convention(c) (
        UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<UnsafePointer<CChar>?>?, Int,
        UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    ) -> UnsafeMutableRawPointer? = { names, values, count, error in
        guard let plugin = exported.withLock({ $0 }) else { return nil }
        func refuse(_ message: String) -> UnsafeMutableRawPointer? {
            error?.pointee = strdup(message)
            return nil
        }
        // A size_t past Int.max reads as negative here.
        guard (0...PluginExport.maxOptions).contains(count) else {
            return refuse(
                "the host gave \(UInt(bitPattern: count)) options; at most \(PluginExport.maxOptions) are read")
        }
        var options: [String: String] = [:]
        for index in 0..<count {
            guard let name = names?[index], let value = values?[index] else {
                return refuse("option \(index + 1) of \(count) has no name or no value")
            }
            options[String(cString: name)] = String(cString: value)
        }
        do {
            let provider = try plugin.make(ProviderOptions(options))
            return Unmanaged.passRetained(ExportedInstance(provider)).toOpaque()
        } catch let failure {
            error?.pointee = strdup("\(failure)")
            return nil
        }
    }

private let exportedAuthenticate:
    @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafePointer<gk_conversation>?,
        UnsafeMutablePointer<gk_outcome>?
    ) -> Int32 = { pointer, username, conversation, outcome in
        guard let instance = ExportedInstance.from(pointer), let username, let conversation, let outcome else {
            return -1
        }
        // A conversation shorter than version 1's, or without one of its callbacks, is not one: nothing is
        // read past its size, nothing is called.
        let sizeOffset = MemoryLayout<gk_conversation>.offset(of: \.size)!
        guard
            UnsafeRawPointer(conversation).load(fromByteOffset: sizeOffset, as: UInt32.self)
                >= MemoryLayout<gk_conversation>.size
        else { return -1 }
        let callbacks = conversation.pointee
        guard callbacks.ask != nil, callbacks.show != nil, callbacks.is_cancelled != nil else { return -1 }
        // The provider may rely on the name passing Username.validate, as behind a Gatekeeper. A name no
        // account can have is no account of this plugin's.
        guard let name = validUsername(username) else {
            fill(outcome, with: .success(.notMine))
            return 0
        }
        let calls = HostCalls()
        let request = AuthRequest(
            username: name, conversation: CallbackConversation(wrapped: Callbacks(value: callbacks), calls: calls))
        let done = Signal()
        let result = Locked<Result<AuthOutcome, AuthError>>(.failure(.cancelled))
        let key = UInt(bitPattern: callbacks.context)
        let task = Task {
            do throws(AuthError) {
                let answer = try await instance.provider.authenticate(request)
                result.withLock { $0 = .success(answer) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.post()
        }
        let login = instance.begin(task, context: key)
        if callbacks.is_cancelled(callbacks.context) != 0 { task.cancel() }
        done.wait()
        instance.end(login, of: key)
        // A question the provider stopped waiting for may still be in the host's hands.
        calls.end()
        fill(outcome, with: result.withLock { $0 })
        return 0
    }

/// `text` with each NUL byte replaced by U+FFFD: a C string ends at its first NUL, and a message cut
/// there would say less than it was written to.
private func withoutNUL(_ text: String) -> String {
    guard text.utf8.contains(0) else { return text }
    return String(decoding: text.utf8.flatMap { $0 == 0 ? [0xEF, 0xBF, 0xBD] : [$0] }, as: UTF8.self)
}

/// What of `result` the ABI can carry. An identity or an account's spelling with a NUL byte is no
/// answer — the host would read the name before the NUL, another name — and a reason's NULs are
/// replaced.
private func crossable(_ result: Result<AuthOutcome, AuthError>) -> Result<AuthOutcome, AuthError> {
    func hasNUL(_ text: String) -> Bool { text.utf8.contains(0) }
    let refused = "the provider answered a name with a NUL byte, which the plugin ABI cannot carry"
    switch result {
    case .success(.authenticated(let identity)):
        let texts =
            [identity.username, identity.displayName] + identity.groups
            + identity.attributes.flatMap { [$0.key, $0.value] }
        return texts.contains(where: hasNUL) ? .success(.unavailable(reason: refused)) : result
    case .success(.rejected(_, let canonical?)) where hasNUL(canonical):
        return .success(.unavailable(reason: refused))
    case .success(.unavailable(let reason)):
        return .success(.unavailable(reason: withoutNUL(reason)))
    case .success(.failed(let code, let reason)):
        return .success(.failed(code, reason: withoutNUL(reason)))
    default:
        return result
    }
}

private func fill(_ outcome: UnsafeMutablePointer<gk_outcome>, with result: Result<AuthOutcome, AuthError>) {
    let result = crossable(result)
    let storage = OutcomeStorage()
    var filled = gk_outcome()
    switch result {
    case .success(.authenticated(let identity)):
        filled.kind = Int32(GK_OUTCOME_AUTHENTICATED.rawValue)
        filled.username = storage.string(identity.username)
        filled.display_name = storage.string(identity.displayName)
        let groups = identity.groups.sorted()
        filled.groups = storage.strings(groups)
        filled.group_count = groups.count
        let attributes = identity.attributes.sorted { $0.key < $1.key }
        filled.attribute_keys = storage.strings(attributes.map { $0.key })
        filled.attribute_values = storage.strings(attributes.map { $0.value })
        filled.attribute_count = attributes.count
    case .success(.rejected(let rejection, let canonical)):
        filled.kind = Int32(GK_OUTCOME_REJECTED.rawValue)
        filled.username = canonical.map { storage.string($0) }
        let code: gk_rejection =
            switch rejection {
            case .wrongCredentials: GK_REJECT_WRONG_CREDENTIALS
            case .locked: GK_REJECT_LOCKED
            case .expiredAccount: GK_REJECT_EXPIRED_ACCOUNT
            case .passwordChangeRequired: GK_REJECT_PASSWORD_CHANGE_REQUIRED
            case .tooManyTries: GK_REJECT_TOO_MANY_TRIES
            case .activationRequired: GK_REJECT_ACTIVATION_REQUIRED
            case .refusedByPolicy: GK_REJECT_POLICY
            }
        filled.rejection = Int32(code.rawValue)
    case .success(.notMine):
        filled.kind = Int32(GK_OUTCOME_NOT_MINE.rawValue)
    case .success(.ignored):
        filled.kind = Int32(GK_OUTCOME_IGNORED.rawValue)
    case .success(.unavailable(let reason)):
        filled.kind = Int32(GK_OUTCOME_UNAVAILABLE.rawValue)
        filled.reason = storage.string(reason)
    case .success(.failed(let code, let reason)):
        // The plugin ABI (version 1) has no PAM code of its own: the host sees the backend down.
        filled.kind = Int32(GK_OUTCOME_UNAVAILABLE.rawValue)
        filled.reason = storage.string("\(code.rawValue): \(reason)")
    case .failure(let error) where error == .cancelled:
        filled.kind = Int32(GK_OUTCOME_CANCELLED.rawValue)
    case .failure(let error):
        // The conversation failed — at the host, which then answers with its own error, or here, on an
        // answer that could not be used — and the provider passed it on: no answer, but no cancellation
        // either. An error's description quotes no input.
        filled.kind = Int32(GK_OUTCOME_UNAVAILABLE.rawValue)
        filled.reason = storage.string(withoutNUL("\(error)"))
    }
    filled.plugin_data = Unmanaged.passRetained(storage).toOpaque()
    outcome.pointee = filled
}

private let exportedRelease: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<gk_outcome>?) -> Void = {
    _, outcome in
    guard let data = outcome?.pointee.plugin_data else { return }
    Unmanaged<OutcomeStorage>.fromOpaque(data).release()
    outcome?.pointee.plugin_data = nil
}

private let exportedCancel: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = {
    pointer, context in
    guard let instance = ExportedInstance.from(pointer) else { return }
    instance.cancel(UInt(bitPattern: context))
}

private let exportedSignOut: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void = {
    pointer, username in
    // A name no account can have was never signed in here: the provider is not told of it.
    guard let instance = ExportedInstance.from(pointer), let username = validUsername(username),
        let plugin = exported.withLock({ $0 })
    else { return }
    let identity = Identity(username: username, provider: plugin.name)
    let done = Signal()
    Task {
        await instance.provider.signOut(identity)
        done.post()
    }
    done.wait()
}

/// The C string at `pointer` as a user name that passes `Username.validate`, read no further than the
/// longest name; `nil` for a null pointer or a name no account can have.
private func validUsername(_ pointer: UnsafePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    let length = strnlen(pointer, Username.maxBytes + 1)
    return try? Username.validate(utf8: UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length))
}

private let exportedDestroy: @convention(c) (UnsafeMutableRawPointer?) -> Void = { pointer in
    guard let pointer else { return }
    Unmanaged<ExportedInstance>.fromOpaque(pointer).release()
}
