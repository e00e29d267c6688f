public import Authentication
import BlockingPools
import FoundationEssentials
import GatekeeperSupport
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How a helper program is run: the program (checked as a plugin file is), its environment, its limits.
public struct HelperSettings: Sendable {
    public var program: String
    /// Its arguments (never a secret).
    public var arguments: [String] = []
    /// `NAME=VALUE` entries, the whole environment the helper gets.
    public var environment: [String]
    public var timeout: Duration
    public var maxOutput: Int

    /// From `program=`, `env=NAME=VALUE,…` (default `PATH=/usr/bin:/bin`) and `timeout=` (a duration, default 10s).
    public init(_ options: ProviderOptions, provider: String) throws(ConfigurationError) {
        guard let program = options["program"] else { throw .missingOption("program", provider: provider) }
        switch TrustedFile.check(program, executable: true) {
        case .success(let resolved): self.program = resolved
        case .failure(let error): throw .unusable(provider: provider, reason: error.description)
        }
        environment = ["PATH=/usr/bin:/bin"]
        if let list = try options.list("env") {
            environment = []
            for entry in list {
                guard let (name, _) = ConfigurationValue.pair(entry), let first = name.unicodeScalars.first,
                    first == "_" || ("A"..."Z").contains(first),
                    name.unicodeScalars.allSatisfy({
                        $0 == "_" || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    })
                else {
                    throw .invalidValue(option: "env", value: entry, expected: "NAME=VALUE, with NAME in capitals")
                }
                environment.append(entry)
            }
        }
        timeout = try options.duration("timeout", in: .milliseconds(1) ... .seconds(3600)) ?? .seconds(10)
        maxOutput = 256 * 1024
    }

    /// A helper of this package's own: `program` checked as any helper is, run with `arguments`.
    public init(program: String, arguments: [String], timeout: Duration, provider: String)
        throws(ConfigurationError)
    {
        switch TrustedFile.check(program, executable: true) {
        case .success(let resolved): self.program = resolved
        case .failure(let error): throw .unusable(provider: provider, reason: error.description)
        }
        self.arguments = arguments
        environment = ["PATH=/usr/bin:/bin"]
        self.timeout = timeout
        maxOutput = 256 * 1024
    }

    static let options = [
        ProviderOption(
            "program", valueName: "PATH", help: "the helper program (absolute; root's or yours, not writable by others)"
        ),
        ProviderOption("env", valueName: "NAME=VALUE,...", help: "its whole environment (default PATH=/usr/bin:/bin)"),
        ProviderOption("timeout", valueName: "DURATION", help: "how long it may take, such as 10s (default 10s)"),
    ]
}

/// Helpers run on these threads (``ProcessPools/Role/helpers``).
var helperThreads: BlockingPool { ProcessPools.pool(.helpers) }

/// The checkpassword interface (qmail's, which Dovecot and others use): the user name, the password and an
/// empty timestamp, each NUL-terminated, on descriptor 3; exit 0 accepts, 1 rejects, 111 is a temporary
/// failure, anything else is unavailable. The program to run on success, the helper's first argument, is
/// `/bin/true`. An existing checkpassword program works unchanged.
public final class CheckpasswordProvider: AuthProvider {
    public let name = "checkpassword"
    public let settings: HelperSettings

