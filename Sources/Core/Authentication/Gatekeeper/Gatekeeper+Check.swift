import GatekeeperSupport

/// One login's attempts, each through the one admission path: validate, look up, remembered, open, authenticate, verdict, settle, audit.
extension Gatekeeper {
    /// The interactive login: user name, then the provider's questions, up to `attempts` times, each
    /// attempt its own in the ledger (a re-asked prompt presents nothing until it is answered). An empty
    /// user name means the person changed their mind: ``AuthError/cancelled``. The answer carries the
    /// trace of the latest attempt a stack answered (or of the change of an expired password that followed
    /// it), and when the last attempt's answer was handed over.
    func performLogin(conversation: any Conversation, attempts: Int, flight: UInt64) async
        -> SingleFlight.Result
    {
        var trace: ProviderChain.Trace?
        for attempt in 1...max(attempts, 1) {
            if Task.isCancelled { return Traced(.failure(.cancelled), trace: trace) }
            let answer: String
            do throws(AuthError) {
                answer = try await conversation.askUsername(configuration.login.usernamePrompt)
            } catch {
                return Traced(.failure(error), trace: trace)
            }
            if answer.isEmpty { return Traced(.failure(.cancelled), trace: trace) }
            let ended = await check(answer, conversation: conversation, flight: flight)
            trace = ended.trace ?? trace
            guard case .failure(let error) = ended.outcome else { return ended.keeping(trace) }
            do throws(AuthError) {
                if error.code != .cancelled { try await delayRefusal(answeredAt: ended.answeredAt) }
            } catch {
                return Traced(.failure(error), trace: trace, answeredAt: ended.answeredAt)
            }
            switch error.code {
            case .cancelled, .providerUnavailable, .tooManyAttempts, .credentialsExpired, .loginsInFlight:
                return ended.keeping(trace)
            default:
                // A stack that refused without asking the person anything (a device login approved by
                // someone else, a module that refuses outright) has given its answer: another attempt would
                // ask nothing new, and a device login would start over with a new code.
                guard attempt < attempts, ended.askedAnything else { return ended.keeping(trace) }
                await conversation.show(error.description, as: .error)
            }
        }
        preconditionFailure("the loop returns")
    }

    /// Waits out the fail delay of a refused login: ``Configuration/Attempts/failDelay`` times 1 ± up to 25 %,
    /// spread as libpam spreads its delay (the mean of three uniform draws, so most waits are near the
    /// middle). Every refusal waits here — a wrong password, a guess at a current password, and a host's
    /// own refusals (gatekeeperd's of a name the host does not know, or of an account signed in under
    /// another spelling) — so no refusal answers sooner than another.
    ///
    /// The delay is measured from `answeredAt`, when the person's latest answer was handed to the backend
    /// (``Traced/answeredAt``), not from the refusal: a refusal then reaches the person at the same
    /// time whether the backend took a millisecond (a name it does not know) or sixty (a slow hash of a
    /// known account's password), as OpenSSH pads a failed attempt to a minimum time from its start
    /// (`ensure_minimum_time_since`). A backend slower than the delay has its refusal delayed by the whole
    /// delay again, so the clock tells no more than "slower than the delay". Without an answer (nothing was
    /// handed over), the delay runs from now.
    /// - Throws: ``AuthError/cancelled`` when the task is cancelled, which ends the wait at once.
    public func delayRefusal(answeredAt: ContinuousClock.Instant?) async throws(AuthError) {
        guard configuration.attempts.failDelay > .zero else { return }
        var generator = SystemRandomNumberGenerator()
        let mean = (0..<3).reduce(0.0) { sum, _ in sum + Double.random(in: 0..<1, using: &generator) } / 3
        let delay = configuration.attempts.failDelay * (1 + (mean - 0.5) / 2)
        let now = ContinuousClock.now
        var deadline = (answeredAt ?? now) + delay
        if deadline <= now { deadline = now + delay }
        do {
            try await Task.sleep(until: deadline, clock: .continuous)
        } catch {
            throw .cancelled
        }
    }

    /// What one attempt came to: how it ended, when the person's last answer was handed to the backend,
    /// whether the stack asked the person anything, and how a stack decided it.
    struct AttemptEnd {
        var outcome: Result<Identity, AuthError>
        var answeredAt: ContinuousClock.Instant?
        var askedAnything = true
        var trace: ProviderChain.Trace?

