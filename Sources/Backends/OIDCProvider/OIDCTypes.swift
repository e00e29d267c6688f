public import Authentication
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// Why an `oidc` provider cannot be made. Equal when the codes are.
public struct OIDCConfigurationProblem: CodedError {
    /// What is wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<OIDCConfigurationProblem>

    public let code: Code
    public let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

extension ErrorCode where Domain == OIDCConfigurationProblem {
    /// The issuer is not `https://` (or `http://` on a loopback address, when allowed).
    public static var insecureIssuer: Self { Self("insecureIssuer") }
    /// The directory that keeps refresh tokens cannot be used safely.
    public static var tokenDirectory: Self { Self("tokenDirectory") }
}

/// The grants the token endpoint is asked for.
enum Grant {
    case password, device, refresh
}

/// What a login got from the token endpoint.
enum TokenAnswer: Sendable {
    case tokens(TokenSet)
    /// The login's outcome: refused, unavailable, or one of the device flow's "not yet"s.
    case refused(AuthOutcome)
}

struct TokenSet: Sendable {
    var idToken: String?
    var accessToken: String?
    var refreshToken: Secret?
}

/// Why the provider's answers could not be used.
enum Problem: Error, Sendable {
    case unreachable(HTTPClient.Failure)
    case provider(String)
    case token(String)

    var reason: String {
        switch self {
        case .unreachable(let failure): "the identity provider \(failure.description)"
        case .provider(let text): text
        case .token(let text): text
        }
    }

    /// A login ends `unavailable` for each: the person's answer was not wrong, the provider's was.
    var outcome: AuthOutcome { .unavailable(reason: reason) }
}

struct KeyCache: Sendable {
    var keys: [JSONWebKey]?
    var fetched: ContinuousClock.Instant?
    /// When the keys were last fetched again for a key they did not hold.
    var lastRefresh: ContinuousClock.Instant?
}

/// The provider's metadata (OpenID Connect Discovery 1.0 §3), as far as the flows use it.
struct Metadata: Sendable {
    var tokenEndpoint: String
    var deviceAuthorizationEndpoint: String?
    var userinfoEndpoint: String?
    var revocationEndpoint: String?
    var jwksURI: String
    var algorithms: Set<SignatureAlgorithm>
    var prefersBasicAuthentication: Bool

    init(tokenEndpoint: String, jwksURI: String) {
        self.tokenEndpoint = tokenEndpoint
        self.jwksURI = jwksURI
        algorithms = [.rs256]
        prefersBasicAuthentication = true
    }

    static func from(_ object: [String: JSONValue], _ configuration: OIDCAuthProvider.Configuration) -> Result<
        Metadata, Problem
    > {
        // Discovery §4.3: the issuer in the document is exactly the one asked for.
        guard sameBytes(object["issuer"]?.string, configuration.issuer) else {
            return .failure(.provider("the identity provider names itself otherwise than \(configuration.issuer)"))
        }
        func endpoint(_ name: String) -> Result<String?, Problem> {
            guard let value = object[name] else { return .success(nil) }
            guard let url = value.string, OIDCAuthProvider.isAllowed(url, plainHTTP: configuration.allowsPlainHTTP)
            else {
                return .failure(.provider("the identity provider's \(name) is not an https:// URL"))
            }
            return .success(url)
        }
        do throws(Problem) {
            guard let token = try endpoint("token_endpoint").get(), let jwks = try endpoint("jwks_uri").get() else {
                return .failure(.provider("the identity provider names no token endpoint or key set"))
            }
            var metadata = Metadata(tokenEndpoint: token, jwksURI: jwks)
            metadata.deviceAuthorizationEndpoint = try endpoint("device_authorization_endpoint").get()
            metadata.userinfoEndpoint = try endpoint("userinfo_endpoint").get()
            metadata.revocationEndpoint = try endpoint("revocation_endpoint").get()
            // Discovery §3: RS256 when the list is absent.
            if let names = object["id_token_signing_alg_values_supported"]?.strings {
                metadata.algorithms = Set(names.compactMap(SignatureAlgorithm.init))
            }
            // RFC 8414 §2: client_secret_basic when the list is absent.
            if let methods = object["token_endpoint_auth_methods_supported"]?.strings {
                metadata.prefersBasicAuthentication =
                    methods.contains("client_secret_basic") || !methods.contains("client_secret_post")
            }
            return .success(metadata)
        } catch {
            return .failure(error)
        }
    }
}
