import Authentication
import BlockingPools
import CPAMLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One PAM transaction, run on a thread of its own and bridged to the caller's task through the
/// package's blocking bridge.
final class PAMTransaction: Sendable {
    /// What the transaction does.
    enum Purpose: Sendable {
        /// A login: authenticate, check the account, and (where the request and the configuration allow
        /// it) change an expired password.
        case login
        /// A password change (`pam_chauthtok`, both of its passes): the answer is
        /// ``AuthOutcome/authenticated(_:)`` when it changed, else ``AuthOutcome/failed(_:reason:)`` with
        /// libpam's own code, whatever it is, for ``PAMAuthProvider`` to read.
        case passwordChange(expiredOnly: Bool)
        /// The current password of a change, checked by the stack's `auth` lines alone (`pam_authenticate`,
        /// no account check: an expired password is still the right one), whoever runs the program: as
        /// root, pam_unix would change a password without asking the current one. Answered as a change is.
        case passwordCheck
    }

    private let request: AuthRequest
    private let purpose: Purpose
    private let configuration: PAMAuthProvider.Configuration
    private let sessions: PAMSessions
    /// The thread, the caller's task, and the questions between them.
    private let bridge = BlockingBridge<Result<AuthOutcome, AuthError>>()
    /// What the conversation said: the person cancelled a question, or it failed with an error to pass on
    /// instead of PAM's generic conversation error.
    private let conversationState = Locked<(cancelled: Bool, error: AuthError?)>((false, nil))

    init(
        request: AuthRequest, configuration: PAMAuthProvider.Configuration, sessions: PAMSessions,
        purpose: Purpose = .login
    ) {
        self.request = request
        self.purpose = purpose
        self.configuration = configuration
        self.sessions = sessions
    }

    /// Runs the transaction; returns as soon as it ends or the task is cancelled. The result may be
    /// delivered in the middle of the job (a session held open until sign-out keeps its thread).
    func run() async -> Result<AuthOutcome, AuthError> {
        await bridge.run(on: Self.threads) { [self] _ in perform() } ?? .failure(.cancelled)
    }

    /// The threads transactions run on: one per transaction, from `pam_start` to `pam_end` (a session
    /// held until sign-out keeps its thread). At most 64 at once; more wait in line. A finished thread is
    /// kept for the next transaction, as starting one costs about as much as a `pam_matrix` login. Its
    /// threads run no other pool's jobs: a transaction may change its thread (credentials, a session
    /// keyring, a security context) and a helper started from it would inherit that.
    /// (``ProcessPools/Role/pam``, where a host sizes it).
    static var threads: BlockingPool { ProcessPools.pool(.pam) }

    /// Whether the caller stopped waiting or the person cancelled a question: no further phase starts.
    private var isCancelled: Bool { bridge.isCancelled || conversationState.withLock { $0.cancelled } }

    /// Hands the result to the caller; `false` when nobody waits for it any more (cancelled).
    @discardableResult
    private func deliver(_ result: Result<AuthOutcome, AuthError>) -> Bool {
        bridge.deliver(result)
    }

    // MARK: On the PAM thread

