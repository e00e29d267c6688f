public import Authentication
public import BlockingPools
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// People who sign in with an OpenID Connect provider (Keycloak, Authentik, Entra ID, Google, glewlwyd).
///
/// The provider's metadata comes from `ISSUER/.well-known/openid-configuration`, whose `issuer` must be
/// the configured one exactly; its signing keys from the JWK Set it names, kept and fetched again (at
/// most once a minute) when a token names a key not among them.
///
/// Two ways to sign in:
/// - **device** (RFC 8628, the default): the person is shown a URL and a short code, approves in any
///   browser, and the login polls the token endpoint at the interval the server asks for (slower when it
///   says `slow_down`) until the code is approved, refused or expired. Cancelling stops at once.
/// - **password** (RFC 6749 §4.3): the password is asked and sent to the token endpoint, for stacks where
///   a password is typed and for `--password-stdin`; it needs a confidential client.
///
/// Every ID token is checked as a relying party must (OpenID Connect Core §3.1.3.7): its signature by one
/// of the provider's keys with an algorithm that has a key (never `none`, never HMAC), `iss`, `aud` (and
/// `azp`), `exp`, `iat` and `nbf` with a leeway, `at_hash` when present. The user name comes from the
/// configured claim and must be the one the login is for; name, email, picture and groups come from the
/// token and from userinfo (whose `sub` must be the token's).
///
/// With a token directory, the refresh token is kept per user in a private file: a remembered login is
/// rechecked by refreshing it, and signing out revokes it (RFC 7009). Tokens never reach a log, an error
/// or an audit record.
public final class OIDCAuthProvider: AuthProvider {
    /// Why the last revocation failed, if it did; whether a failure was reported on standard error.
    let lastRevocationProblem = Locked<String?>(nil)
    let reported = Locked(false)

    public struct Configuration: Sendable {
        public enum Flow: String, Sendable, CaseIterable {
            case device
            case password
        }

        /// The issuer, exactly as the provider names itself (`https://id.example.com/realms/staff`).
        public var issuer: String
        public var clientID: String
        /// A confidential client's secret (read from a private file, never written in the configuration).
        public var clientSecret: Secret?
        public var scopes: [String]
        /// The claim that holds the user name.
        public var usernameClaim: String
        /// The claim that holds the groups (an array of names, or names separated by spaces).
        public var groupsClaim: String
        public var caFile: String?
        /// The whole of each request.
        public var timeout: Duration
        public var flow: Flow
        /// Whether `http://` is allowed; only ever for a loopback issuer (a provider on this machine).
        public var allowsPlainHTTP: Bool
        /// Where refresh tokens are kept, one private file per user; not kept when `nil`.
        public var tokenDirectory: String?
        /// How far clocks may disagree when `exp`, `iat` and `nbf` are checked.
        public var leeway: Duration
        /// Whether the device login also shows its URL as a QR code; `nil` shows it where standard error is
        /// a terminal with a UTF-8 locale, which can draw one.
        public var showsQRCode: Bool?
        /// The threads the HTTP requests run on: the process's shared pool by default.
        public var threads: BlockingPool = .shared
        /// How a confidential client proves itself at the token endpoint; `nil` follows the provider's
        /// `token_endpoint_auth_methods_supported` (HTTP Basic unless it takes the secret only in the form).
        public var clientAuthentication: ClientAuthentication?

        /// How the client's secret is sent (RFC 6749 §2.3.1).
        public enum ClientAuthentication: String, Sendable {
            /// `client_secret_basic`: HTTP Basic, the id and secret each form-encoded first.
            case basic
            /// `client_secret_post`: in the form, as `client_id` and `client_secret` (for a provider that
            /// does not decode Basic's form-encoding, as glewlwyd does not: a secret holding `#` or `+`).
            case post
        }

        public init(
            issuer: String,
            clientID: String,
            clientSecret: Secret? = nil,
            scopes: [String] = ["openid", "profile", "email"],
            usernameClaim: String = "preferred_username",
            groupsClaim: String = "groups",
            caFile: String? = nil,
            timeout: Duration = .seconds(10),
            flow: Flow = .device,
            allowsPlainHTTP: Bool = false,
            tokenDirectory: String? = nil,
            leeway: Duration = .seconds(60)
        ) {
            self.issuer = issuer
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.scopes = scopes
            self.usernameClaim = usernameClaim
            self.groupsClaim = groupsClaim
            self.caFile = caFile
            self.timeout = timeout
            self.flow = flow
            self.allowsPlainHTTP = allowsPlainHTTP
            self.tokenDirectory = tokenDirectory
            self.leeway = leeway
        }
    }

