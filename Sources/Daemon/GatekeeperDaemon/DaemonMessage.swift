package import Authentication
import CGatekeeperWire

/// What gatekeeperd and `pam_gatekeeper.so` say to each other over the daemon's socket: one message per
/// frame, written and read as bytes (docs/pam-module.md, "The protocol").
///
/// A frame is a 4-byte big-endian length, then that many bytes (1 to ``maxFrame``): the protocol's version
/// (``version``), the message's type, then its fields, each a one-byte tag, a 2-byte big-endian length and
/// that many bytes. A field appears at most once; a tag the type does not have, a text that is not UTF-8 or
/// holds a NUL byte, a number of the wrong size — each is a ``DaemonProtocolError`` that ends the
/// connection, and nothing else. The module (`Sources/Daemon/PAMModule/pam_gatekeeper.c`) writes and reads
/// the same layout; every number of it, here and there, is `gatekeeper_wire.h`'s (CGatekeeperWire).
package enum DaemonMessage: Equatable, Sendable {
    /// The one request a connection carries, from the module.
    case request(DaemonRequest)
    /// The module's answer to the last question (a password, a code: it may be a secret).
    case answer(Secret)
    /// The module's conversation failed (the person pressed Ctrl-C, the program aborted it): the login ends.
    case cancel
    /// A question for the person, shown by the calling program's PAM conversation.
    case question(String, hidden: Bool)
    /// A message for the person (an error, or information such as a device login's address).
    case message(String, isError: Bool)
    /// How the request ended: a PAM return code, and the account's own name when it differs.
    case result(PAMResult, canonicalUser: String?)
    /// Sent while a login works without a question, so the module knows the daemon is alive.
    case keepalive

    /// The version every frame starts with.
    package static let version = UInt8(GK_WIRE_VERSION)
    /// The longest frame (after its length): room for a QR code drawn in text.
    package static let maxFrame = Int(GK_WIRE_MAX_FRAME)
    /// The longest answer the module sends (a password or a code).
    package static let maxAnswer = Int(GK_WIRE_MAX_ANSWER)

    enum Kind: WireNumber {
        case request, answer, cancel
        case question, message, result, keepalive

        var rawValue: UInt8 {
            switch self {
            case .request: UInt8(GK_KIND_REQUEST)
            case .answer: UInt8(GK_KIND_ANSWER)
            case .cancel: UInt8(GK_KIND_CANCEL)
            case .question: UInt8(GK_KIND_QUESTION)
            case .message: UInt8(GK_KIND_MESSAGE)
            case .result: UInt8(GK_KIND_RESULT)
            case .keepalive: UInt8(GK_KIND_KEEPALIVE)
            }
        }
    }

    enum Tag: WireNumber {
        case operation, service, user, remoteHost, terminal, requestingUser
        case authenticationToken, flags
        case text, hidden, code, canonicalUser

        var rawValue: UInt8 {
            switch self {
            case .operation: UInt8(GK_TAG_OPERATION)
            case .service: UInt8(GK_TAG_SERVICE)
            case .user: UInt8(GK_TAG_USER)
            case .remoteHost: UInt8(GK_TAG_RHOST)
            case .terminal: UInt8(GK_TAG_TTY)
            case .requestingUser: UInt8(GK_TAG_RUSER)
            case .authenticationToken: UInt8(GK_TAG_AUTHTOK)
            case .flags: UInt8(GK_TAG_FLAGS)
            case .text: UInt8(GK_TAG_TEXT)
            case .hidden: UInt8(GK_TAG_HIDDEN)
            case .code: UInt8(GK_TAG_CODE)
            case .canonicalUser: UInt8(GK_TAG_CANONICAL_USER)
            }
        }
    }
}

/// A value the wire writes as one byte, its number gatekeeper_wire.h's (`rawValue`), and read back by
/// finding the case of that number: a number no case has is `nil`, never a guess.
package protocol WireNumber: CaseIterable, RawRepresentable where RawValue == UInt8 {}

extension WireNumber {
    package init?(rawValue: UInt8) {
        guard let found = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = found
    }
}

