import GatekeeperSupport

extension Gatekeeper {
    /// The answer of the admission check.
    @usableFromInline
    enum Admission {
        case admitted(Identity)
        case refused(Identity)
        case needsLogin
        /// The session's timeout passed at `now`; ``endExpiredSession(at:)`` ends it.
        case expired(at: Int64)
    }

    /// The check every protected action makes: one clock read (none when sessions never time out), one
    /// lock, no allocation.
    @usableFromInline
    func admission(_ requirement: Requirement) -> Admission {
        let now = timeouts.areNone ? 0 : clock.now()
        return core.withLock { core -> Admission in
            guard let session = core.session else { return .needsLogin }
            guard !session.isExpired(at: now) else { return .expired(at: now) }
            guard requirement.isSatisfied(by: session.identity) else { return .refused(session.identity) }
            core.session?.touch(at: now, timeouts)
            return .admitted(session.identity)
        }
    }

    /// Ends the session if it has expired by `now`: observers hear of it, the audit records it, and the
    /// provider is told.
    func endExpiredSession(at now: Int64) {
        let (expired, effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core -> Identity? in
                guard let session = core.session, session.isExpired(at: now) else { return nil }
                core.session = nil
                return session.identity
            }
        }
        effects.deliver()
        guard let expired else { return }
        record(.sessionExpired, expired.username)
        Task { [provider] in await provider.signOut(expired) }
    }

    /// Signs in through `conversation`, or joins the login already in progress when `joinExisting` is set.
    /// An explicit sign-in (`joinExisting == false`) waits for a login in progress to end, then starts its own.
    func login(conversation: any Conversation, attempts: Int, joinExisting: Bool) async throws(AuthError) -> Identity {
        while true {
            if Task.isCancelled { throw .cancelled }
            let now = clock.now()
            let (step, effects) = core.withLock { core in
                core.transition(at: now, clock: clock) { core -> LoginStep in
                    // A login that landed after the caller found no session (between its check and this
                    // lock) is used, not followed by a second one: the person is not asked again.
                    if joinExisting, let session = core.session, !session.isExpired(at: now) {
                        return .signedInMeanwhile(session.identity)
                    }
                    let (waiterID, flightID, queued) = core.login.join(joinExisting: joinExisting)
                    return .wait(waiterID, started: flightID, queued: queued)
                }
            }
            effects.deliver()
            let (waiterID, startedFlight, queued): (UInt64, UInt64?, Bool)
            switch step {
            case .signedInMeanwhile(let identity): return identity
            case .wait(let waiter, let flight, let behind): (waiterID, startedFlight, queued) = (waiter, flight, behind)
            }
            if let flightID = startedFlight {
                start(flightID, conversation: conversation, attempts: attempts)
            }
            let result = await wait(waiterID)
            if queued {
                if Task.isCancelled { throw .cancelled }
                continue
            }
            return try result.get()
        }
    }

    /// What a caller of ``login(conversation:attempts:joinExisting:)`` does next.
    private enum LoginStep {
        case signedInMeanwhile(Identity)
        /// Wait as `waiterID` (having started flight `started`, if set); `queued`: behind another login.
        case wait(UInt64, started: UInt64?, queued: Bool)
    }

    private func start(_ flightID: UInt64, conversation: any Conversation, attempts: Int) {
        let task = Task {
            let result: Result<Identity, AuthError>
            do throws(AuthError) {
                result = .success(try await performLogin(conversation: conversation, attempts: attempts))
            } catch {
                result = .failure(error)
            }
            await finish(flightID, with: result)
        }
        // The login may have been abandoned before its task was known; then cancel the task here.
        let attached = core.withLock { $0.login.attach(task, to: flightID) }
        if !attached { task.cancel() }
    }

    /// Waits for the result of a login. Returns `cancelled` at once when this task is cancelled, even if
    /// the login itself is still blocked in the provider.
    private func wait(_ waiterID: UInt64) async -> Result<Identity, AuthError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = core.withLock { $0.login.receive(waiterID, orSuspend: continuation) }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            leave(waiterID)
        }
    }

    /// A waiter's task was cancelled: it stops waiting, and if nobody else wants the login, the login ends.
    private func leave(_ waiterID: UInt64) {
        let now = clock.now()
        let ((), effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core in core.login.leave(waiterID) }
        }
        effects.deliver()
        if effects.abandoned { record(.signInCancelled, nil) }
    }

    /// A login's task ended. Its result counts only if the login is still the current one.
    private func finish(_ flightID: UInt64, with result: Result<Identity, AuthError>) async {
        let now = clock.now()
        let (outcome, effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core -> (current: Bool, replaced: Identity?) in
                guard core.login.land(flightID, with: result) else { return (false, nil) }
                var replaced: Identity?
                if case .success(let identity) = result {
                    replaced = core.session?.identity
                    core.session = Session(identity: identity, at: now, timeouts)
                }
                return (true, replaced)
            }
        }
        // Recorded before anyone waiting hears the result, so the audit trail has `signedIn` before
        // anything the caller does next (a `signedOut`, say).
        switch (outcome.current, result) {
        case (true, .success(let identity)): record(.signedIn, identity.username)
        case (true, .failure(.cancelled)): record(.signInCancelled, nil)
        default: break  // Each failed attempt was audited as it happened.
        }
        effects.deliver()
        switch (outcome.current, result) {
        case (false, .success(let orphan)):
            // Nobody waits for this login any more: the session it opened is closed again.
            await provider.signOut(orphan)
        case (true, .success):
            if let replaced = outcome.replaced { await provider.signOut(replaced) }
        default:
            break
        }
    }

    /// The interactive login: user name, then the provider's questions, up to `attempts` times.
    /// An empty user name means the person changed their mind: ``AuthError/cancelled``.
    private func performLogin(conversation: any Conversation, attempts: Int) async throws(AuthError) -> Identity {
        let attempts = max(attempts, 1)
        for attempt in 1...attempts {
            if Task.isCancelled { throw .cancelled }
            let answer = try await conversation.askUsername(configuration.usernamePrompt)
            if answer.isEmpty { throw .cancelled }
            do throws(AuthError) {
                return try await check(answer, conversation: conversation)
            } catch {
                if error.code != .cancelled { try await waitAfterFailure() }
                switch error.code {
                case .cancelled, .providerUnavailable, .tooManyAttempts:
                    throw error
                default:
                    guard attempt < attempts else { throw error }
                    await conversation.show(error.description, as: .error)
                }
            }
        }
        preconditionFailure("the loop returns or throws")
    }

    /// The fail delay: ``Configuration/failDelay`` times 1 ± up to 25 %, spread as libpam spreads its
    /// delay (the mean of three uniform draws, so most waits are near the middle). Cancelling the login
    /// ends the wait at once.
    private func waitAfterFailure() async throws(AuthError) {
        guard configuration.failDelay > .zero else { return }
        var generator = SystemRandomNumberGenerator()
        let mean = (0..<3).reduce(0.0) { sum, _ in sum + Double.random(in: 0..<1, using: &generator) } / 3
        do {
            try await Task.sleep(for: configuration.failDelay * (1 + (mean - 0.5) / 2))
        } catch {
            throw .cancelled
        }
    }

    /// One attempt: validate, check the lockout, ask the provider, count the outcome.
    private func check(_ answer: String, conversation: any Conversation) async throws(AuthError) -> Identity {
        let username = try Username.validate(answer)
        record(.attempt, unverified: username)
        // A locked-out name is refused before any provider is asked or any password hashed.
        if let lockedOut = lockoutError(for: username, confirmed: false) { throw lockedOut }
        let request = AuthRequest(
            username: username,
            conversation: ValidatingConversation(conversation),
            terminal: configuration.terminal,
            remoteHost: configuration.remoteHost,
            requestingUser: configuration.requestingUser
        )
        let collector = TraceCollector()
        let answer = await ProviderChain.$collector.withValue(collector) { () async -> Result<AuthOutcome, AuthError> in
            do throws(AuthError) {
                return .success(try await provider.authenticate(request))
            } catch {
                return .failure(error)
            }
        }
        let trace = collector.trace
        let outcome = try answer.get()
        let entry = trace?.decidingEntry
        switch outcome {
        case .authenticated(let identity):
            if let trace { record(.stackDecision, identity.username, detail: trace.description, stackEntry: entry) }
            // Another spelling of a locked-out account is still locked out.
            if identity.username != username, let lockedOut = lockoutError(for: identity.username, confirmed: true) {
                await provider.signOut(identity)
                throw lockedOut
            }
            recordSuccess(of: username)
            if identity.username != username { recordSuccess(of: identity.username) }
            return identity
        case .rejected(let rejection, let canonical):
            // Failures count against the backend's spelling of the account, if it has its own.
            let account = canonical ?? username
            if let trace { record(.stackDecision, account, detail: trace.description, stackEntry: entry) }
            if account != username, let lockedOut = lockoutError(for: account, confirmed: true) { throw lockedOut }
            registerFailure(of: account, known: true, rejection.error, stackEntry: entry)
            throw rejection.error
        case .notMine:
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            registerFailure(of: username, known: false, .userNotFound, stackEntry: entry)
            throw configuration.revealsUnknownUsers ? .userNotFound : .invalidCredentials
        case .unavailable(let reason):
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            record(.providerUnavailable, unverified: username, .providerUnavailable(reason: reason))
            throw .providerUnavailable(reason: reason)
        case .ignored:
            // Nothing applied to this login: as PAM's stack of only ignored modules, it fails.
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            registerFailure(of: username, known: false, .refusedByPolicy, stackEntry: entry)
            throw .refusedByPolicy
        }
    }

    /// The error for an account that is locked out now (recorded in the audit), or `nil`. A store that
    /// cannot tell fails closed: its error refuses the login.
    private func lockoutError(for account: String, confirmed: Bool) -> AuthError? {
        guard let policy = configuration.lockout, policy.deny > 0 else { return nil }
        let status: LockoutStatus
        do throws(AuthError) {
            status = try lockout.status(of: account, policy: policy)
        } catch {
            record(.stateUnavailable, nil, error)
            return error
        }
        guard case .locked(_, let remaining) = status else { return nil }
        let error = remaining.map { AuthError.tooManyAttempts(retryAfter: $0) } ?? .lockedUntilUnlocked
        if confirmed { record(.lockedOut, account, error) } else { record(.lockedOut, unverified: account, error) }
        return error
    }

    private func registerFailure(of account: String, known: Bool, _ reason: AuthError, stackEntry: String?) {
        if known {
            record(.signInFailed, account, reason, stackEntry: stackEntry)
        } else {
            record(.signInFailed, unverified: account, reason)
        }
        guard let policy = configuration.lockout, policy.deny > 0 else { return }
        let source = LoginSource(
            remoteHost: configuration.remoteHost, terminal: configuration.terminal, service: configuration.service)
        do throws(AuthError) {
            let status = try lockout.recordFailure(of: account, known: known, source: source, policy: policy)
            guard case .locked(_, let remaining) = status else { return }
            let error = remaining.map { AuthError.tooManyAttempts(retryAfter: $0) } ?? .lockedUntilUnlocked
            if known { record(.lockedOut, account, error) } else { record(.lockedOut, unverified: account, error) }
        } catch {
            record(.stateUnavailable, nil, error, detail: "a failed login could not be counted")
        }
    }

    private func recordSuccess(of account: String) {
        guard configuration.lockout != nil else { return }
        do throws(AuthError) {
            try lockout.recordSuccess(of: account)
        } catch {
            record(.stateUnavailable, account, error, detail: "the count of failed logins could not be reset")
        }
    }
}

/// Checks every password the provider asks for before the provider sees it.
struct ValidatingConversation: Conversation {
    let base: any Conversation

    init(_ base: any Conversation) { self.base = base }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        try await base.ask(prompt)
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        try Credentials.validatePassword(secret)
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }
}