    public init(_ settings: HelperSettings) { self.settings = settings }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let password = try await request.conversation.askSecret("Password: ")
        let settings = self.settings
        let username = request.username
        let bridge = BlockingBridge<AuthOutcome>()
        let outcome = await bridge.run(on: helperThreads) { bridge in
            var input = Array(username.utf8) + [0]
            password.withUnsafeBytes { input += $0 }
            input += [0, 0]
            defer { input.withUnsafeMutableBytes { Secret.wipe($0) } }
            let helper: HelperProcess
            do throws(HelperError) {
                helper = try HelperProcess(
                    program: settings.program, arguments: ["/bin/true"], environment: settings.environment,
                    extraInput: input, timeout: settings.timeout, maxOutput: settings.maxOutput)
            } catch {
                return .unavailable(reason: "checkpassword \(error)")
            }
            let cancelled = { bridge.isCancelled }
            switch helper.readAll(cancelled: cancelled) {
            case .line: break
            case .end: break
            case .timedOut:
                helper.stop()
                return .unavailable(reason: "checkpassword took longer than \(settings.timeout)")
            case .tooMuch:
                helper.stop()
                return .unavailable(reason: "checkpassword printed more than \(settings.maxOutput) bytes")
            case .cancelled:
                helper.stop()
                return .unavailable(reason: "cancelled")
            }
            switch helper.finish(cancelled: cancelled) {
            case 0?: return .authenticated(Identity(username: username, provider: "checkpassword"))
            case 1?: return .rejected(.wrongCredentials)
            case 111?: return .unavailable(reason: "checkpassword reported a temporary failure (111)")
            case let status?: return .unavailable(reason: "checkpassword failed with exit status \(status)")
            case nil: return .unavailable(reason: "checkpassword was stopped, or died by a signal")
            }
        }
        guard let outcome else { throw .cancelled }
        return outcome
    }
}

/// A helper that carries the whole conversation, in lines of JSON on its standard input and output.
///
/// The host writes one line to start: `{"version":1,"user":"alice","service":"gatekeeper","tty":…,"rhost":…,
/// "ruser":…}` (absent items are `null`). Then the helper writes, one JSON object a line:
/// - `{"prompt":"Password: ","echo":false}` — a question; the host answers `{"answer":"…"}` on one line,
///   or `{"cancelled":true}` (and the helper should end);
/// - `{"info":"…"}` or `{"error":"…"}` — a message, no answer;
/// - `{"outcome":"authenticated","user":"alice","display_name":"…","groups":["…"],"attributes":{"k":"v"}}`,
///   `{"outcome":"rejected","rejection":"wrong_credentials","user":"…"}` (also `locked`, `expired_account`,
///   `password_change_required`, `refused_by_policy`, `too_many_tries`), `{"outcome":"user_unknown"}`,
///   `{"outcome":"unavailable","reason":"…"}`, `{"outcome":"ignore"}` or
///   `{"outcome":"failed","code":"cred_err","reason":"…"}` (any of PAM's return codes by its name but
///   `success`) — the answer, after which it exits.
/// A line that is not one of these, more than 32 questions or 64 messages, a line over 64 KiB, more than
/// 256 KiB in all,
/// a crash, or no outcome within the time limit is `unavailable`, and the helper's process group is stopped.
public final class ConversationHelperProvider: AuthProvider {
    public let name: String
    public let settings: HelperSettings
    /// The service name sent in the first line.
    public let service: String

    public init(_ settings: HelperSettings, name: String = "helper", service: String = "gatekeeper") {
        self.settings = settings
        self.name = name
        self.service = service
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let settings = self.settings
        let start = HelperProtocol.start(request, service: service)
        let bridge = BlockingBridge<Result<AuthOutcome, AuthError>>()
        let name = self.name
        let result = await bridge.run(on: helperThreads) { bridge in
            let helper: HelperProcess
            do throws(HelperError) {
                helper = try HelperProcess(
                    program: settings.program, arguments: settings.arguments, environment: settings.environment,
                    extraInput: nil,
                    timeout: settings.timeout, maxOutput: settings.maxOutput)
            } catch {
                return .success(.unavailable(reason: "the \(name) helper \(error)"))
            }
            let result = HelperProtocol.converse(
                with: helper, start: start, request: request, bridge: bridge, name: name)
            // A helper that gave its outcome exits by itself; one cancelled or misbehaving is stopped.
            helper.stop(grace: bridge.isCancelled ? .zero : .milliseconds(100))
            return result
        }
        guard let result else { throw .cancelled }
        return try result.get()
    }
}

