public import Authentication
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
    private let metadata = Locked<(metadata: Metadata, fetched: ContinuousClock.Instant)?>(nil)
    /// How long metadata and keys are kept: a key the provider withdrew stops being trusted within it.
    static let maxAge = Duration.seconds(3600)
    private let keys = Locked<KeyCache>(KeyCache())
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

    // MARK: signing in

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let metadata: Metadata
        switch await currentMetadata() {
        case .success(let found): metadata = found
        case .failure(let problem): return problem.outcome
        }
        let answer: TokenAnswer
        var nonce: String?
        switch configuration.flow {
        case .password:
            let password = try await request.conversation.askSecret(passwordPrompt)
            guard !password.isEmpty else { return .rejected(.wrongCredentials) }
            nonce = Self.randomText()
            answer = await tokenRequest(
                metadata, .password,
                [
                    ("grant_type", .text("password")), ("username", .text(request.username)),
                    ("password", .secret(password)), ("scope", .text(configuration.scopes.joined(separator: " "))),
                    ("nonce", .text(nonce!)),
                ])
        case .device:
            let origin = DeviceGrantLimiter.origin(
                remoteHost: request.remoteHost, requestingUser: request.requestingUser)
            guard deviceGrants.admit(origin) else {
                await request.conversation.show(
                    "Too many sign-ins were started from here in the last minute; try again in a minute.", as: .error)
                return .unavailable(
                    reason: "more than \(DeviceGrantLimiter.perOrigin) device sign-ins were started from "
                        + "\(TextSafety.escaped(origin)) within a minute")
            }
            answer = try await deviceLogin(metadata, request.conversation)
        }
        if Task.isCancelled { throw .cancelled }
        let tokens: TokenSet
        switch answer {
        case .tokens(let set): tokens = set
        case .refused(let outcome): return outcome
        }
        let identity: Identity
        switch await identityOf(tokens, metadata, nonce: nonce) {
        case .success(let found): identity = found
        case .failure(let problem): return problem.outcome
        }
        guard Username.same(identity.username, request.username) else {
            await request.conversation.show(
                "The identity provider signed in \(TextSafety.escaped(identity.username)), not \(request.username).",
                as: .error)
            return .rejected(.refusedByPolicy)
        }
        if let store = self.tokens, let refresh = tokens.refreshToken {
            store.save(
                TokenStore.Entry(
                    issuer: configuration.issuer, username: identity.username,
                    subject: identity.attributes["subject"] ?? "", refreshToken: refresh))
        }
        return .authenticated(identity)
    }

    /// The Device Authorization Grant: the code shown, the token endpoint polled until it answers.
    private func deviceLogin(_ metadata: Metadata, _ conversation: any Conversation) async throws(AuthError)
        -> TokenAnswer
    {
        guard let endpoint = metadata.deviceAuthorizationEndpoint else {
            return .refused(.unavailable(reason: "\(configuration.issuer) offers no device authorization endpoint"))
        }
        let started = await post(endpoint, [("scope", .text(configuration.scopes.joined(separator: " ")))])
        let grant: [String: JSONValue]
        switch started {
        case .failure(let failure):
            return .refused(.unavailable(reason: "the identity provider \(failure.description)"))
        case .success(let answer):
            guard answer.status == 200, let object = answer.object else {
                return .refused(.unavailable(reason: errorText("device authorization", answer)))
            }
            grant = object
        }
        guard let deviceCode = grant["device_code"]?.string, let userCode = grant["user_code"]?.string,
            let uri = grant["verification_uri"]?.string ?? grant["verification_url"]?.string,
            Self.isShowable(userCode), userCode.utf8.count <= 64, Self.isShowable(uri),
            Self.isAllowed(uri, plainHTTP: configuration.allowsPlainHTTP)
        else {
            return .refused(.unavailable(reason: "the identity provider's device authorization answer is malformed"))
        }
        var interval = Duration.seconds(min(max(grant["interval"]?.seconds ?? 5, 1), 60))
        let lifetime = Duration.seconds(min(max(grant["expires_in"]?.seconds ?? 600, 1), 3600))
        var message = "To sign in, open \(uri) in a browser and enter the code \(userCode)"
        var qrText = uri
        if let complete = grant["verification_uri_complete"]?.string, Self.isShowable(complete),
            Self.isAllowed(complete, plainHTTP: configuration.allowsPlainHTTP)
        {
            message += ",\nor open \(complete)"
            qrText = complete
        }
        await conversation.show(message + ".", as: .info)
        if configuration.showsQRCode ?? Self.terminalDrawsQRCodes, let lines = TerminalQRCode.lines(qrText) {
            await conversation.show(lines.joined(separator: "\n"), as: .info)
        }
        let deadline = ContinuousClock.now + lifetime
        // Where the message would reach the person only with a question (ssh), the question: Enter once
        // approved, then a check at once — and on, should Enter have come first.
        var waits = true
        if conversation.messagesWaitForAQuestion {
            try await conversation.pause("Press Enter once you have approved the sign-in: ")
            waits = false
        }
        while true {
            do {
                if waits { try await Task.sleep(for: interval) }
                waits = true
            } catch {
                throw .cancelled
            }
            if Task.isCancelled { throw .cancelled }
            guard ContinuousClock.now < deadline else { return Self.expired }
            let answer = await tokenRequest(
                metadata, .device,
                [
                    ("grant_type", .text("urn:ietf:params:oauth:grant-type:device_code")),
                    ("device_code", .secret(Secret(copying: deviceCode.utf8))),
                ])
            if Task.isCancelled { throw .cancelled }
            switch answer {
            case .tokens: return answer
            case .refused(.failed(.tryAgain, reason: "authorization_pending")): continue
            case .refused(.failed(.tryAgain, reason: "slow_down")):
                // RFC 8628 §3.5: five seconds more for this and every later request.
                interval += .seconds(5)
            case .refused(.failed(.credentialsExpired, _)): return Self.expired
            case .refused: return answer
            }
        }
    }

    /// Whether standard error is a terminal whose locale is UTF-8 (the QR code is drawn with block characters).
    static var terminalDrawsQRCodes: Bool {
        guard isatty(2) == 1 else { return false }
        for name in ["LC_ALL", "LC_CTYPE", "LANG"] {
            guard let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty else { continue }
            let lowered = value.lowercased()
            return lowered.contains("utf-8") || lowered.contains("utf8")
        }
        return false
    }

    private static let expired = TokenAnswer.refused(
        .failed(.credentialsExpired, reason: "the sign-in code expired before it was approved"))

    // MARK: remembered logins and signing out

    /// A remembered login stays valid while the provider still honours the refresh token kept for it.
    public func recheck(_ identity: Identity) async -> Recheck {
        guard let store = tokens, let entry = store.load(issuer: configuration.issuer, username: identity.username)
        else { return .unverifiable }
        let metadata: Metadata
        switch await currentMetadata() {
        case .success(let found): metadata = found
        case .failure(let problem): return .unavailable(reason: problem.reason)
        }
        let answer = await tokenRequest(
            metadata, .refresh,
            [("grant_type", .text("refresh_token")), ("refresh_token", .secret(entry.refreshToken))])
        switch answer {
        case .refused(.unavailable(let reason)): return .unavailable(reason: reason)
        case .refused(.failed(.systemError, let reason)): return .unavailable(reason: reason)
        case .refused:
            store.remove(issuer: configuration.issuer, username: identity.username)
            return .refused(.refusedByPolicy)
        case .tokens(let tokens):
            // The refreshed tokens must still be this person's: the ID token's when one comes, else
            // userinfo's answer for the new access token (glewlwyd's refresh gives no ID token).
            let current: Identity
            if tokens.idToken != nil {
                switch await identityOf(tokens, metadata, nonce: nil) {
                case .success(let found): current = found
                case .failure(let problem): return .unavailable(reason: problem.reason)
                }
            } else {
                guard let endpoint = metadata.userinfoEndpoint, let access = tokens.accessToken else {
                    return .unverifiable
                }
                switch await http.get(endpoint, bearer: access) {
                case .failure(let failure): return .unavailable(reason: Problem.unreachable(failure).reason)
                case .success(let answer):
                    guard answer.status == 200, let info = answer.object else {
                        return .unavailable(reason: errorText("userinfo", answer, personal: true))
                    }
                    guard sameBytes(info["sub"]?.string, entry.subject),
                        info[configuration.usernameClaim]?.string.map({ Username.same($0, identity.username) }) == true
                    else { return .refused(.refusedByPolicy) }
                    // The identity asked about stays what it is; one given by its name alone (a remembered login,
                    // with no attributes to carry over) is made from what userinfo says now.
                    current =
                        identity.attributes["subject"] == nil
                        ? self.identity(identity.username, subject: entry.subject, claims: info) : identity
                }
            }
            guard Username.same(current.username, identity.username),
                sameBytes(current.attributes["subject"], entry.subject)
            else { return .refused(.refusedByPolicy) }
            store.save(
                TokenStore.Entry(
                    issuer: entry.issuer, username: entry.username, subject: entry.subject,
                    refreshToken: tokens.refreshToken ?? entry.refreshToken))
            return .valid(current)
        }
    }

    /// Revokes the refresh token kept for `identity` (RFC 7009) and forgets it. A revocation that fails is
    /// reported once, on standard error, and never keeps the person signed in.
    public func signOut(_ identity: Identity) async {
        guard let store = tokens, let entry = store.load(issuer: configuration.issuer, username: identity.username)
        else { return }
        store.remove(issuer: configuration.issuer, username: identity.username)
        let problem: String?
        switch await currentMetadata() {
        case .failure(let failure): problem = failure.reason
        case .success(let metadata):
            if let endpoint = metadata.revocationEndpoint {
                switch await post(
                    endpoint, [("token", .secret(entry.refreshToken)), ("token_type_hint", .text("refresh_token"))])
                {
                case .failure(let failure): problem = "the identity provider \(failure.description)"
                case .success(let answer) where answer.status == 200: problem = nil
                case .success(let answer): problem = errorText("revocation", answer, personal: true)
                }
            } else {
                problem = "\(configuration.issuer) offers no revocation endpoint"
            }
        }
        if let problem { lastRevocationProblem.withLock { $0 = problem } }
        if let problem { reportOnce("gatekeeper: signed out, but the token could not be revoked: \(problem)\n") }
    }

    /// Why the last revocation failed, if it did (for tests and tools that report it themselves).
    public var revocationProblem: String? { lastRevocationProblem.withLock { $0 } }
    private let lastRevocationProblem = Locked<String?>(nil)
    private let reported = Locked(false)

    private func reportOnce(_ text: String) {
        guard
            reported.withLock({ reported in
                defer { reported = true }; return !reported
            })
        else { return }
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    // MARK: the provider's answers

    /// The metadata, fetched once and kept; a fetch that fails is tried again by the next login.
    private func currentMetadata() async -> Result<Metadata, Problem> {
        let now = ContinuousClock.now
        if let known = metadata.withLock({ $0 }), now - known.fetched < Self.maxAge { return .success(known.metadata) }
        let url =
            configuration.issuer + (configuration.issuer.hasSuffix("/") ? "" : "/") + ".well-known/openid-configuration"
        switch await http.get(url) {
        case .failure(let failure): return .failure(.unreachable(failure))
        case .success(let answer):
            guard answer.status == 200, let object = answer.object else {
                return .failure(.provider(errorText("discovery", answer)))
            }
            switch Metadata.from(object, configuration) {
            case .failure(let problem): return .failure(problem)
            case .success(let found):
                metadata.withLock { $0 = (found, now) }
                return .success(found)
            }
        }
    }

    /// A POST to one of the provider's endpoints, with the client's credentials.
    private func post(_ endpoint: String, _ form: [(String, HTTPClient.FormValue)]) async
        -> Result<HTTPClient.Answer, HTTPClient.Failure>
    {
        var form = form
        guard let secret = configuration.clientSecret else {
            return await http.post(endpoint, form: [("client_id", .text(configuration.clientID))] + form)
        }
        let basic =
            configuration.clientAuthentication.map { $0 == .basic }
            ?? metadata.withLock({ $0?.metadata.prefersBasicAuthentication }) ?? true
        if basic {
            return await http.post(endpoint, form: form, basic: (configuration.clientID, secret))
        }
        form += [("client_id", .text(configuration.clientID)), ("client_secret", .secret(secret))]
        return await http.post(endpoint, form: form)
    }

    /// The token endpoint's answer to `form`.
    private func tokenRequest(_ metadata: Metadata, _ grant: Grant, _ form: [(String, HTTPClient.FormValue)]) async
        -> TokenAnswer
    {
        // A password or a refresh token in the form: the answer's description is left out of reasons.
        let personal = form.contains { field in
            if case .secret = field.1 { true } else { false }
        }
        let answer: HTTPClient.Answer
        switch await post(metadata.tokenEndpoint, form) {
        case .failure(.cancelled): return .refused(.unavailable(reason: "cancelled"))
        case .failure(let failure):
            return .refused(.unavailable(reason: "the identity provider \(failure.description)"))
        case .success(let got): answer = got
        }
        guard answer.status == 200 else {
            // RFC 6749 §5.2 and RFC 8628 §3.5.
            switch answer.object?["error"]?.string {
            case "invalid_grant": return .refused(.rejected(.wrongCredentials))
            case "access_denied": return .refused(.rejected(.refusedByPolicy))
            case "authorization_pending": return .refused(.failed(.tryAgain, reason: "authorization_pending"))
            case "slow_down": return .refused(.failed(.tryAgain, reason: "slow_down"))
            case "expired_token": return Self.expired
            case nil
            where grant == .password && answer.status == 403 && answer.body.isEmpty
                && configuration.clientSecret != nil:
                // How glewlwyd refuses a password (RFC 6749 §5.2 has invalid_grant): its client was
                // authenticated, so the refusal is the password's.
                return .refused(.rejected(.wrongCredentials))
            case nil where grant == .refresh && (400..<500).contains(answer.status):
                // A refresh token refused without a reason (glewlwyd: 400 and no body) is refused all the same.
                return .refused(.rejected(.wrongCredentials))
            default: return .refused(.unavailable(reason: errorText("token", answer, personal: personal)))
            }
        }
        guard let object = answer.object else {
            return .refused(.unavailable(reason: errorText("token", answer, personal: personal)))
        }
        guard let access = object["access_token"]?.string,
            object["token_type"]?.string.map({ $0.lowercased() == "bearer" }) ?? false
        else {
            return .refused(.unavailable(reason: "the identity provider's token answer is malformed"))
        }
        var refresh: Secret?
        if let text = object["refresh_token"]?.string { refresh = Secret(copying: text.utf8) }
        return .tokens(TokenSet(idToken: object["id_token"]?.string, accessToken: access, refreshToken: refresh))
    }

    /// Who the tokens say signed in, every check made.
    private func identityOf(_ tokens: TokenSet, _ metadata: Metadata, nonce: String?) async -> Result<Identity, Problem>
    {
        guard let text = tokens.idToken else { return .failure(.token("the token answer has no ID token")) }
        guard let token = CompactToken(text) else { return .failure(.token("the ID token is malformed")) }
        let verified: [String: JSONValue]
        switch await verifiedClaims(token, metadata) {
        case .failure(let problem): return .failure(problem)
        case .success(let claims): verified = claims
        }
        if let problem = checkClaims(verified, token: token, accessToken: tokens.accessToken, nonce: nonce) {
            return .failure(.token(problem))
        }
        var claims = verified
        // userinfo adds what the ID token left out, and must be about the same subject (Core §5.3.2).
        if let endpoint = metadata.userinfoEndpoint {
            switch await http.get(endpoint, bearer: tokens.accessToken) {
            case .failure(let failure): return .failure(.unreachable(failure))
            case .success(let answer):
                if answer.status == 200, let info = answer.object {
                    guard sameBytes(info["sub"]?.string, verified["sub"]?.string) else {
                        return .failure(.token("userinfo is about another subject than the ID token"))
                    }
                    for (name, value) in info where claims[name] == nil { claims[name] = value }
                }
            }
        }
        guard let claimed = claims[configuration.usernameClaim]?.string else {
            return .failure(.token("the ID token has no \(configuration.usernameClaim) claim"))
        }
        let username: String
        do throws(AuthError) {
            username = try Username.validate(claimed)
        } catch {
            return .failure(.token("the \(configuration.usernameClaim) claim is not a usable user name"))
        }
        return .success(identity(username, subject: verified["sub"]?.string ?? "", claims: claims))
    }

    /// The identity of `username` (the subject's), with what the claims say of it that can be shown.
    private func identity(_ username: String, subject: String, claims: [String: JSONValue]) -> Identity {
        var attributes = ["issuer": configuration.issuer, "subject": subject]
        for (claim, attribute) in [("email", "email"), ("picture", "picture")] {
            if let value = claims[claim]?.string, Self.isShowable(value), value.utf8.count <= 2048 {
                attributes[attribute] = value
            }
        }
        let displayName = claims["name"]?.string.flatMap { Self.isShowable($0) && $0.utf8.count <= 256 ? $0 : nil }
        let groups = (claims[configuration.groupsClaim]?.strings ?? []).filter {
            Self.isShowable($0) && !$0.isEmpty && $0.utf8.count <= 256
        }
        return Identity(
            username: username, displayName: displayName, groups: Set(groups), provider: name, attributes: attributes)
    }

    /// The token's claims once its signature is one of the provider's keys'.
    private func verifiedClaims(_ token: CompactToken, _ metadata: Metadata) async -> Result<
        [String: JSONValue], Problem
    > {
        guard let name = token.header["alg"]?.string else { return .failure(.token("the ID token names no algorithm")) }
        guard let algorithm = SignatureAlgorithm(rawValue: name), metadata.algorithms.contains(algorithm) else {
            return .failure(
                .token(
                    "the ID token is signed with \(TextSafety.escaped(String(name.prefix(16)))), which is not accepted")
            )
        }
        if token.header["crit"] != nil { return .failure(.token("the ID token has critical header parameters")) }
        let keyID = token.header["kid"]?.string
        for attempt in 0..<2 {
            let known: [JSONWebKey]
            switch await signingKeys(metadata, refresh: attempt == 1) {
            case .failure(let problem): return .failure(problem)
            case .success(let found): known = found
            }
            // A token is tried against a few keys at most, however many the set holds or share its id.
            let candidates = known.filter { (keyID == nil || $0.id == keyID) && $0.keyType == algorithm.keyType }
                .prefix(4)
            if candidates.contains(where: { $0.verifies(token.signature, over: token.signingInput, by: algorithm) }) {
                return .success(token.claims)
            }
            // A key the set does not hold yet (the provider rotated its keys) is looked for once more.
            guard candidates.isEmpty, attempt == 0 else { break }
        }
        return .failure(.token("the ID token's signature is not the identity provider's"))
    }

    /// The provider's keys: kept, and fetched again when asked to `refresh` at most once a minute.
    private func signingKeys(_ metadata: Metadata, refresh: Bool) async -> Result<[JSONWebKey], Problem> {
        let now = ContinuousClock.now
        let cached = keys.withLock { cache -> [JSONWebKey]? in
            guard let keys = cache.keys, let fetched = cache.fetched, now - fetched < Self.maxAge else { return nil }
            guard refresh else { return keys }
            // Fetched again at most once a minute, however many tokens name keys it does not hold.
            if let last = cache.lastRefresh, now - last < .seconds(60) { return keys }
            cache.lastRefresh = now
            return nil
        }
        if let cached { return .success(cached) }
        switch await http.get(metadata.jwksURI) {
        case .failure(let failure): return .failure(.unreachable(failure))
        case .success(let answer):
            guard answer.status == 200, let set = JSONWebKey.set(parsing: answer.body) else {
                return .failure(.provider(errorText("key set", answer)))
            }
            keys.withLock { cache in
                cache.keys = set
                cache.fetched = now
            }
            return .success(set)
        }
    }

    /// What OpenID Connect Core §3.1.3.7 asks of an ID token beyond its signature; `nil` when it holds.
    func checkClaims(_ claims: [String: JSONValue], token: CompactToken, accessToken: String?, nonce: String?)
        -> String?
    {
        guard sameBytes(claims["iss"]?.string, configuration.issuer) else {
            return "the ID token's issuer is not \(configuration.issuer)"
        }
        guard let subject = claims["sub"]?.string, !subject.isEmpty else { return "the ID token has no subject" }
        let audience: [String]
        switch claims["aud"] {
        case .string(let one)?: audience = [one]
        case .array(let many)?: audience = many.compactMap(\.string)
        default: return "the ID token has no audience"
        }
        guard audience.contains(where: { sameBytes($0, configuration.clientID) }) else {
            return "the ID token is not meant for this client"
        }
        if let party = claims["azp"] {
            guard sameBytes(party.string, configuration.clientID) else {
                return "the ID token was issued to another client"
            }
        } else if audience.count > 1 {
            return "the ID token has several audiences and no authorized party"
        }
        let now = Int64(Date().timeIntervalSince1970)
        let leeway = configuration.leeway.components.seconds
        guard let expires = claims["exp"]?.seconds else { return "the ID token has no expiry" }
        guard expires > now - leeway else { return "the ID token has expired" }
        guard let issued = claims["iat"]?.seconds, issued <= now + leeway else {
            return "the ID token is issued in the future"
        }
        if let notBefore = claims["nbf"] {
            guard let seconds = notBefore.seconds, seconds <= now + leeway else {
                return "the ID token is not valid yet"
            }
        }
        // A nonce the token returns must be the one this login sent. One sent and not returned is accepted:
        // the password grant is no authentication request (Core §3.1.2.1), its token comes straight from
        // the token endpoint over TLS in answer to this request, and providers (Keycloak among them) return
        // none for it. Where none was sent (a device login, a refresh, whose token may carry the first
        // login's, Core §12.2), there is nothing to compare.
        if let nonce, let claimed = claims["nonce"] {
            guard sameBytes(claimed.string, nonce) else { return "the ID token's nonce is not this login's" }
        }
        if let hash = claims["at_hash"] {
            guard let accessToken, let algorithm = token.header["alg"]?.string.flatMap(SignatureAlgorithm.init),
                let full = digest(algorithm.digest, Array(accessToken.utf8)),
                sameBytes(hash.string, Base64URL.encode(full.prefix(full.count / 2)))
            else { return "the ID token's at_hash is not the access token's" }
        }
        return nil
    }

    // MARK: helpers

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
