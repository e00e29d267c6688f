/// A validated user name and password, for signing in without a conversation.
///
/// Building one checks both fields, so a provider never sees an empty, over-long or malformed value.
public struct Credentials: Sendable {
    /// The user name, checked by ``Username/validate(_:)``.
    public let username: String
    /// The password, checked by ``Credentials/validatePassword(_:)``.
    public let password: Secret

    /// The longest password accepted, in bytes. Longer ones are refused before any hashing, so a crafted
    /// input cannot make one login expensive.
    public static let maxPasswordBytes = 4096

    /// Validates and stores the user name and password.
    /// - Throws: ``AuthError/missingUsername``, ``AuthError/invalidUsername(_:)``,
    ///   ``AuthError/missingPassword`` or ``AuthError/invalidPassword(_:)``.
    public init(username: String, password: Secret) throws(AuthError) {
        self.username = try Username.validate(username)
        try Credentials.validatePassword(password)
        self.password = password
    }

    /// Checks a password: not empty, at most ``maxPasswordBytes`` bytes, no NUL byte (C APIs would cut it).
    public static func validatePassword(_ password: Secret) throws(AuthError) {
        if password.isEmpty { throw .missingPassword }
        if password.count > maxPasswordBytes { throw .invalidPassword(.tooLong(maxBytes: maxPasswordBytes)) }
        if password.contains(0) { throw .invalidPassword(.nulByte) }
    }
}

extension Credentials: CustomStringConvertible {
    public var description: String { "Credentials(username: \(username), password: redacted)" }
}

/// The rules every user name must pass before any provider sees it.
public enum Username {
    /// The longest user name accepted, in bytes of UTF-8.
    public static let maxBytes = 256

    /// Whether two user names are one, byte for byte. Swift's `==` takes canonically equivalent
    /// spellings as equal (`Å` as U+00C5 and as U+212B or A with a ring above), which a backend, the
    /// system's account database and a lockout file keep apart: comparing them so would let one account
    /// answer for another.
    public static func same(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }

    /// Returns `name` if it is usable as a user name.
    ///
    /// Refused: empty or white space only (``AuthError/missingUsername``); longer than ``maxBytes``; NUL bytes;
    /// line breaks; other control characters; `:`; invisible formatting characters such as bidirectional
    /// overrides (U+202E), which would make one name look like another in a list or an audit record;
    /// leading or trailing white space; and U+FFFD, which is what invalid UTF-8 becomes once decoded (so a
    /// name mangled on the way in is not silently accepted).
    /// - Throws: ``AuthError/missingUsername`` or ``AuthError/invalidUsername(_:)``.
    public static func validate(_ name: String) throws(AuthError) -> String {
        if name.unicodeScalars.allSatisfy(\.properties.isWhitespace) { throw .missingUsername }
        if name.utf8.count > maxBytes { throw .invalidUsername(.tooLong(maxBytes: maxBytes)) }
        for scalar in name.unicodeScalars {
            switch scalar.value {
            case 0: throw .invalidUsername(.nulByte)
            case 0x0A, 0x0D, 0x85, 0x2028, 0x2029: throw .invalidUsername(.lineBreak)
            case 0x01...0x1F, 0x7F...0x9F: throw .invalidUsername(.controlCharacter)
            case 0x3A: throw .invalidUsername(.colon)
            case 0xFFFD: throw .invalidUsername(.invalidUTF8)
            default: if TextSafety.isUnsafe(scalar) { throw .invalidUsername(.invisibleCharacter) }
            }
        }
        if let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
            first.properties.isWhitespace || last.properties.isWhitespace
        {
            throw .invalidUsername(.surroundingWhitespace)
        }
        return name
    }

    /// Decodes `bytes` as UTF-8 and validates the result; invalid UTF-8 is refused, never repaired.
    /// - Throws: ``AuthError/invalidUsername(_:)`` with ``AuthError/InputProblem/invalidUTF8``, or what
    ///   ``validate(_:)`` throws.
    public static func validate(utf8 bytes: some Collection<UInt8>) throws(AuthError) -> String {
        if bytes.isEmpty { throw .missingUsername }
        if bytes.count > maxBytes { throw .invalidUsername(.tooLong(maxBytes: maxBytes)) }
        guard let name = String(validating: bytes, as: UTF8.self) else { throw .invalidUsername(.invalidUTF8) }
        return try validate(name)
    }
}