/// The conversation protocol's messages.
enum HelperProtocol {
    static let maxLine = 64 * 1024
    static let maxQuestions = 32
    static let maxMessages = 64

    struct Message: Decodable {
        var prompt: String?
        var echo: Bool?
        var info: String?
        var error: String?
        var outcome: String?
        var user: String?
        var display_name: String?
        var groups: [String]?
        var attributes: [String: String]?
        var rejection: String?
        var reason: String?
        var code: String?
    }

    static func start(_ request: AuthRequest, service: String) -> [UInt8] {
        func field(_ value: String?) -> String { value.map(json) ?? "null" }
        return Array(
            ("{\"version\":1,\"user\":\(json(request.username)),\"service\":\(json(service)),"
                + "\"tty\":\(field(request.terminal)),\"rhost\":\(field(request.remoteHost)),"
                + "\"ruser\":\(field(request.requestingUser))}\n").utf8)
    }

    /// `text` as a JSON string (``TextSafety/jsonQuoted(_:)``).
    static func json(_ text: String) -> String { TextSafety.jsonQuoted(text) }

    /// Runs the conversation to its outcome, on the helper's thread.
    static func converse(
        with helper: HelperProcess,
        start: [UInt8],
        request: AuthRequest,
        bridge: BlockingBridge<Result<AuthOutcome, AuthError>>,
        name: String
    ) -> Result<AuthOutcome, AuthError> {
        func unavailable(_ why: String) -> Result<AuthOutcome, AuthError> {
            .success(.unavailable(reason: "the \(name) helper \(why)"))
        }
        guard helper.write(start) else { return unavailable("did not read its input") }
        let conversation = request.conversation
        var questions = 0
        var messages = 0
        while true {
            let line: [UInt8]
            switch helper.readLine(maxLine: maxLine, cancelled: { bridge.isCancelled }) {
            case .line(let read): line = read
            case .end: return unavailable("ended without an outcome")
            case .timedOut: return unavailable("gave no outcome within \(helper.timeout)")
            case .tooMuch: return unavailable("printed more than the protocol allows")
            case .cancelled: return .failure(.cancelled)
            }
            guard let message = try? JSONDecoder().decode(Message.self, from: Data(line)) else {
                return unavailable("printed a line that is not the protocol")
            }
            if let prompt = message.prompt {
                questions += 1
                guard questions <= maxQuestions else { return unavailable("asked more than \(maxQuestions) questions") }
                let text = TextSafety.escaped(prompt)
                let answer: Result<[UInt8], AuthError>?
                if message.echo == true {
                    answer = bridge.ask { () async throws(AuthError) -> [UInt8] in
                        Array(try await conversation.ask(text).utf8)
                    }
                } else {
                    answer = bridge.ask { () async throws(AuthError) -> [UInt8] in
                        try await conversation.askSecret(text).withUnsafeBytes { Array($0) }
                    }
                }
                switch answer {
                case nil:
                    helper.write(Array("{\"cancelled\":true}\n".utf8))
                    return .failure(.cancelled)
                case .failure(let error)?:
                    helper.write(Array("{\"cancelled\":true}\n".utf8))
                    return .failure(error)
                case .success(var bytes)?:
                    // Answers are validated text (the gatekeeper checks every password), written as JSON.
                    var reply = Array("{\"answer\":\(json(String(decoding: bytes, as: UTF8.self)))}\n".utf8)
                    bytes.withUnsafeMutableBytes { Secret.wipe($0) }
                    let written = helper.write(reply)
                    reply.withUnsafeMutableBytes { Secret.wipe($0) }
                    guard written else { return unavailable("stopped reading its answers") }
                }
            } else if let text = message.info ?? message.error {
                messages += 1
                guard messages <= maxMessages else { return unavailable("showed more than \(maxMessages) messages") }
                let kind: MessageKind = message.info != nil ? .info : .error
                let shown = TextSafety.escaped(text)
                guard
                    bridge.ask({ () async throws(AuthError) -> Bool in
                        await conversation.show(shown, as: kind)
                        return true
                    }) != nil
                else { return .failure(.cancelled) }
            } else if let outcome = message.outcome {
                return read(outcome, message, request: request, name: name)
            } else {
                return unavailable("printed a line that is not the protocol")
            }
        }
    }