/// What the module asks for: one PAM call of one program.
package struct DaemonRequest: Equatable, Sendable {
    /// The PAM call.
    package enum Operation: WireNumber, Sendable {
        /// `pam_sm_authenticate`.
        case authenticate
        /// `pam_sm_acct_mgmt`: may the account log in now (locked, expired, not activated, must change)?
        case account
        /// `pam_sm_chauthtok` with `PAM_PRELIM_CHECK`: could the password be changed? Changes nothing.
        case checkPasswordChange
        /// `pam_sm_chauthtok` with `PAM_UPDATE_AUTHTOK`: the change itself.
        case changePassword

        package var rawValue: UInt8 {
            switch self {
            case .authenticate: UInt8(GK_OP_AUTHENTICATE)
            case .account: UInt8(GK_OP_ACCOUNT)
            case .checkPasswordChange: UInt8(GK_OP_CHAUTHTOK_PRELIM)
            case .changePassword: UInt8(GK_OP_CHAUTHTOK_UPDATE)
            }
        }
    }

    /// The flags a module passes on (a bit each).
    package struct Flags: OptionSet, Equatable, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        /// `use_first_pass`: the password is `PAM_AUTHTOK` and nothing else; never asked.
        package static let useFirstPass = Flags(rawValue: UInt32(GK_FLAG_USE_FIRST_PASS))
        /// `try_first_pass`: `PAM_AUTHTOK` first; asked again when a try needs it.
        package static let tryFirstPass = Flags(rawValue: UInt32(GK_FLAG_TRY_FIRST_PASS))
        /// `PAM_CHANGE_EXPIRED_AUTHTOK`: change the password only if it has expired.
        package static let expiredOnly = Flags(rawValue: UInt32(GK_FLAG_EXPIRED_ONLY))
        /// The module's `rename_user`: a login may go on as the account's own spelling (the module sets
        /// `PAM_USER` to it), for a program that reads `PAM_USER` back.
        package static let renamesUser = Flags(rawValue: UInt32(GK_FLAG_RENAME_USER))
        /// The host's name service does not know the user (`getpwnam` in the program found nothing): sshd runs
        /// PAM for such a name with a stand-in password. Nothing is presented to a backend or counted.
        package static let unknownToHost = Flags(rawValue: UInt32(GK_FLAG_UNKNOWN_TO_HOST))
        /// Every flag this version knows.
        package static let known: Flags = [.useFirstPass, .tryFirstPass, .expiredOnly, .renamesUser, .unknownToHost]
    }

    package var operation: Operation
    /// `PAM_SERVICE`: which stack (`/etc/gatekeeper/pam.d/SERVICE`).
    package var service: String
    /// `PAM_USER`.
    package var user: String
    /// `PAM_RHOST`, `PAM_TTY`, `PAM_RUSER` — what the calling program says; trusted only from root.
    package var remoteHost: String?
    package var terminal: String?
    package var requestingUser: String?
    /// `PAM_AUTHTOK`, sent with `use_first_pass` or `try_first_pass` when another module set it.
    package var authenticationToken: Secret?
    package var flags: Flags

    package init(
        _ operation: Operation, service: String, user: String, remoteHost: String? = nil, terminal: String? = nil,
        requestingUser: String? = nil, authenticationToken: Secret? = nil, flags: Flags = []
    ) {
        self.operation = operation
        self.service = service
        self.user = user
        self.remoteHost = remoteHost
        self.terminal = terminal
        self.requestingUser = requestingUser
        self.authenticationToken = authenticationToken
        self.flags = flags
    }
}

/// Why bytes from the socket are no message: the connection that sent them ends.
package struct DaemonProtocolError: Error, Equatable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

// MARK: Writing

