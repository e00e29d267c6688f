public import Authentication
package import BlockingPools
import CAPRUtilLoader
import CCryptLoader
import GatekeeperSupport

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

    /// Why a hash cannot be used: a ``code`` and a phrase; equal when the codes are.
    public struct Problem: CodedError {
        /// What is wrong. Codes may be added; a `switch` needs a `default`.
        public typealias Code = ErrorCode<PasswordHash.Problem>

        public let code: Code
        /// What a person reads, completing "the hash …" style sentences in a users file's messages.
        public let description: String

        private init(_ code: Code, _ description: String) {
            self.code = code
            self.description = description
        }

        public static let empty = Problem(
            .empty, "the password hash is empty (an empty hash never means \"no password\")")
        public static let plainTextOrDES = Problem(
            .plainTextOrDES, "plain-text passwords and DES crypt hashes are not accepted")
        public static let unknownScheme = Problem(.unknownScheme, "the hash scheme is not one this provider verifies")
        public static let malformed = Problem(.malformed, "the hash is malformed")
        /// The library that makes or checks the hash cannot be loaded; `reason` is the loader's.
        public static func libraryMissing(_ reason: String) -> Problem {
            Problem(.libraryMissing, "cannot be made or checked: \(reason)")
        }
        /// The work factor is over the limit; `detail` says which and by how much.
        public static func workFactorTooHigh(_ detail: String) -> Problem {
            Problem(.workFactorTooHigh, "the hash's work factor is too high (\(detail))")
        }
    }

    /// Where every password check and new hash of this process runs (a users file's, the offline cache's):
    /// one thread per processor, so concurrent logins cannot make the process hash with more memory or
    /// threads than that; more wait in line.
    /// (``ProcessPools/Role/passwordHashing``).
    package static var checks: BlockingPool { ProcessPools.pool(.passwordHashing) }

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
        self.scheme = try Array(text.utf8).withUnsafeBufferPointer { bytes throws(Problem) in try Self.check(bytes) }
        self.text = text
    }

    /// The scheme of a hash given as bytes, after the same checks as ``init(_:)``, without making a
    /// string: a users file of a million lines is checked this way. Concrete, not generic over the bytes'
    /// collection: called from another module, a generic one ran unspecialised, looking up generic
    /// metadata for every byte it read (a million lines took 16 s to load instead of 1).
    package static func check(_ bytes: UnsafeBufferPointer<UInt8>) throws(Problem) -> Scheme {
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
        case .yescrypt:
            try checkMemoryHard(yescryptParameters(Array(bytes.dropFirst(3).prefix { $0 != UInt8(ascii: "$") })))
        case .scrypt:
            try checkMemoryHard(scryptParameters(Array(bytes.dropFirst(3).prefix(11))))
        default:
            break
        }
        return scheme
    }

    /// The most memory one yescrypt or scrypt check may use: 128 MiB, eight times yescrypt's default
    /// (16 MiB, `mkpasswd -R 5`); `mkpasswd -m yescrypt -R 8` is the most accepted.
    public static let maxHashMemoryBytes = 128 << 20
    /// The most work one yescrypt or scrypt check may do, in bytes of memory filled (memory × parallel
    /// lanes × time passes): four times ``maxHashMemoryBytes``.
    public static let maxHashWorkBytes = 4 * maxHashMemoryBytes

    /// The cost of a memory-hard hash: `N` blocks of `128 × r` bytes, `p` lanes, `t` extra time passes.
    struct MemoryHardParameters: Hashable {
        var logN: Int
        var r: Int
        var p: Int = 1
        var t: Int = 0
    }

    /// Refuses parameters whose memory or work is over the limits, before any hashing.
    private static func checkMemoryHard(_ parameters: MemoryHardParameters) throws(Problem) {
        let (logN, r, p, t) = (parameters.logN, parameters.r, parameters.p, parameters.t)
        guard logN >= 1, r >= 1, p >= 1, t >= 0 else { throw .malformed }
        // Computed in steps that stop before overflowing: 128 × r × 2^logN × p × (t + 1).
        var description: String { "N=2^\(logN), r=\(r), p=\(p)" + (t > 0 ? ", t=\(t)" : "") }
        guard logN <= 40, r <= 1 << 20, p <= 1 << 20, t <= 1 << 20 else { throw .workFactorTooHigh(description) }
        // Not `128 * r << logN`: `<<` binds tighter than `*`, and that product trapped on a hostile file.
        let memory = (128 * r).multipliedReportingOverflow(by: 1 << logN)
        guard !memory.overflow, memory.partialValue <= maxHashMemoryBytes else {
            let size = memory.overflow ? "" : "\(memory.partialValue >> 20) MiB, "
            throw .workFactorTooHigh("\(description): \(size)over \(maxHashMemoryBytes >> 20) MiB")
        }
        let work = memory.partialValue.multipliedReportingOverflow(by: p * (t + 1))
        guard !work.overflow, work.partialValue <= maxHashWorkBytes else {
            throw .workFactorTooHigh("\(description): over \(maxHashWorkBytes >> 20) MiB of work")
        }
    }

    /// The parameters of a yescrypt setting (the text between `$y$` and the salt), as libxcrypt encodes
    /// them: flavour, log2 N, r, and optionally which of p, t, g and a ROM follow.
    static func yescryptParameters(_ text: [UInt8]) throws(Problem) -> MemoryHardParameters {
        var rest = text[...]
        _ = try decodeNumber(&rest, minimum: 0)  // The flavour.
        var parameters = MemoryHardParameters(
            logN: try decodeNumber(&rest, minimum: 1), r: try decodeNumber(&rest, minimum: 1))
        if !rest.isEmpty {
            let present = try decodeNumber(&rest, minimum: 1)
            guard present < 16 else { throw .malformed }
            if present & 1 != 0 { parameters.p = try decodeNumber(&rest, minimum: 2) }
            if present & 2 != 0 { parameters.t = try decodeNumber(&rest, minimum: 1) }
            // An upgraded hash (g) or one that needs a ROM cannot be checked by libxcrypt's crypt.
            if present & 12 != 0 { throw .unknownScheme }
        }
        guard rest.isEmpty else { throw .malformed }
        return parameters
    }

    /// The parameters of an scrypt setting (`$7$`, then log2 N in one character, r and p in five each).
    static func scryptParameters(_ text: [UInt8]) throws(Problem) -> MemoryHardParameters {
        guard text.count == 11, let logN = itoa64(text[0]) else { throw .malformed }
        func fixed(_ digits: ArraySlice<UInt8>) throws(Problem) -> Int {
            var value = 0
            for (position, digit) in digits.enumerated() {
                guard let sextet = itoa64(digit) else { throw .malformed }
                value |= sextet << (6 * position)
            }
            return value
        }
        return MemoryHardParameters(logN: logN, r: try fixed(text[1..<6]), p: try fixed(text[6..<11]))
    }

    /// The value of one character of crypt's base-64 alphabet (`./0-9A-Za-z`).
    private static func itoa64(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: ".")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "."))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(byte - UInt8(ascii: "A")) + 12
        case UInt8(ascii: "a")...UInt8(ascii: "z"): Int(byte - UInt8(ascii: "a")) + 38
        default: nil
        }
    }

    /// One of yescrypt's variable-length numbers (libxcrypt's `decode64_uint32`), taken from `text`.
    private static func decodeNumber(_ text: inout ArraySlice<UInt8>, minimum: Int) throws(Problem) -> Int {
        guard let first = text.popFirst(), var character = itoa64(first) else { throw .malformed }
        var (start, end, characters, bits, value) = (0, 47, 1, 0, minimum)
        while character > end {
            value += (end + 1 - start) << bits
            start = end + 1
            end = start + (62 - end) / 2
            characters += 1
            bits += 6
        }
        value += (character - start) << bits
        while characters > 1 {
            guard let next = text.popFirst(), let sextet = itoa64(next) else { throw .malformed }
            character = sextet
            bits -= 6
            value += character << bits
            characters -= 1
        }
        return value
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

    /// Why this hash cannot be checked here, if it cannot: the library that verifies its scheme (apr-util
    /// for `$apr1$` and `{SHA}`, libxcrypt for the rest) cannot be loaded. Loads it if it was not. A check
    /// that cannot be made is no answer: ``verify(_:)`` would say "no match", so callers ask this first and
    /// report the backend unavailable rather than a wrong password (which the lockout would count).
    public var libraryProblem: String? {
        var why: UnsafePointer<CChar>?
        let loaded =
            switch scheme {
            case .apr1, .sha1: gatekeeper_aprutil_load(&why)
            default: gatekeeper_crypt_load(&why)
            }
        guard loaded != 0 else { return nil }
        return why.map { String(cString: $0) } ?? "the library that checks \(scheme.rawValue) hashes cannot be loaded"
    }

    /// Whether `password` matches. Blocking CPU work: call it off the cooperative pool.
    public func verify(_ password: Secret) -> Bool {
        password.withCString { candidate in
            switch scheme {
            case .apr1, .sha1:
                return text.withCString { gk_apr_password_validate(candidate, $0) } == 0
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
    /// - Throws: ``Problem/unknownScheme`` when the scheme cannot make hashes, ``Problem/libraryMissing(_:)``
    ///   when libxcrypt cannot be loaded, ``Problem/malformed`` when it fails.
    public static func make(_ password: Secret, scheme: Scheme = .yescrypt) throws(Problem) -> PasswordHash {
        guard Scheme.writable.contains(scheme) else { throw .unknownScheme }
        try requireLibxcrypt()
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        guard scheme.prefix.withCString({ gk_crypt_gensalt_rn($0, 0, nil, 0, &setting, Int32(setting.count)) }) != nil
        else { throw .malformed }
        let settingText = string(fromCBuffer: setting)
        guard let hashed = password.withCString({ crypt($0, setting: settingText) }) else { throw .malformed }
        return try PasswordHash(hashed)
    }

    /// A new hash of `password` in the scheme and with the work factor of `existing` (a bcrypt cost, a
    /// sha512-crypt round count, yescrypt's parameters) and a new salt, as a password change keeps them;
    /// in `scheme` when `existing`'s cannot make hashes (`$apr1$`, `{SHA}`, sha256-crypt, scrypt).
    /// - Throws: ``Problem/libraryMissing(_:)`` when libxcrypt cannot be loaded, ``Problem/malformed`` when it
    ///   fails.
    public static func make(_ password: Secret, like existing: PasswordHash, otherwise scheme: Scheme) throws(Problem)
        -> PasswordHash
    {
        guard Scheme.writable.contains(existing.scheme) else { return try make(password, scheme: scheme) }
        try requireLibxcrypt()
        // `$id$parameters$salt$hash`: the parameters, if any, are the second field.
        let fields = existing.text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let prefix: String
        var count: UInt = 0
        var parameters: String?
        switch existing.scheme {
        case .bcrypt:
            // `$2b$12$…`, `$2y$…` (htpasswd's), `$2a$…`: the same variant, the same cost.
            guard fields.count > 2, let cost = UInt(fields[2]) else { throw .malformed }
            prefix = "$\(fields[1])$"
            count = cost
        case .sha512:
            prefix = "$6$"
            if fields.count > 2, fields[2].hasPrefix("rounds="), let rounds = UInt(fields[2].dropFirst(7)) {
                count = rounds
            }
        default:
            prefix = "$y$"
            guard fields.count > 2 else { throw .malformed }
            parameters = fields[2]
        }
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        guard prefix.withCString({ gk_crypt_gensalt_rn($0, count, nil, 0, &setting, Int32(setting.count)) }) != nil
        else { throw .malformed }
        var settingText = string(fromCBuffer: setting)
        if let parameters {
            // yescrypt's salt does not depend on its parameters: the fresh setting's salt, the old parameters.
            var parts = settingText.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
            guard parts.count > 3 else { throw .malformed }
            parts[2] = parameters
            settingText = parts.joined(separator: "$")
        }
        guard let hashed = password.withCString({ crypt($0, setting: settingText) }) else { throw .malformed }
        return try PasswordHash(hashed)
    }

    /// libxcrypt, loaded if it was not.
    private static func requireLibxcrypt() throws(Problem) {
        var why: UnsafePointer<CChar>?
        guard gatekeeper_crypt_load(&why) == 0 else {
            throw .libraryMissing(why.map { String(cString: $0) } ?? "libxcrypt cannot be loaded")
        }
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
        guard let output = setting.withCString({ gk_crypt_r(password, $0, data) }) else { return nil }
        let result = String(cString: output)
        // libxcrypt signals failure with a string starting with '*'.
        return result.hasPrefix("*") ? nil : result
    }
}

extension ErrorCode where Domain == PasswordHash.Problem {
    public static var empty: Self { Self("empty") }
    public static var plainTextOrDES: Self { Self("plainTextOrDES") }
    public static var unknownScheme: Self { Self("unknownScheme") }
    public static var workFactorTooHigh: Self { Self("workFactorTooHigh") }
    public static var malformed: Self { Self("malformed") }
    /// The library that makes or checks the scheme's hashes cannot be loaded.
    public static var libraryMissing: Self { Self("libraryMissing") }
}
