public import Authentication
import BlockingPools
import CGatekeeperPlugin
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A provider backed by a shared-object plugin. Its blocking `authenticate` runs on a thread of its own
/// through the package's blocking bridge: cancelling the login returns at once and calls the plugin's
/// `cancel`, and the plugin's late answer is dropped. What the plugin answers is checked like any input:
/// a user name that is not valid, text that is not UTF-8, or an unknown outcome is `unavailable`.
public final class SharedObjectProvider: AuthProvider {
    public var name: String { plugin.name }
    public let plugin: SharedObjectPlugin
    let instance: PluginInstance

    /// Plugins' logins (``ProcessPools/Role/plugins``): their threads, which ran foreign code, run no other
    /// pool's jobs.
    static var threads: BlockingPool { ProcessPools.pool(.plugins) }

    init(plugin: SharedObjectPlugin, instance: PluginInstance) {
        self.plugin = plugin
        self.instance = instance
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let login = PluginLogin(request: request, instance: instance, provider: name)
        login.bridge.onCancel { [login] in login.cancelInPlugin() }
        guard let result = await login.bridge.run(on: Self.threads, { _ in login.perform() }) else {
            throw .cancelled
        }
        return try result.get()
    }

    public func signOut(_ identity: Identity) async {
        guard let signOut = instance.table.pointer.pointee.sign_out else { return }
        let instance = self.instance
        _ = await Self.threads.run {
            identity.username.withCString { signOut(instance.pointer, $0) }
        }
    }
}

/// One login through a plugin: the conversation its callbacks reach, and the answers kept until it ends.
final class PluginLogin: @unchecked Sendable {
    let bridge = BlockingBridge<Result<AuthOutcome, AuthError>>()
    let request: AuthRequest
    let instance: PluginInstance
    let provider: String
    /// Answers handed to the plugin, wiped and freed when `authenticate` returns. Touched only on the
    /// login's thread.
    private var answers: [UnsafeMutableRawBufferPointer] = []
    /// What the conversation threw, passed on instead of the plugin's answer.
    private let conversationError = Locked<AuthError?>(nil)

    init(request: AuthRequest, instance: PluginInstance, provider: String) {
        self.request = request
        self.instance = instance
        self.provider = provider
    }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    func cancelInPlugin() {
        instance.table.pointer.pointee.cancel?(instance.pointer, context)
    }

    /// On the login's thread: the plugin's `authenticate`, its outcome read and released.
    func perform() -> Result<AuthOutcome, AuthError> {
        defer {
            for answer in answers {
                Secret.wipe(answer)
                answer.deallocate()
            }
            answers.removeAll()
        }
        var conversation = gk_conversation(
            abi_version: UInt32(GK_PLUGIN_ABI_VERSION), size: UInt32(MemoryLayout<gk_conversation>.size),
            context: context, ask: pluginAsk, show: pluginShow, is_cancelled: pluginIsCancelled)
        var outcome = gk_outcome()
        let table = instance.table.pointer.pointee
        let status = request.username.withCString { user in
            table.authenticate(instance.pointer, user, &conversation, &outcome)
        }
        defer { table.release_outcome?(instance.pointer, &outcome) }
        if bridge.isCancelled { return .failure(.cancelled) }
        if let error = conversationError.withLock({ $0 }),
            UInt32(bitPattern: outcome.kind) != GK_OUTCOME_AUTHENTICATED.rawValue
        {
            return .failure(error)
        }
        guard status == 0 else { return .success(.unavailable(reason: "the \(provider) plugin failed (\(status))")) }
        return PluginOutcome.read(outcome, provider: provider, request: request)
    }

    /// A question from the plugin, asked through the request's conversation.
    func ask(
        _ style: Int32, _ prompt: String, _ answer: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
        _ length: UnsafeMutablePointer<Int>?
    ) -> Int32 {
        let conversation = request.conversation
        let bytes: Result<[UInt8], AuthError>?
        switch style {
        case Int32(GK_ASK_HIDDEN.rawValue):
            bytes = bridge.ask { () async throws(AuthError) -> [UInt8] in
                let secret = try await conversation.askSecret(prompt)
                return secret.withUnsafeBytes { Array($0) }
            }
        case Int32(GK_ASK_VISIBLE.rawValue):
            bytes = bridge.ask { () async throws(AuthError) -> [UInt8] in Array(try await conversation.ask(prompt).utf8)
            }
        default:
            return Int32(GK_FAILED.rawValue)
        }
        switch bytes {
        case nil:
            return Int32(GK_CANCELLED.rawValue)
        case .failure(let error)?:
            if error == .cancelled { return Int32(GK_CANCELLED.rawValue) }
            conversationError.withLock { $0 = $0 ?? error }
            return Int32(GK_FAILED.rawValue)
        case .success(var value)?:
            defer { value.withUnsafeMutableBytes { Secret.wipe($0) } }
            guard let answer, let length else { return Int32(GK_FAILED.rawValue) }
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: value.count + 1, alignment: 1)
            copy.copyBytes(from: value)
            copy[value.count] = 0
            answers.append(copy)
            answer.pointee = UnsafePointer(copy.baseAddress!.assumingMemoryBound(to: CChar.self))
            length.pointee = value.count
            return Int32(GK_OK.rawValue)
        }
    }

    func show(_ style: Int32, _ message: String) -> Int32 {
        let kind: MessageKind
        switch style {
        case Int32(GK_SHOW_INFO.rawValue): kind = .info
        case Int32(GK_SHOW_ERROR.rawValue): kind = .error
        default: return Int32(GK_FAILED.rawValue)
        }
        let conversation = request.conversation
        let shown = bridge.ask { () async throws(AuthError) -> Bool in
            await conversation.show(message, as: kind)
            return true
        }
        return shown == nil ? Int32(GK_CANCELLED.rawValue) : Int32(GK_OK.rawValue)
    }
}