        init(_ outcome: Result<Identity, AuthError>) { self.outcome = outcome }

        /// The login's answer, with `trace` (the latest any attempt had).
        func keeping(_ trace: ProviderChain.Trace?) -> SingleFlight.Result {
            Traced(outcome, trace: trace, answeredAt: answeredAt)
        }
    }

    /// One attempt, the one admission path every login takes, in the order it is made: the name,
    /// validated; the account's own spelling from the backend (``AuthProvider/lookUpAccount(_:)``); a login
    /// remembered for that account in this place, if the backend and the lockout still agree; otherwise the
    /// attempt opened in the ledger (``AttemptLedger``: counted when the person's answer reaches the
    /// backend); the stack's answer; the verdict made of it; the ledger settled by it; the audit, written from
    /// the verdict in one place; and for a password found right but expired, its change.
    func check(_ typed: String, conversation: any Conversation, flight: UInt64) async -> AttemptEnd {
        let (username, account, attempt): (String, LockoutAccount, LedgerAttempt)
        do throws(AuthError) {
            username = try Username.validate(typed)
            record(.attempt, unverified: username)
            account = LockoutAccount(username, lookup: await provider.lookUpAccount(username))
            if Task.isCancelled { throw .cancelled }
            if let identity = try await rememberedLogin(of: account) { return AttemptEnd(.success(identity)) }
            attempt = try ledger.open(account)
        } catch {
            return AttemptEnd(.failure(error))
        }
        let answer = await authenticate(username, conversation: conversation, attempt: attempt)
        var end = AttemptEnd(.failure(.cancelled))
        end.answeredAt = attempt.answeredAt
        // The presentation itself may have been refused (the account locked meanwhile, a store that cannot
        // count; the ledger audited it): that is the answer, whatever the backend made of a conversation that
        // failed, and nothing reached the backend to audit.
        if let refusal = attempt.refusal {
            if case .success(let traced) = answer, case .authenticated(let identity) = traced.outcome {
                await provider.signOut(identity)
            }
            end.outcome = .failure(refusal)
            return end
        }
        end.askedAnything = attempt.asked
        let verdict = LoginVerdict(
            answer, account: account, revealsUnknownUsers: configuration.attempts.revealsUnknownUsers)
        end.trace = note(verdict.trace, flight: flight)
        let lockedOut = ledger.settle(attempt, verdict.ledgerAnswer)
        audit(verdict, presented: attempt.presented, lockedOut: lockedOut)
        // An account the answer names that is locked answers as locked, whatever the password was.
        switch (verdict.result, lockedOut) {
        case (.success(let identity), let lockedOut?):
            await provider.signOut(identity)
            end.outcome = .failure(lockedOut)
        case (.failure, let lockedOut?):
            end.outcome = .failure(lockedOut)
        case (.failure(let error), nil):
            end.outcome = .failure(error)
        case (.success(let identity), nil) where !identity.mustChangePassword:
            remember(identity)
            end.outcome = .success(identity)
        case (.success(let identity), nil)
        where !configuration.login.changesExpiredPasswords || !conversation.isInteractive:
            // Nobody here can answer a new password's questions: refused, its own error, uncounted.
            record(.signInFailed, identity.username, .passwordChangeRequired, stackEntry: verdict.trace?.decidingEntry)
            await provider.signOut(identity)
            end.outcome = .failure(.passwordChangeRequired)
        case (.success(let identity), nil):
            let changed = await changeExpiredPassword(of: identity, conversation: conversation, flight: flight)
            end.outcome = changed.outcome
            end.trace = changed.trace ?? end.trace
        }
        return end
    }

    /// The stack's answer to the attempt: every answer the person gives checked, and presented to the
    /// attempt's ledger entry, before the backend sees it.
    func authenticate(_ username: String, conversation: any Conversation, attempt: LedgerAttempt) async
        -> Result<Traced<AuthOutcome>, AuthError>
    {
        let request = AuthRequest(
            username: username,
            conversation: ValidatingConversation(conversation, attempt: attempt),
            origin: configuration.origin,
            // The gatekeeper acts on a password found right but expired (changes it, or refuses the login),
            // so providers admit it marked and a stack decides it as the success it is.
            mayChangeExpiredPassword: true,
            readsGroups: configuration.login.readsGroups
        )
        do throws(AuthError) {
            return .success(try await provider.authenticateWithTrace(request))
        } catch {
            return .failure(error)
        }
    }