extension DaemonMessage {
    /// The message as one frame, length first.
    package func frame() -> [UInt8] {
        var payload: [UInt8] = [Self.version]
        func field(_ tag: Tag, _ bytes: some Collection<UInt8>) {
            let count = min(bytes.count, Int(UInt16.max))
            payload.append(tag.rawValue)
            payload.append(UInt8(count >> 8))
            payload.append(UInt8(count & 0xff))
            payload.append(contentsOf: bytes.prefix(count))
        }
        func text(_ tag: Tag, _ value: String?) {
            if let value { field(tag, Array(value.utf8)) }
        }
        switch self {
        case .request(let request):
            payload.append(Kind.request.rawValue)
            field(.operation, [request.operation.rawValue])
            text(.service, request.service)
            text(.user, request.user)
            text(.remoteHost, request.remoteHost)
            text(.terminal, request.terminal)
            text(.requestingUser, request.requestingUser)
            request.authenticationToken?.withUnsafeBytes { field(.authenticationToken, $0) }
            let flags = request.flags.rawValue
            field(
                .flags,
                [UInt8(flags >> 24), UInt8((flags >> 16) & 0xff), UInt8((flags >> 8) & 0xff), UInt8(flags & 0xff)])
        case .answer(let secret):
            payload.append(Kind.answer.rawValue)
            secret.withUnsafeBytes { field(.text, $0) }
        case .cancel:
            payload.append(Kind.cancel.rawValue)
        case .question(let prompt, let hidden):
            payload.append(Kind.question.rawValue)
            text(.text, Self.clipped(prompt))
            field(.hidden, [hidden ? 1 : 0])
        case .message(let message, let isError):
            payload.append(Kind.message.rawValue)
            text(.text, Self.clipped(message))
            field(.hidden, [isError ? 1 : 0])
        case .result(let result, let canonicalUser):
            payload.append(Kind.result.rawValue)
            field(.code, [UInt8(result.code)])
            text(.canonicalUser, canonicalUser)
        case .keepalive:
            payload.append(Kind.keepalive.rawValue)
        }
        let count = payload.count
        var frame = [UInt8(count >> 24), UInt8((count >> 16) & 0xff), UInt8((count >> 8) & 0xff), UInt8(count & 0xff)]
        frame += payload
        Secret.wipe(&payload)
        return frame
    }
}

extension DaemonMessage {
    /// The longest text the daemon sends: what fits in a frame with its header and fields.
    package static let maxText = maxFrame - 64

    /// `text` cut to ``maxText`` bytes at a character's edge.
    static func clipped(_ text: String) -> String {
        guard text.utf8.count > maxText else { return text }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= maxText else { break }
            kept.append(scalar)
        }
        return String(kept)
    }
}

// MARK: Reading

extension DaemonMessage {
    /// The length a frame's 4-byte header announces, or an error when it is out of bounds.
    package static func frameLength(_ header: some Collection<UInt8>) throws(DaemonProtocolError) -> Int {
        guard header.count == 4 else { throw DaemonProtocolError("a frame's length is 4 bytes") }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length >= 2, length <= maxFrame else {
            throw DaemonProtocolError("a frame of \(length) bytes (2 to \(maxFrame))")
        }
        return length
    }

    /// The message of one frame's payload (the bytes after its length).
    package static func parse(_ payload: [UInt8]) throws(DaemonProtocolError) -> DaemonMessage {
        guard payload.count >= 2 else { throw DaemonProtocolError("a frame too short for a message") }
        guard payload[0] == version else {
            throw DaemonProtocolError("version \(payload[0]) (this daemon speaks \(version))")
        }
        guard let kind = Kind(rawValue: payload[1]) else { throw DaemonProtocolError("message type \(payload[1])") }
        var fields: [Tag: ArraySlice<UInt8>] = [:]
        var index = 2
        while index < payload.count {
            guard payload.count - index >= 3 else { throw DaemonProtocolError("a field cut short") }
            let rawTag = payload[index]
            let length = Int(payload[index + 1]) << 8 | Int(payload[index + 2])
            index += 3
            guard payload.count - index >= length else { throw DaemonProtocolError("a field longer than its frame") }
            guard let tag = Tag(rawValue: rawTag), kind.tags.contains(tag) else {
                throw DaemonProtocolError("field \(rawTag) in a message of type \(kind.rawValue)")
            }
            guard fields[tag] == nil else { throw DaemonProtocolError("field \(rawTag) twice") }
            fields[tag] = payload[index..<index + length]
            index += length
        }
        return try message(kind, fields)
    }