    /// The whole transaction, blocking: start, items, authenticate, account, end.
    private func perform() -> Result<AuthOutcome, AuthError> {
        var conversation = pam_conv(conv: converse, appdata_ptr: Unmanaged.passUnretained(self).toOpaque())
        var handle: OpaquePointer?
        let started = configuration.service.withCString { service in
            request.username.withCString { user in
                withOptionalCString(configuration.configurationDirectory) { directory in
                    gk_pam_start_confdir(service, user, &conversation, directory, &handle)
                }
            }
        }
        guard started == PAM_SUCCESS, let handle else {
            var why: UnsafePointer<CChar>?
            if gatekeeper_pam_load(&why) != 0, let why {
                return .success(.unavailable(reason: "PAM could not start: \(String(cString: why))."))
            }
            return .success(.unavailable(reason: "PAM could not start the \(configuration.service) service."))
        }
        var status = PAM_SUCCESS
        defer { gk_pam_end(handle, status) }

        let remoteUser = configuration.remoteUser ?? request.requestingUser
        for (item, value) in [(PAM_TTY, request.terminal), (PAM_RHOST, request.remoteHost), (PAM_RUSER, remoteUser)] {
            guard let value else { continue }
            status = value.withCString { gk_pam_set_item(handle, item, $0) }
            guard status == PAM_SUCCESS else { return outcome(of: status, handle) }
        }

        if case .passwordCheck = purpose {
            guard !isCancelled else { return .failure(.cancelled) }
            status = gk_pam_authenticate(handle, 0)
            if let failure = conversationFailure() { return .failure(failure) }
            guard status == PAM_SUCCESS else {
                let code = PAMResult(code: status) ?? .systemError
                return .success(.failed(code, reason: "PAM: \(String(cString: gk_pam_strerror(handle, status)))."))
            }
            return .success(.authenticated(Identity(username: request.username, provider: "pam")))
        }
        if case .passwordChange(let expiredOnly) = purpose {
            guard !isCancelled else { return .failure(.cancelled) }
            status = gk_pam_chauthtok(handle, expiredOnly ? Int32(PAM_CHANGE_EXPIRED_AUTHTOK) : 0)
            if let failure = conversationFailure() { return .failure(failure) }
            guard status == PAM_SUCCESS else {
                let code = PAMResult(code: status) ?? .systemError
                return .success(.failed(code, reason: "PAM: \(String(cString: gk_pam_strerror(handle, status)))."))
            }
            return .success(.authenticated(Identity(username: request.username, provider: "pam")))
        }

        // Each phase starts only if the login is still wanted: a cancelled login opens nothing.
        status = gk_pam_authenticate(handle, 0)
        guard status == PAM_SUCCESS, !isCancelled else { return outcome(of: status, handle) }
        // An expired password that may be changed: the person is admitted only once it has been, after
        // the whole stack has said yes (the gatekeeper asks for it then), so no credentials or session yet.
        var mustChange = false
        if configuration.checksAccount {
            status = gk_pam_acct_mgmt(handle, 0)
            if status == PAM_NEW_AUTHTOK_REQD && configuration.allowsPasswordChange && request.mayChangeExpiredPassword
            {
                mustChange = true
                status = PAM_SUCCESS
            }
            guard status == PAM_SUCCESS, !isCancelled else { return outcome(of: status, handle) }
        }
        guard let user = pamUser(handle) else {
            return .success(.unavailable(reason: "a PAM module set a user name that cannot be used."))
        }
        var identity = SystemAccount.identity(of: user, provider: "pam", groupsNow: request.readsGroups)
        identity.mustChangePassword = mustChange
        guard (configuration.establishesCredentials || configuration.opensSession) && !mustChange else {
            return .success(.authenticated(identity))
        }

        // Credentials and a session live until sign-out, on this handle and this thread.
        status = gk_pam_setcred(handle, Int32(PAM_ESTABLISH_CRED))
        guard status == PAM_SUCCESS, !isCancelled else {
            if status == PAM_SUCCESS { status = gk_pam_setcred(handle, Int32(PAM_DELETE_CRED)) }
            return outcome(of: status, handle)
        }
        if configuration.opensSession {
            status = gk_pam_open_session(handle, 0)
            guard status == PAM_SUCCESS else {
                gk_pam_setcred(handle, Int32(PAM_DELETE_CRED))
                return outcome(of: status, handle)
            }
        }
        let session = sessions.open()
        identity.attributes[PAMSessions.attribute] = session.id
        // A session whose identity reached nobody (the login was cancelled meanwhile) is closed at once;
        // otherwise it stays open until sign-out.
        if deliver(.success(.authenticated(identity))) {
            session.waitUntilClosed()
        } else {
            sessions.discard(session)
        }
        if configuration.opensSession { status = gk_pam_close_session(handle, 0) }
        let deleted = gk_pam_setcred(handle, Int32(PAM_DELETE_CRED))
        if status == PAM_SUCCESS { status = deleted }
        session.finish()
        return .success(.authenticated(identity))  // Already delivered, or nobody waits; nobody reads it.
    }

    /// The user name PAM holds now: a module may have changed it (canonical case, an alias).
    private func pamUser(_ handle: OpaquePointer) -> String? {
        var item: UnsafeRawPointer?
        guard gk_pam_get_item(handle, PAM_USER, &item) == PAM_SUCCESS, let item else { return nil }
        let bytes = UnsafeBufferPointer(start: item.assumingMemoryBound(to: UInt8.self), count: strlen(item))
        return try? Username.validate(utf8: bytes)
    }

    /// Maps a PAM result code to an answer, in one place.
    private func outcome(of status: Int32, _ handle: OpaquePointer) -> Result<AuthOutcome, AuthError> {
        if let failure = conversationFailure() { return .failure(failure) }
        let message = String(cString: gk_pam_strerror(handle, status))
        // Failures count against the name PAM settled on, so spellings of one account share a lockout.
        let user = pamUser(handle)
        let canonical = user == request.username ? nil : user
        switch status {
        case PAM_AUTH_ERR:
            return .success(.rejected(.wrongCredentials, canonicalUsername: canonical))
        case PAM_USER_UNKNOWN:
            return .success(.notMine)
        case PAM_MAXTRIES:
            return .success(.rejected(.tooManyTries, canonicalUsername: canonical))
        case PAM_ACCT_EXPIRED:
            return .success(.rejected(.expiredAccount, canonicalUsername: canonical))
        case PAM_NEW_AUTHTOK_REQD, PAM_AUTHTOK_EXPIRED:
            return .success(.rejected(.passwordChangeRequired, canonicalUsername: canonical))
        case PAM_PERM_DENIED:
            return .success(.rejected(.refusedByPolicy, canonicalUsername: canonical))
        case PAM_CRED_INSUFFICIENT, PAM_AUTHINFO_UNAVAIL:
            var reason = "PAM: \(message)."
            if geteuid() != 0 {
                reason += " Without root, pam_unix can check only the password of the user running this program."
            }
            return .success(.unavailable(reason: reason))
        default:
            return .success(.unavailable(reason: "PAM: \(message)."))
        }
    }

