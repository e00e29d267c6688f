public import Authentication
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// Remembered logins and signing out: refresh tokens kept, rechecked and revoked.
extension OIDCAuthProvider {

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

    func reportOnce(_ text: String) {
        guard
            reported.withLock({ reported in
                defer { reported = true }; return !reported
            })
        else { return }
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
}