private func login(_ context: UnsafeMutableRawPointer?) -> PluginLogin? {
    context.map { Unmanaged<PluginLogin>.fromOpaque($0).takeUnretainedValue() }
}

/// The text of a prompt or message from a plugin: valid UTF-8 of at most 1,024 bytes, escaped.
private func pluginText(_ pointer: UnsafePointer<CChar>?) -> String? {
    SharedObjectPlugin.text(pointer)
}

private let pluginAsk:
    @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafePointer<CChar>?>?,
        UnsafeMutablePointer<Int>?
    ) -> Int32 = { context, style, prompt, answer, length in
        guard let login = login(context), let text = pluginText(prompt) else { return Int32(GK_FAILED.rawValue) }
        return login.ask(style, text, answer, length)
    }

private let pluginShow: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Int32 = {
    context, style, message in
    guard let login = login(context), let text = pluginText(message) else { return Int32(GK_FAILED.rawValue) }
    return login.show(style, text)
}

private let pluginIsCancelled: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { context in
    login(context)?.bridge.isCancelled == false ? 0 : 1
}

/// Reads a plugin's `gk_outcome` as an answer, checking everything in it.
enum PluginOutcome {
    static func read(_ outcome: gk_outcome, provider: String, request: AuthRequest) -> Result<AuthOutcome, AuthError> {
        func unavailable(_ why: String) -> Result<AuthOutcome, AuthError> {
            .success(.unavailable(reason: "the \(provider) plugin \(why)"))
        }
        func strings(_ pointer: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int) -> [String]? {
            guard count <= 1024 else { return nil }
            guard count > 0 else { return [] }
            guard let pointer else { return nil }
            var result: [String] = []
            for index in 0..<count {
                guard let text = SharedObjectPlugin.text(pointer[index]) else { return nil }
                result.append(text)
            }
            return result
        }
        var account: String?
        if let username = outcome.username {
            guard let name = try? Username.validate(String(cString: username)) else {
                return unavailable("answered a user name that cannot be used")
            }
            account = name
        }
        switch UInt32(bitPattern: outcome.kind) {
        case GK_OUTCOME_AUTHENTICATED.rawValue:
            guard let groups = strings(outcome.groups, outcome.group_count),
                let keys = strings(outcome.attribute_keys, outcome.attribute_count),
                let values = strings(outcome.attribute_values, outcome.attribute_count)
            else { return unavailable("answered groups or attributes that are not text") }
            return .success(
                .authenticated(
                    Identity(
                        username: account ?? request.username,
                        displayName: outcome.display_name.flatMap { SharedObjectPlugin.text($0) },
                        groups: Set(groups), provider: provider,
                        attributes: Dictionary(zip(keys, values), uniquingKeysWith: { first, _ in first })
                            // Whether a password must be changed is not a plugin's to say.
                            .filter { $0.key != Identity.passwordExpiredAttribute })))
        case GK_OUTCOME_REJECTED.rawValue:
            let rejection: Rejection
            switch UInt32(bitPattern: outcome.rejection) {
            case GK_REJECT_WRONG_CREDENTIALS.rawValue: rejection = .wrongCredentials
            case GK_REJECT_LOCKED.rawValue: rejection = .locked(until: nil)
            case GK_REJECT_EXPIRED_ACCOUNT.rawValue: rejection = .expiredAccount
            case GK_REJECT_PASSWORD_CHANGE_REQUIRED.rawValue: rejection = .passwordChangeRequired
            case GK_REJECT_POLICY.rawValue: rejection = .refusedByPolicy
            case GK_REJECT_TOO_MANY_TRIES.rawValue: rejection = .tooManyTries
            case GK_REJECT_ACTIVATION_REQUIRED.rawValue: rejection = .activationRequired
            default: return unavailable("answered an unknown rejection \(outcome.rejection)")
            }
            return .success(.rejected(rejection, canonicalUsername: account == request.username ? nil : account))
        case GK_OUTCOME_NOT_MINE.rawValue:
            return .success(.notMine)
        case GK_OUTCOME_IGNORED.rawValue:
            return .success(.ignored)
        case GK_OUTCOME_UNAVAILABLE.rawValue:
            return unavailable("is unavailable: \(SharedObjectPlugin.text(outcome.reason) ?? "no reason given")")
        case GK_OUTCOME_CANCELLED.rawValue:
            return .failure(.cancelled)
        default:
            return unavailable("answered an unknown outcome \(outcome.kind)")
        }
    }
}