    /// Why the transaction must end with an error rather than PAM's code: cancelled, or the conversation
    /// failed with an error of its own.
    private func conversationFailure() -> AuthError? {
        let conversationError = conversationState.withLock { $0.error }
        if isCancelled { return .cancelled }
        return conversationError
    }

    /// Answers PAM's messages through the request's conversation. Runs on the PAM thread.
    fileprivate func answer(
        _ count: Int,
        _ messages: UnsafeMutablePointer<UnsafePointer<pam_message>?>,
        _ responses: UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>
    ) -> Int32 {
        // PAM frees the responses with free(), so they are allocated with calloc/malloc.
        guard let replies = calloc(count, MemoryLayout<pam_response>.stride)?.assumingMemoryBound(to: pam_response.self)
        else { return PAM_BUF_ERR }
        func fail() -> Int32 {
            for index in 0..<count {
                if let text = replies[index].resp {
                    Secret.wipe(UnsafeMutableRawBufferPointer(start: text, count: strlen(text)))
                    free(text)
                }
            }
            free(replies)
            return PAM_CONV_ERR
        }
        let conversation = request.conversation
        for index in 0..<count {
            guard let message = messages[index]?.pointee, let textPointer = message.msg else { return fail() }
            let text = String(cString: textPointer)
            switch message.msg_style {
            case PAM_PROMPT_ECHO_OFF:
                guard
                    let secret = ask({ () async throws(AuthError) -> Secret in try await conversation.askSecret(text) })
                else { return fail() }
                replies[index].resp = secret.withUnsafeBytes { copyForC($0) }
            case PAM_PROMPT_ECHO_ON:
                guard let answer = ask({ () async throws(AuthError) -> String in try await conversation.ask(text) })
                else { return fail() }
                replies[index].resp = answer.utf8CString.withUnsafeBytes {
                    copyForC(UnsafeRawBufferPointer(rebasing: $0.dropLast()))
                }
            case PAM_ERROR_MSG, PAM_TEXT_INFO:
                let kind: MessageKind = message.msg_style == PAM_ERROR_MSG ? .error : .info
                _ = ask({ () async throws(AuthError) -> Bool in
                    await conversation.show(text, as: kind)
                    return true
                })
            default:
                return fail()
            }
            if replies[index].resp == nil
                && (message.msg_style == PAM_PROMPT_ECHO_OFF || message.msg_style == PAM_PROMPT_ECHO_ON)
            {
                return fail()
            }
        }
        responses.pointee = replies
        return PAM_SUCCESS
    }

    /// Runs one conversation call from the PAM thread, blocking it until the answer arrives or the
    /// transaction is cancelled. `nil` when there is no answer (the error is kept for the caller).
    private func ask<T: Sendable>(_ question: @escaping @Sendable () async throws(AuthError) -> T) -> T? {
        guard let result = bridge.ask(question) else { return nil }
        return conversationState.withLock { state in
            switch result {
            case .success(let value):
                return state.cancelled ? nil : value
            case .failure(let error):
                if !state.cancelled && error != .cancelled { state.error = error }
                if error == .cancelled { state.cancelled = true }
                return nil
            }
        }
    }
}

/// PAM's conversation function: finds the transaction through `appdata_ptr`.
private func converse(
    _ count: Int32,
    _ messages: UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
    _ responses: UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?,
    _ context: UnsafeMutableRawPointer?
) -> Int32 {
    guard let messages, let responses, let context, count > 0, count <= PAM_MAX_NUM_MSG else { return PAM_CONV_ERR }
    let transaction = Unmanaged<PAMTransaction>.fromOpaque(context).takeUnretainedValue()
    return transaction.answer(Int(count), messages, responses)
}

/// A NUL-terminated copy of `bytes` in memory from `malloc`, for PAM to free.
private func copyForC(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<CChar>? {
    guard let copy = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
    if let base = bytes.baseAddress { memcpy(copy, base, bytes.count) }
    copy[bytes.count] = 0
    return copy
}

private func withOptionalCString<T>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let string else { return body(nil) }
    return string.withCString(body)
}
