import Authentication
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// The provider's answers: a token set and its ID token read into an identity or a refusal.
extension OIDCAuthProvider {

    /// The metadata, fetched once and kept; a fetch that fails is tried again by the next login.
    func currentMetadata() async -> Result<Metadata, Problem> {
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
    func post(_ endpoint: String, _ form: [(String, HTTPClient.FormValue)]) async
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
    func tokenRequest(_ metadata: Metadata, _ grant: Grant, _ form: [(String, HTTPClient.FormValue)]) async
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
    func identityOf(_ tokens: TokenSet, _ metadata: Metadata, nonce: String?) async -> Result<Identity, Problem> {
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
    func identity(_ username: String, subject: String, claims: [String: JSONValue]) -> Identity {
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
    func verifiedClaims(_ token: CompactToken, _ metadata: Metadata) async -> Result<
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
    func signingKeys(_ metadata: Metadata, refresh: Bool) async -> Result<[JSONWebKey], Problem> {
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
}
