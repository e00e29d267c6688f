import COIDCLoader

/// Base64url without padding (RFC 7515 §2), decoded strictly: any other byte, padding, or a length that
/// no encoding has is refused.
enum Base64URL {
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        // One character left over encodes no byte; bits left over must be zero (one spelling per value).
        guard bits < 6, buffer == 0 else { return nil }
        return output
    }

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int(buffer >> UInt32(bits) & 63)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(alphabet[Int(buffer << UInt32(6 - bits) & 63)]) }
        return String(decoding: output, as: UTF8.self)
    }
}

/// The signature algorithms an ID token may be signed with. `none` and the HMAC algorithms (`HS256`…)
/// are not among them: a token with no signature proves nothing, and an HMAC "signed" with a public key
/// can be made by anyone who has the key.
enum SignatureAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256", rs384 = "RS384", rs512 = "RS512"
    case ps256 = "PS256", ps384 = "PS384", ps512 = "PS512"
    case es256 = "ES256", es384 = "ES384", es512 = "ES512"
    case edDSA = "EdDSA"

    /// The hash the signature is made over, and the one `at_hash` uses (OpenID Connect Core §3.1.3.6).
    var digest: String {
        switch self {
        case .rs256, .ps256, .es256: "SHA256"
        case .rs384, .ps384, .es384: "SHA384"
        case .rs512, .ps512, .es512, .edDSA: "SHA512"
        }
    }

    var keyType: String {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: "RSA"
        case .es256, .es384, .es512: "EC"
        case .edDSA: "OKP"
        }
    }
}

/// A public key of a JWK Set (RFC 7517), as far as the signature algorithms above use one.
struct JSONWebKey: Sendable, Equatable {
    enum Material: Sendable, Equatable {
        case rsa(modulus: [UInt8], exponent: [UInt8])
        case ec(curve: String, x: [UInt8], y: [UInt8])
        case ed25519(x: [UInt8])
    }

    var id: String?
    var algorithm: String?
    var material: Material

    var keyType: String {
        switch material {
        case .rsa: "RSA"
        case .ec: "EC"
        case .ed25519: "OKP"
        }
    }

    /// The key of a JWK, or `nil` for one this provider does not use (encryption keys, private keys'
    /// other kinds, unknown types): such keys are skipped, never an error of the whole set.
    init?(_ fields: [String: JSONValue]) {
        if let use = fields["use"] { guard use.string == "sig" else { return nil } }
        if let operations = fields["key_ops"]?.strings { guard operations.contains("verify") else { return nil } }
        id = fields["kid"]?.string
        algorithm = fields["alg"]?.string
        func bytes(_ name: String) -> [UInt8]? { fields[name]?.string.flatMap(Base64URL.decode) }
        switch fields["kty"]?.string {
        case "RSA":
            // 2048 to 8192 bits, an exponent of at most 64 bits: larger keys cost seconds to use, and
            // no provider signs with them.
            guard let n = bytes("n"), let e = bytes("e"), (256...1024).contains(n.count), (1...8).contains(e.count)
            else { return nil }
            material = .rsa(modulus: n, exponent: e)
        case "EC":
            guard let curve = fields["crv"]?.string, let x = bytes("x"), let y = bytes("y") else { return nil }
            material = .ec(curve: curve, x: x, y: y)
        case "OKP":
            guard fields["crv"]?.string == "Ed25519", let x = bytes("x") else { return nil }
            material = .ed25519(x: x)
        default:
            return nil
        }
    }

    /// The keys of a JWK Set document.
    static func set(parsing bytes: [UInt8]) -> [JSONWebKey]? {
        guard case .array(let keys)? = JSONValue.object(parsing: bytes)?["keys"] else { return nil }
        // The first 64 keys: a set of thousands is no provider's.
        return keys.prefix(64).compactMap { key in
            guard case .object(let fields) = key else { return nil }
            return JSONWebKey(fields)
        }
    }

    /// Whether `signature` is this key's, by `algorithm`, over `data`.
    func verifies(_ signature: [UInt8], over data: [UInt8], by algorithm: SignatureAlgorithm) -> Bool {
        guard algorithm.keyType == keyType, self.algorithm == nil || self.algorithm == algorithm.rawValue else {
            return false
        }
        switch material {
        case .rsa(let modulus, let exponent):
            var bits: Int32 = 0
            let pss: Int32 = [.ps256, .ps384, .ps512].contains(algorithm) ? 1 : 0
            let result = gk_verify_rsa(
                algorithm.digest, pss, modulus, modulus.count, exponent, exponent.count, data, data.count, signature,
                signature.count, &bits)
            // Keys under 2048 bits are refused, as NIST SP 800-131A has since 2014.
            return result == 1 && bits >= 2048
        case .ec(let curve, let x, let y):
            let group: String
            switch (curve, algorithm) {
            case ("P-256", .es256): group = "prime256v1"
            case ("P-384", .es384): group = "secp384r1"
            case ("P-521", .es512): group = "secp521r1"
            default: return false
            }
            return gk_verify_ec(
                algorithm.digest, group, x, x.count, y, y.count, data, data.count, signature, signature.count)
                == 1
        case .ed25519(let x):
            return algorithm == .edDSA
                && gk_verify_ed25519(x, x.count, data, data.count, signature, signature.count) == 1
        }
    }
}

/// A JSON Web Token in compact form, split and decoded but not yet trusted.
struct CompactToken: Sendable {
    let header: [String: JSONValue]
    let claims: [String: JSONValue]
    /// What the signature is over: the first two parts as sent.
    let signingInput: [UInt8]
    let signature: [UInt8]

    /// The longest token accepted.
    static let maxBytes = 64 * 1024

    init?(_ text: String) {
        guard text.utf8.count <= Self.maxBytes else { return nil }
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(Substring(parts[0])),
            let claimBytes = Base64URL.decode(Substring(parts[1])),
            let signature = Base64URL.decode(Substring(parts[2])),
            let header = JSONValue.object(parsing: headerBytes),
            let claims = JSONValue.object(parsing: claimBytes)
        else { return nil }
        self.header = header
        self.claims = claims
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        self.signature = signature
    }
}

/// A digest from libcrypto.
func digest(_ name: String, _ bytes: [UInt8]) -> [UInt8]? {
    var output = [UInt8](repeating: 0, count: 64)
    let length = gk_digest(name, bytes, bytes.count, &output)
    guard length > 0 else { return nil }
    return Array(output.prefix(Int(length)))
}

extension UInt8 {
    var isDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    var isHexDigit: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
    var isLetterOrDigit: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}

/// Whether two texts from the provider are one, byte for byte (never Swift's canonical equivalence, which
/// takes different bytes for one subject, issuer or audience); `nil` is no text.
func sameBytes(_ first: String?, _ second: String?) -> Bool {
    guard let first, let second else { return false }
    return first.utf8.elementsEqual(second.utf8)
}
