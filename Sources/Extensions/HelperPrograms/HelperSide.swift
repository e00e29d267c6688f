public import Authentication
import FoundationEssentials
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The helper's side of the conversation protocol, for helpers written in Swift (this package's
/// `gatekeeper-pam-helper` is one): the first line, a ``Conversation`` over standard input and output,
/// and the outcome.
public enum HelperSide {
    /// The first line the host writes.
    public struct Start: Decodable, Sendable {
        public var version: Int
        public var user: String
        public var service: String
        public var tty: String?
        public var rhost: String?
        public var ruser: String?
    }

    /// The descriptors the protocol is spoken on: standard input and output, until ``protectChannels()``.
    nonisolated(unsafe) private static var input: Int32 = 0
    nonisolated(unsafe) private static var output: Int32 = 1

    /// Moves the protocol to descriptors of its own and points standard input and output at `/dev/null`,
    /// before any code that is not the helper's runs (a PAM module): what such code prints on standard
    /// output never reaches the host as a protocol line, and what it reads from standard input is not the
    /// host's answers. (Code that searches the process's descriptors can still find them: it is trusted with
    /// the outcome anyway.) Call it first, once, from the helper's single thread.
    public static func protectChannels() {
        let privateInput = fcntl(0, F_DUPFD_CLOEXEC, 3)
        let privateOutput = fcntl(1, F_DUPFD_CLOEXEC, 3)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard privateInput >= 0, privateOutput >= 0, null >= 0, dup2(null, 0) == 0, dup2(null, 1) == 1 else {
            // Cannot be kept apart: nothing is spoken at all, and the host hears the helper end.
            _exit(70)
        }
        close(null)
        (input, output) = (privateInput, privateOutput)
    }

    /// Reads the host's first line; `nil` when it is not one.
    public static func readStart() -> Start? {
        guard let line = readLine(), let start = try? JSONDecoder().decode(Start.self, from: Data(line)),
            start.version == 1
        else { return nil }
        return start
    }

    /// Writes `outcome` as the protocol's last line.
    public static func write(_ outcome: AuthOutcome) {
        func list(_ items: [String]) -> String { "[" + items.map(HelperProtocol.json).joined(separator: ",") + "]" }
        let line: String
        switch outcome {
        case .authenticated(let identity):
            let attributes = identity.attributes.sorted { $0.key < $1.key }
                .map { "\(HelperProtocol.json($0.key)):\(HelperProtocol.json($0.value))" }.joined(separator: ",")
            line =
                "{\"outcome\":\"authenticated\",\"user\":\(HelperProtocol.json(identity.username)),"
                + "\"display_name\":\(HelperProtocol.json(identity.displayName)),\"groups\":\(list(identity.groups.sorted())),"
                + "\"attributes\":{\(attributes)}}"
        case .rejected(let rejection, let canonical):
            let name: String =
                switch rejection {
                case .locked: "locked"
                case .expiredAccount: "expired_account"
                case .passwordChangeRequired: "password_change_required"
                case .refusedByPolicy: "refused_by_policy"
                case .activationRequired: "activation_required"
                case .tooManyTries: "too_many_tries"
                case .wrongCredentials: "wrong_credentials"
                }
            let user = canonical.map { ",\"user\":\(HelperProtocol.json($0))" } ?? ""
            line = "{\"outcome\":\"rejected\",\"rejection\":\"\(name)\"\(user)}"
        case .notMine: line = "{\"outcome\":\"user_unknown\"}"
        case .ignored: line = "{\"outcome\":\"ignore\"}"
        case .unavailable(let reason): line = "{\"outcome\":\"unavailable\",\"reason\":\(HelperProtocol.json(reason))}"
        case .failed(let code, let reason):
            line =
                "{\"outcome\":\"failed\",\"code\":\(HelperProtocol.json(code.rawValue)),"
                + "\"reason\":\(HelperProtocol.json(reason))}"
        }
        writeLine(Array(line.utf8))
    }

    /// One line from standard input, without its line break (at most 64 KiB); `nil` at its end.
    static func readLine() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= HelperProtocol.maxLine {
            let count = read(input, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return line.isEmpty ? nil : line }
            if byte == 0x0A { return line }
            line.append(byte)
        }
        return nil
    }

    static func writeLine(_ bytes: [UInt8]) {
        _ = writeAll(output, bytes + [0x0A])
    }

    /// The host's conversation, asked over standard input and output. A host that answers
    /// `{"cancelled":true}`, or goes away, cancels the login.
    public struct ProtocolConversation: Conversation {
        public init() {}

        private struct Reply: Decodable {
            var answer: String?
        }

        private func answer(_ prompt: String, echo: Bool) throws(AuthError) -> [UInt8] {
            HelperSide.writeLine(Array("{\"prompt\":\(HelperProtocol.json(prompt)),\"echo\":\(echo)}".utf8))
            guard var line = HelperSide.readLine() else { throw .cancelled }
            defer { line.withUnsafeMutableBytes { Secret.wipe($0) } }
            guard let reply = try? JSONDecoder().decode(Reply.self, from: Data(line)), let answer = reply.answer else {
                throw .cancelled
            }
            return Array(answer.utf8)
        }

        public func ask(_ prompt: String) async throws(AuthError) -> String {
            String(decoding: try answer(prompt, echo: true), as: UTF8.self)
        }

        public func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
            var bytes = try answer(prompt, echo: false)
            defer { bytes.withUnsafeMutableBytes { Secret.wipe($0) } }
            return Secret(copying: bytes)
        }

        public func show(_ message: String, as kind: MessageKind) async {
            let key = kind == .error ? "error" : "info"
            HelperSide.writeLine(Array("{\"\(key)\":\(HelperProtocol.json(message))}".utf8))
        }
    }
}