    public let name = "oidc"
    /// The issuer, in traces (`--explain`): which of several environments answered.
    public var detail: String? { configuration.issuer }
    public let configuration: Configuration
    public let passwordPrompt = "Password: "
    let http: HTTPClient
    let tokens: TokenStore?
    /// The metadata and when it was fetched; fetched again after ``maxAge``.
    let metadata = Locked<(metadata: Metadata, fetched: ContinuousClock.Instant)?>(nil)
    /// How long metadata and keys are kept: a key the provider withdrew stops being trusted within it.
    static let maxAge = Duration.seconds(3600)
    let keys = Locked<KeyCache>(KeyCache())
    /// Device sign-ins started, per origin.
    let deviceGrants = DeviceGrantLimiter()

    /// Why libcurl or libcrypto cannot be loaded (they are loaded when first needed), or `nil`.
    public static var libraryProblem: String? {
        var error: UnsafePointer<CChar>?
        guard gatekeeper_oidc_load(&error) != 0 else { return nil }
        return error.map { String(cString: $0) } ?? "libcurl cannot be loaded"
    }

    /// - Throws: A reason when the configuration cannot work: an issuer that is not `https://` (or
    ///   `http://` on a loopback address with `allowsPlainHTTP`), a token directory that cannot be used.
    public init(_ configuration: Configuration) throws(OIDCConfigurationProblem) {
        guard Self.isAllowed(configuration.issuer, plainHTTP: configuration.allowsPlainHTTP) else {
            throw OIDCConfigurationProblem(
                .insecureIssuer,
                configuration.allowsPlainHTTP
                    ? "the issuer must be https://, or http:// on a loopback address (127.0.0.1, [::1], localhost)"
                    : "the issuer must be https:// (http:// only for a loopback address, with allow_http=yes)")
        }
        self.configuration = configuration
        http = HTTPClient(
            caFile: configuration.caFile, allowsPlainHTTP: configuration.allowsPlainHTTP,
            timeout: configuration.timeout, threads: configuration.threads)
        if let directory = configuration.tokenDirectory {
            do throws(StateFileError) {
                tokens = try TokenStore(directory)
            } catch {
                throw OIDCConfigurationProblem(.tokenDirectory, "token directory \(error.description)")
            }
        } else {
            tokens = nil
        }
    }

    /// Whether a URL may be asked: `https://`, or `http://` to a loopback address where that is allowed.
    ///
    /// The authority (what comes between `//` and the path) must be a plain host — a name of letters,
    /// digits, dots and hyphens, or an IPv6 address in brackets — with at most a port: no user
    /// (`http://127.0.0.1:80@elsewhere/` goes to `elsewhere`), no percent-encoding, nothing libcurl might
    /// read otherwise than this check does.
    static func isAllowed(_ url: String, plainHTTP: Bool) -> Bool {
        let bytes = Array(url.utf8)
        let rest: ArraySlice<UInt8>
        if url.hasPrefix("https://") {
            rest = bytes[8...]
        } else if plainHTTP, url.hasPrefix("http://") {
            rest = bytes[7...]
        } else {
            return false
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        var host = authority[...]
        if authority.first == UInt8(ascii: "[") {
            guard let end = authority.firstIndex(of: UInt8(ascii: "]")) else { return false }
            host = authority[authority.startIndex...end]
            guard
                host.dropFirst().dropLast().allSatisfy({
                    $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || $0.isHexDigit
                })
            else { return false }
        } else {
            host = authority.prefix { $0 != UInt8(ascii: ":") }
            let plain = host.allSatisfy { $0.isLetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
            guard !host.isEmpty, plain else { return false }
        }
        let port = authority[host.endIndex...]
        if !port.isEmpty {
            guard port.first == UInt8(ascii: ":"), (2...6).contains(port.count),
                port.dropFirst().allSatisfy({ $0.isDigit })
            else {
                return false
            }
        }
        guard url.hasPrefix("http://") else { return true }
        let name = String(decoding: host, as: UTF8.self)
        if name == "localhost" || name == "[::1]" { return true }
        // Four plain decimal numbers, 0 to 255, none with a leading zero or a sign: libcurl reads `010` as
        // octal and takes `127.0.0.08` or `127.-0.0.1` for names, which DNS may answer with any address.
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127"
            && octets.allSatisfy { octet in
                octet.utf8.allSatisfy(\.isDigit) && (octet == "0" || octet.first != "0") && UInt8(octet) != nil
            }
    }
}
