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
        Task(executorPreference: configuration.taskExecutor) { [provider] in await provider.signOut(expired) }
    }

    /// Signs in through `conversation`, or joins the login already in progress when `joinExisting` is set.
    /// An explicit sign-in (`joinExisting == false`) waits for a login in progress to end, then starts its own.
    /// The answer carries the trace of the login's last attempt through a stack.
    func login(conversation: any Conversation, attempts: Int, joinExisting: Bool) async -> SingleFlight.Result {
        while true {
            if Task.isCancelled { return SingleFlight.cancelled }
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
            case .signedInMeanwhile(let identity): return Traced(.success(identity))
            case .wait(let waiter, let flight, let behind): (waiterID, startedFlight, queued) = (waiter, flight, behind)
            }
            if let flightID = startedFlight {
                start(flightID, conversation: conversation, attempts: attempts)
            }
            let result = await wait(waiterID)
            if queued {
                if Task.isCancelled { return SingleFlight.cancelled }
                continue
            }
            return result
        }
    }

    /// What a caller of ``login(conversation:attempts:joinExisting:)`` does next.
    private enum LoginStep {
        case signedInMeanwhile(Identity)
        /// Wait as `waiterID` (having started flight `started`, if set); `queued`: behind another login.
        case wait(UInt64, started: UInt64?, queued: Bool)
    }

    private func start(_ flightID: UInt64, conversation: any Conversation, attempts: Int) {
        let task = Task(executorPreference: configuration.taskExecutor) { [self] in
            await finish(
                flightID, with: await performLogin(conversation: conversation, attempts: attempts, flight: flightID))
        }
        // The login may have been abandoned before its task was known; then cancel the task here.
        let attached = core.withLock { $0.login.attach(task, to: flightID) }
        if !attached { task.cancel() }
    }

    /// Waits for the result of a login. Returns `cancelled` at once when this task is cancelled, even if
    /// the login itself is still blocked in the provider.
    private func wait(_ waiterID: UInt64) async -> SingleFlight.Result {
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
    private func finish(_ flightID: UInt64, with answer: SingleFlight.Result) async {
        let admitted = answer.outcome
        var result = admitted
        // A gatekeeper that requires its audit trail writes the success before the session opens — for a
        // login nobody waits for any more too — and refuses one that no destination kept.
        var recorded = false
        if configuration.requiresAudit, case .success(let identity) = admitted {
            recorded = audit.keep(event(.signedIn, identity.username))
            if !recorded {
                await provider.signOut(identity)
                result = .failure(
                    .providerUnavailable(
                        reason: "the audit trail cannot record this login, and the configuration requires it"))
            }
        }
        let now = clock.now()
        let (outcome, effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core -> (current: Bool, replaced: Identity?) in
                guard
                    core.login.land(flightID, with: Traced(result, trace: answer.trace, answeredAt: answer.answeredAt))
                else { return (false, nil) }
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
        case (true, .success(let identity)) where !recorded: record(.signedIn, identity.username)
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

    /// The interactive login: user name, then the provider's questions, up to `attempts` times, each
    /// attempt its own in the ledger (a re-asked prompt presents nothing until it is answered). An empty
    /// user name means the person changed their mind: ``AuthError/cancelled``. The answer carries the
    /// trace of the latest attempt a stack answered (or of the change of an expired password that followed
    /// it), and when the last attempt's answer was handed over.
    private func performLogin(conversation: any Conversation, attempts: Int, flight: UInt64) async
        -> SingleFlight.Result
    {
        var trace: ProviderChain.Trace?
        for attempt in 1...max(attempts, 1) {
            if Task.isCancelled { return Traced(.failure(.cancelled), trace: trace) }
            let answer: String
            do throws(AuthError) {
                answer = try await conversation.askUsername(configuration.usernamePrompt)
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

    /// Waits out the fail delay of a refused login: ``Configuration/failDelay`` times 1 ± up to 25 %,
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
        guard configuration.failDelay > .zero else { return }
        var generator = SystemRandomNumberGenerator()
        let mean = (0..<3).reduce(0.0) { sum, _ in sum + Double.random(in: 0..<1, using: &generator) } / 3
        let delay = configuration.failDelay * (1 + (mean - 0.5) / 2)
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
    private struct AttemptEnd {
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
    private func check(_ typed: String, conversation: any Conversation, flight: UInt64) async -> AttemptEnd {
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
        let verdict = LoginVerdict(answer, account: account, revealsUnknownUsers: configuration.revealsUnknownUsers)
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
        case (.success(let identity), nil) where !configuration.changesExpiredPasswords || !conversation.isInteractive:
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
    private func authenticate(_ username: String, conversation: any Conversation, attempt: LedgerAttempt) async
        -> Result<Traced<AuthOutcome>, AuthError>
    {
        let request = AuthRequest(
            username: username,
            conversation: ValidatingConversation(conversation, attempt: attempt),
            terminal: configuration.terminal,
            remoteHost: configuration.remoteHost,
            requestingUser: configuration.requestingUser,
            // The gatekeeper acts on a password found right but expired (changes it, or refuses the login),
            // so providers admit it marked and a stack decides it as the success it is.
            mayChangeExpiredPassword: true,
            readsGroups: configuration.readsGroups
        )
        do throws(AuthError) {
            return .success(try await provider.authenticateWithTrace(request))
        } catch {
            return .failure(error)
        }
    }

    /// Tells the login's flight of `answered`, a stack's trace, at once, and answers it: a caller that stops
    /// waiting before the login ends (Ctrl-C during the fail delay) still hears how the stack decided.
    private func note(_ answered: ProviderChain.Trace?, flight: UInt64) -> ProviderChain.Trace? {
        if let answered { core.withLock { $0.login.note(answered, for: flight) } }
        return answered
    }

    /// Whether a password change's answer makes its current password a failed guess: a wrong current
    /// password is one — the stack's answer, or an entry's whose refusal another entry's answer decided over.
    private static func refusedCurrentPassword(_ outcome: PasswordChangeOutcome, _ trace: ProviderChain.Trace?) -> Bool
    {
        outcome == .rejected(.wrongCurrentPassword) || trace?.refusedCredential == true
    }

    /// The audit records of one attempt, from its verdict alone: the stack's decision, then the failure (or
    /// nothing, for a success: ``AuditEvent/Kind/signedIn`` follows when the login lands) and the lockout.
    private func audit(_ verdict: LoginVerdict, presented: Bool, lockedOut: AuthError?) {
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

    /// Changes the password of the signed-in person (signing in first, through `conversation`, when
    /// nobody is), through the provider (a stack: through every entry that keeps passwords, with PAM's
    /// two passes: ``AuthProvider/changePassword(of:conversation:expiredOnly:terminal:remoteHost:requestingUser:)``).
    /// A wrong current password is a failed guess like a wrong password at a login: counted against the
    /// account before the provider checks it, under the same lockout (a locked-out account changes
    /// nothing), and followed by the fail delay. The session goes on; the change is audited
    /// (``AuditEvent/Kind/passwordChanged``, or ``AuditEvent/Kind/passwordChangeFailed`` with the reason).
    /// - Throws: ``AuthError/passwordNotChanged(reason:)`` with the backend's reason, ``AuthError/cancelled``
    ///   (the old password stays), ``AuthError/tooManyAttempts(retryAfter:)``,
    ///   ``AuthError/providerUnavailable(reason:)``, or a login error.
    public func changePassword(conversation: any Conversation) async throws(AuthError) {
        try await changePasswordWithTrace(conversation: conversation).outcome.get()
    }

    /// ``changePassword(conversation:)``, answered with how the stack decided it: the trace of the change, or
    /// of the login before it when the change never began (`nil` when no stack answered).
    public func changePasswordWithTrace(conversation: any Conversation) async -> Traced<Result<Void, AuthError>> {
        let login = await authorizeWithTrace(.signedIn, conversation: conversation)
        let identity: Identity
        switch login.outcome {
        case .success(let admitted): identity = admitted
        case .failure(let error): return Traced(.failure(error), trace: login.trace)
        }
        var trace = login.trace
        do throws(AuthError) {
            try await changePassword(of: LockoutAccount(identity.username), conversation: conversation, trace: &trace)
            return Traced(.success(()), trace: trace)
        } catch {
            return Traced(.failure(error), trace: trace)
        }
    }

    /// Changes `username`'s password as `passwd` does through PAM's `pam_chauthtok`, with no login before
    /// it: the stack's preliminary pass asks for the current password and checks it — a guess counted as a
    /// login's is, under the same lockout, and followed by the fail delay — then its update pass asks for
    /// the new one. For a service that answers a program's `pam_chauthtok` (gatekeeperd), the program
    /// having decided who may change what; audited as ``changePassword(conversation:)`` is.
    public func changePasswordWithTrace(of username: String, conversation: any Conversation) async
        -> Traced<Result<Void, AuthError>>
    {
        let name: String
        do throws(AuthError) {
            name = try Username.validate(username)
        } catch {
            return Traced(.failure(error))
        }
        let lookup = await provider.lookUpAccount(name)
        if lookup == .unknown {
            record(.passwordChangeFailed, unverified: name, .userNotFound)
            return Traced(.failure(.userNotFound))
        }
        var trace: ProviderChain.Trace?
        do throws(AuthError) {
            try await changePassword(
                of: LockoutAccount(name, lookup: lookup), conversation: conversation, trace: &trace)
            return Traced(.success(()), trace: trace)
        } catch {
            return Traced(.failure(error), trace: trace)
        }
    }

    /// The change of ``changePasswordWithTrace(conversation:)`` once the account is known; `trace` to the
    /// stack's answer, when a stack answered.
    private func changePassword(
        of account: LockoutAccount, conversation: any Conversation, trace: inout ProviderChain.Trace?
    )
        async throws(AuthError)
    {
        // An account no backend recognised is never named in a record (it may be a password typed as a name).
        let username = account.known ? account.key : nil
        let attempt: LedgerAttempt
        do throws(AuthError) {
            attempt = try ledger.open(account)
        } catch {
            record(.passwordChangeFailed, username, error)
            throw error
        }
        let outcome: PasswordChangeOutcome
        let changeTrace: ProviderChain.Trace?
        let preliminaryPassed: Bool
        do throws(AuthError) {
            // Every answer checked as a login's are, so providers may rely on it here too; the first one handed
            // over (the current password) is presented to the ledger.
            let passes = try await provider.changePasswordInTwoPasses(
                of: account.key, conversation: ValidatingConversation(conversation, attempt: attempt),
                terminal: configuration.terminal, remoteHost: configuration.remoteHost,
                requestingUser: configuration.requestingUser)
            (outcome, changeTrace, preliminaryPassed) = (
                passes.answer.outcome, passes.answer.trace, passes.preliminaryPassed
            )
            if let changeTrace { trace = changeTrace }
        } catch {
            // Cancelled, killed, or the conversation failed: once the current password was handed over the count
            // stands (the backend may have checked it, and the clock may tell), before it nothing was counted.
            let error = attempt.refusal ?? error
            _ = ledger.settle(attempt, LedgerAnswer(.unanswered))
            record(
                .passwordChangeFailed, username, error,
                detail: attempt.presented ? "ended after the current password was given: counted" : nil)
            throw error
        }
        if let refusal = attempt.refusal {
            record(.passwordChangeFailed, username, refusal)
            throw refusal
        }
        // Only an answer that proves the current password right takes the count back: the update pass ran,
        // which it does only once every entry's preliminary check accepted the current password. A wrong
        // current password is a guess, and so is any other end once it was handed over (unavailable, failed,
        // a policy).
        let guessed = Self.refusedCurrentPassword(outcome, changeTrace)
        _ = ledger.settle(attempt, LedgerAnswer(preliminaryPassed && !guessed ? .rightCredential : .refused))
        if let error = outcome.error {
            record(.passwordChangeFailed, username, error)
            if guessed { try await delayRefusal(answeredAt: attempt.answeredAt) }
            throw error
        }
        record(.passwordChanged, username)
    }

    /// The change an expired password needs before the login admits anyone, once the whole stack has
    /// admitted the person (as `login` calls `pam_chauthtok` after `pam_authenticate` and `pam_acct_mgmt`):
    /// through the stack, each entry changing only a password of its own that has expired
    /// (`expiredOnly`). Refused or cancelled, the login is not admitted and whatever the backend holds
    /// for the identity is let go. The password was just found right, so nothing here is a guess but a
    /// current password an entry asks again and refuses, which the ledger counts as a failure already
    /// checked (``AttemptLedger/chargeChecked(_:)``): the change is no new attempt, which would hold a slot of
    /// the lockout, or refuse the person whose right password was just accepted. The answer carries the
    /// change's trace, when a stack answered it.
    private func changeExpiredPassword(of identity: Identity, conversation: any Conversation, flight: UInt64) async
        -> Traced<Result<Identity, AuthError>>
    {
        await conversation.show(PasswordPrompt.expiredNotice, as: .info)
        await conversation.show("Changing password for \(identity.username).", as: .info)
        let answer: Traced<PasswordChangeOutcome>
        do throws(AuthError) {
            answer = try await provider.changePasswordWithTrace(
                of: identity.username, conversation: ValidatingConversation(conversation), expiredOnly: true,
                terminal: configuration.terminal, remoteHost: configuration.remoteHost,
                requestingUser: configuration.requestingUser)
        } catch {
            record(.passwordChangeFailed, identity.username, error)
            await provider.signOut(identity)
            return Traced(.failure(error))
        }
        let trace = note(answer.trace, flight: flight)
        if let error = answer.outcome.error {
            if Self.refusedCurrentPassword(answer.outcome, trace) {
                try? ledger.chargeChecked(LockoutAccount(identity.username))
            }
            record(.passwordChangeFailed, identity.username, error)
            await provider.signOut(identity)
            return Traced(.failure(error), trace: trace)
        }
        record(.passwordChanged, identity.username, detail: "the password had expired; changed at the login")
        var admitted = identity
        admitted.mustChangePassword = false
        remember(admitted)
        return Traced(.success(admitted), trace: trace)
    }

    /// The ledger every attempt of this gatekeeper goes through, with the lockout policy in force.
    var ledger: AttemptLedger {
        let policy = configuration.lockout.flatMap { $0.deny > 0 ? $0 : nil }
        let source = LoginSource(
            remoteHost: configuration.remoteHost, terminal: configuration.terminal, service: configuration.service)
        return AttemptLedger(store: lockout, policy: policy, source: source, wait: configuration.lockoutWait) {
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
    private func rememberedLogin(of account: LockoutAccount) async throws(AuthError) -> Identity? {
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

    private func remember(_ identity: Identity) {
        guard let remembered else { return }
        do throws(AuthError) {
            try remembered.remember(identity)
        } catch {
            record(.stateUnavailable, identity.username, error, detail: "the login could not be remembered")
        }
    }

    /// Records an event about `name`: by name when a backend confirmed that it names an account
    /// (`known`), else by its keyed digest only.
    private func record(
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

/// Checks every password the provider asks for before the provider sees it, and presents each answer to
/// the attempt's ledger entry (``LedgerAttempt/present()``) before handing it over.
struct ValidatingConversation: Conversation {
    let base: any Conversation
    let attempt: LedgerAttempt?

    init(_ base: any Conversation, attempt: LedgerAttempt? = nil) {
        self.base = base
        self.attempt = attempt
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        attempt?.asking()
        let answer = try await base.ask(prompt)
        try await attempt?.present()
        return answer
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        attempt?.asking()
        let secret = try await base.askSecret(prompt)
        try Credentials.validatePassword(secret)
        try await attempt?.present()
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }

    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }

    /// Not a presentation: nothing the person types here reaches a backend.
    func pause(_ prompt: String) async throws(AuthError) {
        try await base.pause(prompt)
    }
}
