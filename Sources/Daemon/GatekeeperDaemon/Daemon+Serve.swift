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
        // What a program says of where the login comes from reaches the lockout's records and the audit, which
        // people read on a terminal: escaped, whoever says it.
        var origin = LoginOrigin(
            service: request.service, terminal: request.terminal.map { TextSafety.escaped($0) },
            remoteHost: request.remoteHost.map { TextSafety.escaped($0) },
            requestingUser: request.requestingUser.map { TextSafety.escaped($0) })
        if peer.uid != 0 {
            // Nothing the caller says about itself is taken: it runs on this host, as the user it is. Its own
            // name, byte for byte (`Å` and `Å` are two accounts), before any backend is asked about the name.
            let own = SystemAccounts.name(of: peer.uid)
            (origin.remoteHost, origin.requestingUser) = (nil, own)
            guard let own, Username.same(own, request.user) else {
                refused(request, by: peer, own: own, audit: login.audit)
                return (.permissionDenied, nil)
            }
        }
        // The account the backend names must be the one the program asked for, byte for byte: sudo goes on as
        // the user it asked about, whoever signed in. With the module's `rename_user`, a program that reads
        // PAM_USER back (login) may go on as the account's own spelling instead.
        let renames = request.flags.contains(.renamesUser) && peer.uid == 0
        // The account check and the password change, before anything is asked: nothing is looked at or changed
        // for an account the program did not name. (A login is checked once it has answered, below: refused
        // beforehand, a spelling of an existing account would be told from an unknown name, which is asked for
        // a password all the same.)
        if !renames, request.operation != .authenticate,
            case .known(let canonical, _) = await login.provider.lookUpAccount(request.user),
            !Username.same(canonical, request.user)
        {
            // Not the program's account — but an account that may not log in at all is refused as under its own
            // spelling: a host whose name service folds `DAVE` to `dave` must not open a locked `dave` by key.
            if request.operation == .account {
                let own = await login.provider.accountCheck(canonical)
                if ![.success, .ignore, .userUnknown, .authinfoUnavailable].contains(own) { return (own, nil) }
            }
            return (.userUnknown, nil)
        }
        let result: (PAMResult, String?)
        switch request.operation {
        // The module's word that the host does not know the name, and the daemon's own look-up agreeing: a
        // name either side knows is an ordinary login, counted as any.
        case .authenticate where request.flags.contains(.unknownToHost) && SystemAccounts.uid(of: request.user) == nil:
            result = (await standIn(request, login: login, connection: connection, origin: origin), nil)
        case .authenticate:
            let gatekeeper = login.gatekeeper(origin: origin, clientProcessID: peer.pid)
            let conversation = DaemonConversation(connection: connection, request: request)
            let traced = await gatekeeper.signInWithTrace(conversation: conversation)
            switch traced.outcome {
            case .success(let identity) where Username.same(identity.username, request.user):
                result = (.success, nil)
            case .success(let identity) where renames:
                result = (.success, identity.username)
            case .success(let identity):
                // Refused as a wrong password is, after the same wait measured from the same moment (the answer
                // handed to the backend), so the clock does not say the password was right.
                login.audit.record(
                    AuditEvent(
                        kind: .accessDenied, username: identity.username, provider: "gatekeeperd",
                        detail: "signed in as the account's own spelling, which is not the name the program asked "
                            + "for (service \(request.service)); the module's rename_user would let it",
                        terminal: origin.terminal, remoteHost: origin.remoteHost, service: request.service,
                        processID: peer.pid))
                try? await gatekeeper.delayRefusal(answeredAt: traced.answeredAt)
                result = (.authenticationError, nil)
            case .failure(let error):
                // A locked account is told why, as pam_faillock tells it: sudo would say only "Sorry, try again"
                // for a login refused before anything was asked. So is one whose other logins held every slot.
                if error.code == .tooManyAttempts || error.code == .loginsInFlight {
                    await conversation.show(error.description, as: .error)
                }
                result = (
                    Self.pamResult(
                        error, of: traced.trace, refusedToAsk: conversation.refusedToAsk.withLock { $0 }), nil
                )
            }
        case .account:
            result = (await login.provider.accountCheck(request.user), nil)
        case .checkPasswordChange:
            guard login.provider.changesPasswords else { return (.ignore, nil) }
            result = (await login.provider.lookUpAccount(request.user) == .unknown ? .userUnknown : .success, nil)
        case .changePassword:
            guard login.provider.changesPasswords else { return (.ignore, nil) }
            // PAM_CHANGE_EXPIRED_AUTHTOK: only a password that has expired is changed (as pam_unix does).
            if request.flags.contains(.expiredOnly),
                await login.provider.accountCheck(request.user) != .newAuthenticationTokenRequired
            {
                return (.success, nil)
            }
            let gatekeeper = login.gatekeeper(origin: origin, clientProcessID: peer.pid)
            let conversation = DaemonConversation(connection: connection, request: request)
            let traced = await gatekeeper.changePasswordWithTrace(of: request.user, conversation: conversation)
            switch traced.outcome {
            case .success: result = (.success, nil)
            case .failure(let error):
                let code = Self.pamResult(
                    error, of: traced.trace, refusedToAsk: conversation.refusedToAsk.withLock { $0 })
                // Anything but a wrong current password or a cancel: the token could not be changed.
                result = (
                    [.authenticationError, .conversationError, .authinfoUnavailable].contains(code)
                        ? code : .authenticationTokenError, nil
                )
            }
        }
        // Stopped under it: refused. The daemon was there and may have been given the password; the program's
        // next module (pam_unix) must not judge it instead.
        if connection.ending == .daemonStopping { return (request.operation.refusal, nil) }
        return result
    }

    /// A login for a name the host's name service does not know (sshd runs PAM for one, with a stand-in
    /// password): asked for a password as any name is, answered after the stack's fail delay, and `user_unknown`
    /// — nothing is handed to a backend, and nothing is counted, as pam_faillock counts nothing for such a name:
    /// nobody can lock a users file's or a directory's account of that name through sshd. Audited without the
    /// name (it may be a password typed into the wrong field).
    func standIn(
        _ request: DaemonRequest, login: HostLogin, connection: DaemonConnection,
        origin: LoginOrigin
    ) async -> PAMResult {
        let gatekeeper = login.gatekeeper(origin: origin, clientProcessID: connection.peer.pid)
        let conversation = DaemonConversation(connection: connection, request: request)
        do throws(AuthError) {
            _ = try await conversation.askSecret("Password: ")
        } catch {
            return Self.pamResult(error, refusedToAsk: conversation.refusedToAsk.withLock { $0 })
        }
        login.audit.record(
            AuditEvent(
                kind: .signInFailed, username: nil, userDigest: login.audit.digest(ofUnverifiedName: request.user),
                provider: "gatekeeperd", reason: .userNotFound,
                detail: "a name the host does not know (service \(request.service)): no backend asked, nothing counted",
                terminal: origin.terminal, remoteHost: origin.remoteHost, service: request.service,
                processID: connection.peer.pid))
        // The password was given just now, and no backend was asked: the delay runs from here.
        try? await gatekeeper.delayRefusal(answeredAt: nil)
        return .userUnknown
    }

    /// Audits a caller other than root asking for another account: who (uid, pid, own name) and what, never
    /// the name asked for (it may be a password typed into the wrong field). The first refusal of a caller's
    /// uid is recorded at once; those in the 10 seconds after it, in one record when they are over: a flood of
    /// refusals does not fill the log, and none goes unrecorded.
    func refused(_ request: DaemonRequest, by peer: DaemonConnection.Peer, own: String?, audit: any AuditSink) {
        let who = "uid \(peer.uid) (\(own.map { TextSafety.escaped($0) } ?? "no account"))"
        refusals.note(
            peer.uid,
            write: { carried in
                audit.record(
                    AuditEvent(
                        kind: .requestRefused, username: nil, provider: "gatekeeperd",
                        detail:
                            "\(who) asked for another account (\(request.operation.word), service \(request.service))"
                            + (carried > 0 ? "; \(carried) more such requests refused before this one" : ""),
                        terminal: request.terminal.map { TextSafety.escaped($0) }, service: request.service,
                        processID: peer.pid))
            },
            summarize: { leftOut in
                audit.record(
                    AuditEvent(
                        kind: .requestRefused, username: nil, provider: "gatekeeperd",
                        detail: "\(who) asked for another account \(leftOut) more times in 10 seconds "
                            + "(the first recorded before; this pid and service are the first left out's)",
                        service: request.service, processID: peer.pid))
            })
    }

    /// The PAM return code for a login or password change through a stack that ended with `error`: as
    /// ``pamResult(_:refusedToAsk:)``, but `authinfo_unavail` only where the stack itself decided so (its
    /// backends could not be reached, `trace`). Anything else unavailable — lockout state that cannot be read or
    /// written, on a disk any user can fill — is a refusal: never the "fall through to pam_unix" an admin's
    /// `authinfo_unavail=ignore` makes of it.
    static func pamResult(_ error: AuthError, of trace: ProviderChain.Trace?, refusedToAsk: Bool) -> PAMResult {
        let code = pamResult(error, refusedToAsk: refusedToAsk)
        return code == .authinfoUnavailable && trace?.result != .authinfoUnavailable ? .authenticationError : code
    }

    /// The PAM return code for a login that ended with `error` (``AuthError/pamResult``), but that
    /// `use_first_pass` without a password to use (the module refused to ask) is `authtok_recover_err`.
    static func pamResult(_ error: AuthError, refusedToAsk: Bool = false) -> PAMResult {
        error.code == .cancelled && refusedToAsk ? .authenticationTokenRecoveryError : error.pamResult
    }
}

extension DaemonRequest.Operation {
    /// A login the daemon is there for and does not serve (busy, over a share, stopping), in the words of the
    /// call: never `authinfo_unavail`, which an admin's control line reads as "fall through".
    var refusal: PAMResult {
        switch self {
        case .authenticate: .authenticationError
        case .account: .permissionDenied
        case .checkPasswordChange, .changePassword: .authenticationTokenError
        }
    }

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
