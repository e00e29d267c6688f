import Authentication
import GatekeeperHost
import GatekeeperSupport

/// What each request does, and who may make it.
extension Daemon {
    /// Serves one request: the answer is a PAM return code for the module to hand its program, and the
    /// account's own name when the backend spells it differently.
    ///
    /// Who may ask what is read from the kernel (``DaemonConnection/peer``): root (setuid `sudo`, `su`,
    /// `sshd`) for any account; anyone else for their own account only — as `unix_chkpwd` lets pam_unix check
    /// only the caller's own password — which is refused and audited otherwise, before anything is asked.
    func serve(_ request: DaemonRequest, on connection: DaemonConnection) async -> (PAMResult, String?) {
        guard ServiceStacks.isServiceName(request.service) else { return (.serviceError, nil) }
        // No stack for this service, nor a default: not this module's login (the next module's).
        guard let login = stacks.withLock({ $0 }).login(for: request.service) else { return (.ignore, nil) }
        let peer = connection.peer
        var origin = (terminal: request.terminal, remoteHost: request.remoteHost, user: request.requestingUser)
        if peer.uid != 0 {
            // Nothing the caller says about itself is taken: it runs on this host, as the user it is.
            let own = SystemAccounts.name(of: peer.uid)
            origin = (request.terminal, nil, own)
            let lookup = await login.provider.lookUpAccount(request.user)
            let canonical: String? = if case .known(let name, _) = lookup { name } else { nil }
            guard let own, own == request.user, canonical == nil || canonical == own else {
                login.audit.record(
                    AuditEvent(
                        kind: .requestRefused, username: nil, provider: "gatekeeperd",
                        detail: "uid \(peer.uid) (\(own.map { TextSafety.escaped($0) } ?? "no account")) asked for "
                            + "another account (\(request.operation.word), service \(request.service))",
                        terminal: request.terminal.map { TextSafety.escaped($0) }, processID: peer.pid))
                return (.permissionDenied, nil)
            }
        }
        let result: (PAMResult, String?)
        switch request.operation {
        case .authenticate:
            let gatekeeper = login.gatekeeper(
                service: request.service, terminal: origin.terminal, remoteHost: origin.remoteHost,
                requestingUser: origin.user)
            let conversation = DaemonConversation(connection: connection, request: request)
            switch await gatekeeper.signInWithTrace(conversation: conversation).outcome {
            case .success(let identity):
                result = (.success, identity.username == request.user ? nil : identity.username)
            case .failure(let error):
                result = (Self.pamResult(error, refusedToAsk: conversation.refusedToAsk.withLock { $0 }), nil)
            }
        case .account:
            result = (await checkAccount(request.user, provider: login.provider), nil)
        case .checkPasswordChange:
            guard login.provider.changesPasswords else { return (.ignore, nil) }
            result = (await login.provider.lookUpAccount(request.user) == .unknown ? .userUnknown : .success, nil)
        case .changePassword:
            guard login.provider.changesPasswords else { return (.ignore, nil) }
            let gatekeeper = login.gatekeeper(
                service: request.service, terminal: origin.terminal, remoteHost: origin.remoteHost,
                requestingUser: origin.user)
            let conversation = DaemonConversation(connection: connection, request: request)
            switch await gatekeeper.changePasswordWithTrace(of: request.user, conversation: conversation).outcome {
            case .success: result = (.success, nil)
            case .failure(let error):
                let code = Self.pamResult(error, refusedToAsk: conversation.refusedToAsk.withLock { $0 })
                // Anything but a wrong current password or a cancel: the token could not be changed.
                result = (
                    [.authenticationError, .conversationError, .authinfoUnavailable].contains(code)
                        ? code : .authenticationTokenError, nil
                )
            }
        }
        // Stopped under it: the login is answered as unreachable, so the program's next module may serve.
        if connection.ending == .daemonStopping { return (.authinfoUnavailable, nil) }
        return result
    }

    /// `pam_sm_acct_mgmt`: whether `user` may log in now, asked of the stack without a password. Each
    /// backend that keeps the account is asked (``AuthProvider/recheck(_:)``); one that refuses decides
    /// (locked, expired, not activated, must change its password); none that can tell: `ignore`, for the
    /// program's other account modules.
    func checkAccount(_ user: String, provider: any AuthProvider) async -> PAMResult {
        let canonical: String
        switch await provider.lookUpAccount(user) {
        case .unknown: return .userUnknown
        case .known(let name, _): canonical = name
        case .cannotTell: canonical = user
        }
        let names = ((provider as? ProviderChain)?.providerNames ?? [provider.name]).sorted()
        var answer = PAMResult.ignore
        for name in names {
            switch await provider.recheck(Identity(username: canonical, provider: name)) {
            case .valid: answer = .success
            case .refused(let why):
                // A locked account is the account check's refusal here (no password was given to tell apart).
                return switch why.code {
                case .userNotFound: .userUnknown
                case .accountLocked: .permissionDenied
                default: Self.pamResult(why)
                }
            case .unavailable: if answer == .ignore { answer = .authinfoUnavailable }
            case .unverifiable: continue
            }
        }
        return answer
    }

    /// The PAM return code for a login that ended with `error`, as pam_unix and pam_faillock answer: a locked
    /// account is `auth_err` like a wrong password (no oracle); `use_first_pass` without a password to use is
    /// `authtok_recover_err`.
    static func pamResult(_ error: AuthError, refusedToAsk: Bool = false) -> PAMResult {
        switch error.code {
        case .cancelled: refusedToAsk ? .authenticationTokenRecoveryError : .conversationError
        case .userNotFound: .userUnknown
        case .accountExpired: .accountExpired
        case .passwordChangeRequired: .newAuthenticationTokenRequired
        case .refusedByPolicy, .accountNotActivated, .notAuthorized: .permissionDenied
        case .credentialsExpired: .credentialsExpired
        case .providerUnavailable: .authinfoUnavailable
        case .passwordNotChanged: .authenticationTokenError
        default: .authenticationError
        }
    }
}

extension DaemonRequest.Operation {
    /// The PAM call's name, for records.
    var word: String {
        switch self {
        case .authenticate: "authenticate"
        case .account: "acct_mgmt"
        case .checkPasswordChange: "chauthtok (preliminary)"
        case .changePassword: "chauthtok"
        }
    }
}