    /// Whether `bytes` are a text as the protocol has them: UTF-8 without NUL. A secret is checked without
    /// being copied into a `String`.
    private static func isText(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard !bytes.contains(0) else { return false }
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    private static func message(_ kind: Kind, _ fields: [Tag: ArraySlice<UInt8>]) throws(DaemonProtocolError)
        -> DaemonMessage
    {
        func text(_ tag: Tag, maxBytes: Int = maxFrame) throws(DaemonProtocolError) -> String? {
            guard let bytes = fields[tag] else { return nil }
            guard bytes.count <= maxBytes else { throw DaemonProtocolError("field \(tag.rawValue) too long") }
            guard !bytes.contains(0), let value = String(validating: bytes, as: UTF8.self) else {
                throw DaemonProtocolError("field \(tag.rawValue) is not text")
            }
            return value
        }
        func required(_ tag: Tag, maxBytes: Int = maxFrame) throws(DaemonProtocolError) -> String {
            guard let value = try text(tag, maxBytes: maxBytes) else {
                throw DaemonProtocolError("field \(tag.rawValue) missing")
            }
            return value
        }
        func byte(_ tag: Tag) throws(DaemonProtocolError) -> UInt8 {
            guard let bytes = fields[tag], bytes.count == 1 else {
                throw DaemonProtocolError("field \(tag.rawValue) is not one byte")
            }
            return bytes[bytes.startIndex]
        }
        func flag(_ tag: Tag) throws(DaemonProtocolError) -> Bool {
            switch try byte(tag) {
            case 0: false
            case 1: true
            default: throw DaemonProtocolError("field \(tag.rawValue) is neither 0 nor 1")
            }
        }
        switch kind {
        case .request:
            guard let operation = DaemonRequest.Operation(rawValue: try byte(.operation)) else {
                throw DaemonProtocolError("no such operation")
            }
            var flags = DaemonRequest.Flags()
            if let bytes = fields[.flags] {
                guard bytes.count == 4 else { throw DaemonProtocolError("the flags are not 4 bytes") }
                flags = DaemonRequest.Flags(rawValue: bytes.reduce(0) { $0 << 8 | UInt32($1) })
                guard DaemonRequest.Flags.known.isSuperset(of: flags) else {
                    throw DaemonProtocolError("unknown flags")
                }
            }
            var token: Secret?
            if let bytes = fields[.authenticationToken] {
                guard bytes.count <= maxAnswer else { throw DaemonProtocolError("an authentication token too long") }
                guard isText(bytes) else { throw DaemonProtocolError("an authentication token that is not text") }
                token = Secret(copying: bytes)
            }
            return .request(
                DaemonRequest(
                    operation, service: try required(.service, maxBytes: 256),
                    user: try required(.user, maxBytes: 1024),
                    remoteHost: try text(.remoteHost, maxBytes: 1024), terminal: try text(.terminal, maxBytes: 1024),
                    requestingUser: try text(.requestingUser, maxBytes: 1024), authenticationToken: token,
                    flags: flags))
        case .answer:
            guard let bytes = fields[.text] else { throw DaemonProtocolError("an answer without text") }
            guard bytes.count <= maxAnswer else { throw DaemonProtocolError("an answer too long") }
            guard isText(bytes) else { throw DaemonProtocolError("an answer that is not text") }
            return .answer(Secret(copying: bytes))
        case .cancel:
            return .cancel
        case .question:
            return .question(try required(.text), hidden: try flag(.hidden))
        case .message:
            return .message(try required(.text), isError: try flag(.hidden))
        case .result:
            guard let result = PAMResult(code: Int32(try byte(.code))) else {
                throw DaemonProtocolError("no such code")
            }
            return .result(result, canonicalUser: try text(.canonicalUser, maxBytes: 1024))
        case .keepalive:
            return .keepalive
        }
    }
}

extension DaemonMessage.Kind {
    /// The fields a message of this type may have.
    var tags: Set<DaemonMessage.Tag> {
        switch self {
        case .request:
            [.operation, .service, .user, .remoteHost, .terminal, .requestingUser, .authenticationToken, .flags]
        case .answer: [.text]
        case .cancel, .keepalive: []
        case .question, .message: [.text, .hidden]
        case .result: [.code, .canonicalUser]
        }
    }
}
