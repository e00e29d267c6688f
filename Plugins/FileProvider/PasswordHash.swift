public import Authentication
import CAPRUtil
import CCrypt

#if canImport(Glibc)
    import Glibc
#endif

/// A password hash from a users file, checked against its scheme's rules before any hashing.
///
/// Verified through libxcrypt (`crypt_r`): yescrypt `$y$`, bcrypt `$2y$` `$2b$` `$2a$`, sha512-crypt
/// `$6$`, sha256-crypt `$5$`, scrypt `$7$`. Apache's legacy `$apr1$` and `{SHA}` are verified through
/// apr-util and reported as weak. Plain text, DES `crypt`, an empty hash and any unknown prefix are
/// refused: a hash never falls back to a plain-text comparison.
public struct PasswordHash: Hashable, Sendable, CustomStringConvertible {
    /// A hashing scheme.
    public enum Scheme: String, CaseIterable, Sendable {
        case yescrypt, bcrypt, sha512, sha256, scrypt, apr1, sha1

        /// Whether the scheme is too weak to keep: hashes in it are upgraded when allowed.
        public var isWeak: Bool { self == .apr1 || self == .sha1 }

        /// The schemes new hashes can be made with.
        public static let writable: [Scheme] = [.yescrypt, .bcrypt, .sha512]

        var prefix: String {
            switch self {
            case .yescrypt: "$y$"
            case .bcrypt: "$2b$"
            case .sha512: "$6$"
            case .sha256: "$5$"
            case .scrypt: "$7$"
            case .apr1: "$apr1$"
            case .sha1: "{SHA}"
            }
        }
    }

    /// Why a hash cannot be used.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        case empty
        case plainTextOrDES
        case unknownScheme
        case workFactorTooHigh(String)
        case malformed

        public var description: String {
            switch self {
            case .empty: "the password hash is empty (an empty hash never means \"no password\")"
            case .plainTextOrDES: "plain-text passwords and DES crypt hashes are not accepted"
            case .unknownScheme: "the hash scheme is not one this provider verifies"
            case .workFactorTooHigh(let detail): "the hash's work factor is too high (\(detail))"
            case .malformed: "the hash is malformed"
            }
        }
    }

    /// The most sha-crypt rounds accepted (the default is 5,000): more would let a crafted file make one
    /// login take seconds.
    public static let maxSHACryptRounds = 1_000_000
    /// The highest bcrypt cost accepted (htpasswd's default is 5; each step doubles the work).
    public static let maxBcryptCost = 14
    /// bcrypt reads only the first 72 bytes of a password.
    public static let bcryptMaxPasswordBytes = 72

    /// The hash as written in the file.
    public let text: String
    public let scheme: Scheme

    public var description: String { "PasswordHash(\(scheme.rawValue))" }

    /// Checks `text`'s scheme and work factor.
    public init(_ text: String) throws(Problem) {
        self.scheme = try Self.check(Array(text.utf8)[...])
        self.text = text
    }

    /// The scheme of a hash given as bytes, after the same checks as ``init(_:)``, without making a
    /// string: a users file of a million lines is checked this way.
    static func check<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(Problem) -> Scheme {
        guard !bytes.isEmpty else { throw .empty }
        guard
            let scheme = Scheme.allCases.first(where: { bytes.starts(with: $0.prefix.utf8) })
                ?? (["$2a$", "$2y$", "$2x$"].contains { bytes.starts(with: $0.utf8) } ? .bcrypt : nil)
        else {
            // Every scheme verified here is marked by a prefix; anything else is DES crypt or plain text.
            throw bytes.first == UInt8(ascii: "$") || bytes.first == UInt8(ascii: "{")
                ? .unknownScheme : .plainTextOrDES
        }
        guard bytes.count <= 512, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw .malformed }
        switch scheme {
        case .sha512, .sha256:
            let rest = bytes.dropFirst(3)
            guard rest.starts(with: "rounds=".utf8) else { break }
            let digits = rest.dropFirst(7).prefix { $0 != UInt8(ascii: "$") }
            guard let rounds = number(digits) else { throw .malformed }
            guard rounds <= maxSHACryptRounds else { throw .workFactorTooHigh("rounds=\(rounds)") }
        case .bcrypt:
            let digits = bytes.dropFirst(4).prefix { $0 != UInt8(ascii: "$") }
            guard let cost = number(digits), bytes.count > 4 + digits.count + 1 else { throw .malformed }
            guard cost <= maxBcryptCost else { throw .workFactorTooHigh("cost \(cost)") }
        default:
            break
        }
        return scheme
    }

    /// A decimal number of at most nine digits.
    private static func number(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty else { return nil }
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
            if value > 999_999_999 { return Int.max }
        }
        return value
    }

    /// Whether `password` matches. Blocking CPU work: call it off the cooperative pool.
    public func verify(_ password: Secret) -> Bool {
        password.withCString { candidate in
            switch scheme {
            case .apr1, .sha1:
                return text.withCString { apr_password_validate(candidate, $0) } == 0
            default:
                // Compared as secrets: in constant time.
                return Self.crypt(candidate, setting: text).map {
                    Secret(copying: $0.utf8) == Secret(copying: text.utf8)
                }
                    ?? false
            }
        }
    }

    /// A new hash of `password` in `scheme`, with a random salt and the scheme's default work factor.
    /// - Throws: ``Problem/malformed`` when the scheme cannot make hashes or libxcrypt fails.
    public static func make(_ password: Secret, scheme: Scheme = .yescrypt) throws(Problem) -> PasswordHash {
        guard Scheme.writable.contains(scheme) else { throw .unknownScheme }
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        guard scheme.prefix.withCString({ crypt_gensalt_rn($0, 0, nil, 0, &setting, Int32(setting.count)) }) != nil
        else { throw .malformed }
        let settingText = String(decoding: setting.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let hashed = password.withCString({ crypt($0, setting: settingText) }) else { throw .malformed }
        return try PasswordHash(hashed)
    }

    /// `crypt_r` with its state on the heap (it is 32 KiB), wiped afterwards.
    private static func crypt(_ password: UnsafePointer<CChar>, setting: String) -> String? {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        let raw = UnsafeMutableRawBufferPointer(start: data, count: MemoryLayout<crypt_data>.size)
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        defer {
            Secret.wipe(raw)
            data.deallocate()
        }
        guard let output = setting.withCString({ crypt_r(password, $0, data) }) else { return nil }
        let result = String(cString: output)
        // libxcrypt signals failure with a string starting with '*'.
        return result.hasPrefix("*") ? nil : result
    }
}