    /// Tells the login's flight of `answered`, a stack's trace, at once, and answers it: a caller that stops
    /// waiting before the login ends (Ctrl-C during the fail delay) still hears how the stack decided.
    func note(_ answered: ProviderChain.Trace?, flight: UInt64) -> ProviderChain.Trace? {
        if let answered { core.withLock { $0.login.note(answered, for: flight) } }
        return answered
    }

    /// The audit records of one attempt, from its verdict alone: the stack's decision, then the failure (or
    /// nothing, for a success: ``AuditEvent/Kind/signedIn`` follows when the login lands) and the lockout.
    func audit(_ verdict: LoginVerdict, presented: Bool, lockedOut: AuthError?) {
        let entry = verdict.trace?.decidingEntry
        let (name, known) = verdict.named
        if let trace = verdict.trace {
            record(.stackDecision, name, known: known, detail: trace.description, stackEntry: entry)
        }
        if let lockedOut, case .success = verdict.result {
            record(.signInFailed, name, known: known, lockedOut, stackEntry: entry)
            return
        }
        guard case .failure(let error) = verdict.result else { return }
        switch error.code {
        case .providerUnavailable:
            if presented {
                record(
                    .signInFailed, name, known: known, error,
                    detail: "ended after the answer was given: counted", stackEntry: entry)
            }
            record(.providerUnavailable, unverified: verdict.typed, error)
        case .cancelled where !presented:
            break
        case .cancelled:
            record(
                .signInFailed, name, known: known, error, detail: "ended after the answer was given: counted",
                stackEntry: entry)
        default:
            record(.signInFailed, name, known: known, error, stackEntry: entry)
        }
    }

    /// The ledger every attempt of this gatekeeper goes through, with the lockout policy in force.
    var ledger: AttemptLedger {
        let policy = configuration.attempts.lockout.flatMap { $0.deny > 0 ? $0 : nil }
        return AttemptLedger(
            store: lockout, policy: policy, source: LoginSource(configuration.origin),
            wait: configuration.attempts.lockoutWait
        ) {
            [self] incident in
            switch incident {
            case .lockedOut(let account, let error): record(.lockedOut, account.key, known: account.known, error)
            case .busy(let account):
                record(
                    .signInFailed, account.key, known: account.known, .loginsInFlight,
                    detail: "every slot of the lockout was held by logins still being checked; refused, uncounted")
            case .stateUnavailable(let error, let detail, let account):
                record(.stateUnavailable, account, error, detail: detail)
            }
        }
    }

    /// A login remembered for `account` in this place (the invoking user, the terminal session or parent,
    /// where the input comes from: ``RememberedLogins``), accepted only when the backend still vouches for
    /// the account and the lockout does not refuse it; `nil` when a login must be made.
    func rememberedLogin(of account: LockoutAccount) async throws(AuthError) -> Identity? {
        guard let remembered, let login = remembered.lookup(account.key) else { return nil }
        if let lockedOut = try ledger.lockedOut(account) { throw lockedOut }
        guard
            case .valid(let identity) = await provider.recheck(
                Identity(username: login.username, provider: login.provider)),
            Username.same(identity.username, login.username)
        else { return nil }
        if Task.isCancelled { throw .cancelled }
        record(.cachedLogin, identity.username, detail: "remembered \(login.age.components.seconds) s ago")
        return identity
    }

    func remember(_ identity: Identity) {
        guard let remembered else { return }
        do throws(AuthError) {
            try remembered.remember(identity)
        } catch {
            record(.stateUnavailable, identity.username, error, detail: "the login could not be remembered")
        }
    }

    /// Records an event about `name`: by name when a backend confirmed that it names an account
    /// (`known`), else by its keyed digest only.
    func record(
        _ kind: AuditEvent.Kind,
        _ name: String,
        known: Bool,
        _ reason: AuthError? = nil,
        detail: String? = nil,
        stackEntry: String? = nil
    ) {
        if known {
            record(kind, name, reason, detail: detail, stackEntry: stackEntry)
        } else {
            record(kind, unverified: name, reason, detail: detail)
        }
    }
}