    static func read(_ outcome: String, _ message: Message, request: AuthRequest, name: String)
        -> Result<AuthOutcome, AuthError>
    {
        func unavailable(_ why: String) -> Result<AuthOutcome, AuthError> {
            .success(.unavailable(reason: "the \(name) helper \(why)"))
        }
        var account: String?
        if let user = message.user {
            guard let valid = try? Username.validate(user) else {
                return unavailable("answered a user name that cannot be used")
            }
            account = valid
        }
        switch outcome {
        case "authenticated":
            let groups = (message.groups ?? []).map { TextSafety.escaped($0) }
            var attributes = (message.attributes ?? [:]).reduce(into: [String: String]()) {
                $0[TextSafety.escaped($1.key)] = TextSafety.escaped($1.value)
            }
            // Whether a password must be changed is the host's to ask of its own backends, not a helper's to say.
            attributes[Identity.passwordExpiredAttribute] = nil
            guard groups.count <= 1024, attributes.count <= 1024 else { return unavailable("answered too many groups") }
            return .success(
                .authenticated(
                    Identity(
                        username: account ?? request.username,
                        displayName: message.display_name.map { TextSafety.escaped($0) },
                        groups: Set(groups), provider: name, attributes: attributes)))
        case "rejected":
            let rejection: Rejection
            switch message.rejection ?? "wrong_credentials" {
            case "wrong_credentials": rejection = .wrongCredentials
            case "locked": rejection = .locked(until: nil)
            case "expired_account": rejection = .expiredAccount
            case "password_change_required": rejection = .passwordChangeRequired
            case "refused_by_policy": rejection = .refusedByPolicy
            case "activation_required": rejection = .activationRequired
            case "too_many_tries": rejection = .tooManyTries
            default: return unavailable("answered an unknown rejection")
            }
            return .success(.rejected(rejection, canonicalUsername: account == request.username ? nil : account))
        case "user_unknown": return .success(.notMine)
        case "ignore": return .success(.ignored)
        case "unavailable":
            return unavailable("is unavailable: \(TextSafety.escaped(message.reason ?? "no reason given"))")
        case "failed":
            // Another of PAM's return codes, by its name; one with an answer of its own is that answer.
            // A failure the helper cannot name is a failure still: a system error, counted as a wrong
            // password would be once the password reached the helper — never the backend down.
            guard let code = message.code.flatMap(PAMResult.init(rawValue:)), code != .success else {
                return .success(.failed(.systemError, reason: "the \(name) helper answered an unknown PAM return code"))
            }
            let reason = "the \(name) helper failed: \(TextSafety.escaped(message.reason ?? code.rawValue))"
            return .success(AuthOutcome(pamResult: code, reason: reason))
        default: return unavailable("answered an unknown outcome")
        }
    }
}

/// `checkpassword program=PATH [env=…] [timeout=DURATION]`.
public enum CheckpasswordPlugin: AuthProviderPlugin {
    public static let name = "checkpassword"
    public static let summary = "a checkpassword program (qmail's interface), run for each login"
    public static let options = HelperSettings.options

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        CheckpasswordProvider(try HelperSettings(options, provider: name))
    }
}

/// `helper program=PATH [env=…] [timeout=DURATION]`: a program speaking the conversation protocol.
public enum ConversationHelperPlugin: AuthProviderPlugin {
    public static let name = "helper"
    public static let summary = "a helper program carrying the whole conversation in JSON lines"
    public static let options = HelperSettings.options

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        ConversationHelperProvider(try HelperSettings(options, provider: name))
    }
}
