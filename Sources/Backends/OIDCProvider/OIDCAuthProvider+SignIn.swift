public import Authentication
import COIDCLoader
import FoundationEssentials
import GatekeeperSupport
import TerminalQRCode

#if canImport(Glibc)
    import Glibc
#endif

/// Signing in: the device login and the password login, each to an ID token checked.
extension OIDCAuthProvider {

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
    func deviceLogin(_ metadata: Metadata, _ conversation: any Conversation) async throws(AuthError)
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

    static let expired = TokenAnswer.refused(
        .failed(.credentialsExpired, reason: "the sign-in code expired before it was approved"))
}
