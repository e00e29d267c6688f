import Authentication
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// Discovery, keys and requests to the provider.
extension OIDCAuthProvider {

    /// 128 random bits, base64url.
    static func randomText() -> String {
        Base64URL.encode(randomBytes(16))
    }

    /// Text from the provider that may be shown as it is: no control or invisible characters, bounded.
    static func isShowable(_ text: String) -> Bool {
        text.utf8.count <= 4096
            && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || TextSafety.isUnsafe($0) }
    }

    /// An answer that is not what was asked for, in words: the status, the OAuth error and its
    /// description (escaped, cut short), or that the body was empty or not JSON.
    /// The error codes of OAuth 2.0 and its extensions (RFC 6749 §5.2, RFC 6750 §3.1, RFC 7009 §2.2.1,
    /// RFC 8628 §3.5): shown by name; any other is "an error of its own".
    static let knownErrors: Set<String> = [
        "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
        "invalid_scope", "access_denied", "server_error", "temporarily_unavailable", "authorization_pending",
        "slow_down", "expired_token", "invalid_token", "insufficient_scope", "unsupported_token_type",
    ]

    /// An answer that is not what was asked for, in words: the status, the OAuth error and its description
    /// (escaped, cut short), or that the body was empty or not JSON.
    ///
    /// The reason goes to logs and the audit trail, so a provider that echoes what it was sent gets no
    /// word in: the description is left out of every answer to a request that carried the person's
    /// secret (`personal`: a password, a token), and of any that holds eight bytes running of the
    /// client's secret, in any case.
    func errorText(_ what: String, _ answer: HTTPClient.Answer, personal: Bool = false) -> String {
        var text = "the identity provider's \(what) endpoint answered HTTP \(answer.status)"
        if answer.body.isEmpty { return text + " with an empty body" }
        guard let object = answer.object else { return text + " with a body that is not JSON" }
        guard let error = object["error"]?.string else { return text }
        text += Self.knownErrors.contains(error) ? ": " + error : " with an error of its own"
        if !personal, let description = object["error_description"]?.string, !echoesClientSecret(description) {
            // Cut by Unicode scalars: one letter under a megabyte of accents is one `Character`.
            text += " (" + TextSafety.escaped(String(description.unicodeScalars.prefix(200))) + ")"
        }
        return text
    }

    /// Whether `text` holds eight bytes running of the client's secret (all of it, when shorter), ASCII
    /// letters in any case.
    func echoesClientSecret(_ text: String) -> Bool {
        guard let secret = configuration.clientSecret else { return false }
        let haystack = Array(text.lowercased().utf8)
        return secret.withUnsafeBytes { raw in
            let bytes = raw.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
            let window = min(8, bytes.count)
            guard window > 0 else { return false }
            return (0...(bytes.count - window)).contains { start in
                bytes[start..<start + window].withUnsafeBytes { Self.contains(haystack, $0) }
            }
        }
    }

    /// Whether `needle` (not empty) occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: UnsafeRawBufferPointer) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }
}
