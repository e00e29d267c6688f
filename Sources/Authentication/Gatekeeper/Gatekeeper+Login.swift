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
        let slot = AttemptSlot()
        self.attempts.withLock { $0[flightID] = slot }
        let task = Task(executorPreference: configuration.taskExecutor) { [self] in
            let result: Result<Identity, AuthError>
            do throws(AuthError) {
                result = .success(try await performLogin(conversation: conversation, attempts: attempts, slot: slot))
            } catch {
                result = .failure(error)
            }
            self.attempts.withLock { $0[flightID] = nil }
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
        withdrawAbandoned(effects)
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
    /// Takes back the attempt of a login just abandoned, before anyone hears that it was cancelled.
    func withdrawAbandoned(_ effects: SingleFlight.Effects) {
        guard let flight = effects.abandonedFlight,
            let ticket = attempts.withLock({ $0.removeValue(forKey: flight) })?.close()
        else { return }
        withdraw((ticket, .open(failures: 0)))
    }

    private func performLogin(conversation: any Conversation, attempts: Int, slot: AttemptSlot) async throws(AuthError)
        -> Identity
    {
        let attempts = max(attempts, 1)
        for attempt in 1...attempts {
            if Task.isCancelled { throw .cancelled }
            let answer = try await conversation.askUsername(configuration.usernamePrompt)
            if answer.isEmpty { throw .cancelled }
            do throws(AuthError) {
                return try await check(answer, conversation: conversation, slot: slot)
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

    /// One attempt, the one admission path every login takes: the name, validated; the account's own
    /// spelling from the backend (``AuthProvider/lookUpAccount(_:)``); a login remembered for that
    /// account in this place, if the backend and the lockout still agree; otherwise the attempt counted
    /// under the lockout's lock *before* the backend checks anything, then the backend's answer, which
    /// clears the count, lets it stand, or takes it back (nothing was checked).
    private func check(_ answer: String, conversation: any Conversation, slot: AttemptSlot) async throws(AuthError)
        -> Identity
    {
        let username = try Username.validate(answer)
        record(.attempt, unverified: username)
        let account = LockoutAccount(username, lookup: await provider.lookUpAccount(username))
        if Task.isCancelled { throw .cancelled }
        if let identity = try await rememberedLogin(of: account) { return identity }
        // A locked-out account is refused before any provider is asked or any password hashed, whatever
        // the password would have been.
        let counted = try beginAttempt(account)
        if let counted, !slot.hold(counted.ticket) {
            // Abandoned meanwhile: nothing is checked.
            withdraw(counted)
            throw .cancelled
        }
        let request = AuthRequest(
            username: username,
            conversation: ValidatingConversation(conversation, slot: slot),
            terminal: configuration.terminal,
            remoteHost: configuration.remoteHost,
            requestingUser: configuration.requestingUser,
            // The gatekeeper acts on a password found right but expired (changes it, or refuses the login),
            // so providers admit it marked and a stack decides it as the success it is.
            mayChangeExpiredPassword: true,
            readsGroups: configuration.readsGroups
        )
        let number = traces.begin()
        let answer: Result<Traced<AuthOutcome>, AuthError>
        do throws(AuthError) {
            answer = .success(try await provider.authenticateWithTrace(request))
        } catch {
            answer = .failure(error)
        }
        // The attempt as it stands now: `nil` when the login was abandoned meanwhile and it was taken back.
        let attempt = slot.take().flatMap { ticket in counted.map { (ticket: ticket, status: $0.status) } }
        let outcome: AuthOutcome
        let trace: ProviderChain.Trace?
        do throws(AuthError) {
            (outcome, trace) = try answer.map { ($0.outcome.normalized, $0.trace) }.get()
            traces.land(trace, number: number)
        } catch {
            // Cancelled, or the conversation failed. Before any answer reached the backend nothing was
            // checked, and the attempt is taken back; after, it stands: the backend may have checked it.
            if slot.wasPresented {
                record(
                    .signInFailed, account.key, known: account.known, error,
                    detail: "ended after the answer was given: counted")
            } else {
                withdraw(attempt)
            }
            throw error
        }
        let entry = trace?.decidingEntry
        switch outcome {
        case .authenticated(let identity):
            if let trace { record(.stackDecision, identity.username, detail: trace.description, stackEntry: entry) }
            if Username.same(identity.username, account.key) && account.known {
                recordSuccess(of: identity.username)
            } else {
                // The backend answered for another spelling (or one no look-up could tell): the attempt
                // counted against the typed name is taken back, and that account decides.
                withdraw(attempt)
                let confirmed = LockoutAccount(identity.username)
                if let lockedOut = try lockoutError(for: confirmed) {
                    await provider.signOut(identity)
                    throw lockedOut
                }
                recordSuccess(of: identity.username)
            }
            guard identity.mustChangePassword else {
                remember(identity)
                return identity
            }
            guard configuration.changesExpiredPasswords && !(conversation is CredentialsConversation) else {
                // Nobody here can answer a new password's questions: refused, its own error, uncounted.
                record(.signInFailed, identity.username, .passwordChangeRequired, stackEntry: entry)
                await provider.signOut(identity)
                throw .passwordChangeRequired
            }
            return try await changeExpiredPassword(of: identity, conversation: conversation)
        case .rejected(let rejection, let canonical)
        where rejection.followsTheRightCredential && trace?.refusedCredential != true:
            // The right password, expired or for an account not activated yet (a backend says so only once
            // it has checked it), and no entry of the stack refused a credential: no failed guess to count.
            withdraw(attempt)
            let name = canonical ?? account.key
            let known = account.known || canonical != nil
            if let trace { record(.stackDecision, name, known: known, detail: trace.description, stackEntry: entry) }
            record(.signInFailed, name, known: known, rejection.error, stackEntry: entry)
            throw rejection.error
        case .rejected(let rejection, let canonical):
            var status = attempt?.status
            var known = account.known
            if let canonical, canonical != account.key {
                // Counted against the backend's spelling, and a locked account answers as locked whatever
                // the password: the same as the right password would have. A name no look-up recognised
                // keeps its count too, so a backend that matches spellings it could not name beforehand
                // still gets no more than `deny` guesses for them.
                if account.known { withdraw(attempt) }
                let confirmed = LockoutAccount(canonical)
                known = true
                if let lockedOut = try lockoutError(for: confirmed) { throw lockedOut }
                status = recordFailure(of: confirmed)
            }
            let name = canonical ?? account.key
            if let trace { record(.stackDecision, name, known: known, detail: trace.description, stackEntry: entry) }
            failed(name, known: known, rejection.error, status: status, stackEntry: entry)
            throw rejection.error
        case .notMine:
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            failed(account.key, known: false, .userNotFound, status: attempt?.status, stackEntry: entry)
            throw configuration.revealsUnknownUsers ? .userNotFound : .invalidCredentials
        case .unavailable(let reason):
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            if trace?.refusedCredential == true {
                // An entry refused the credential before another one, down, became the stack's answer: that
                // entry checked it, and the trace tells right from wrong, so it is a failed guess, counted.
                record(
                    .signInFailed, account.key, known: account.known, .providerUnavailable(reason: reason),
                    detail: "an entry of the stack refused the credential: counted")
                if let status = attempt?.status, status.isLocked {
                    _ = lockedOut(status, account.key, known: account.known)
                }
            } else {
                withdraw(attempt)
            }
            record(.providerUnavailable, unverified: username, .providerUnavailable(reason: reason))
            throw .providerUnavailable(reason: reason)
        case .failed(let code, let reason):
            // A system, conversation or credential error: the login fails. Not a wrong password, so the
            // attempt is taken back, unless an answer had reached the backend, which may have checked it.
            if slot.wasPresented {
                record(
                    .signInFailed, account.key, known: account.known, .providerUnavailable(reason: reason),
                    detail: "the backend answered \(code.rawValue) after the answer was given: counted")
            } else {
                withdraw(attempt)
            }
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            record(.providerUnavailable, unverified: username, .providerUnavailable(reason: reason))
            throw .providerUnavailable(reason: reason)
        case .ignored:
            // Nothing applied to this login: as PAM's stack of only ignored modules, it fails.
            if let trace { record(.stackDecision, unverified: username, detail: trace.description) }
            failed(account.key, known: false, .refusedByPolicy, status: attempt?.status, stackEntry: entry)
            throw .refusedByPolicy
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
        let identity = try await authorize(.signedIn, conversation: conversation)
        let account = LockoutAccount(identity.username)
        let counted: (ticket: LockoutTicket, status: LockoutStatus)?
        do throws(AuthError) {
            counted = try beginAttempt(account)
        } catch {
            record(.passwordChangeFailed, identity.username, error)
            throw error
        }
        let outcome: PasswordChangeOutcome
        let trace: ProviderChain.Trace?
        do throws(AuthError) {
            // Every answer checked as a login's are, so providers may rely on it here too.
            (outcome, trace) = try await tracing { () async throws(AuthError) in
                try await provider.changePasswordWithTrace(
                    of: identity.username, conversation: ValidatingConversation(conversation),
                    terminal: configuration.terminal, remoteHost: configuration.remoteHost,
                    requestingUser: configuration.requestingUser)
            }
        } catch {
            withdraw(counted)
            record(.passwordChangeFailed, identity.username, error)
            throw error
        }
        // Only a wrong current password was a guess — the stack's answer, or an entry's whose refusal another
        // entry's answer decided over; anything else takes the attempt back.
        let guessed = outcome == .rejected(.wrongCurrentPassword) || trace?.refusedCredential == true
        if !guessed { withdraw(counted) }
        if let error = outcome.error {
            record(.passwordChangeFailed, identity.username, error)
            if guessed {
                if let status = counted?.status, status.isLocked {
                    _ = lockedOut(status, identity.username, known: true)
                }
                try await waitAfterFailure()
            }
            throw error
        }
        record(.passwordChanged, identity.username)
    }

    /// The change an expired password needs before the login admits anyone, once the whole stack has
    /// admitted the person (as `login` calls `pam_chauthtok` after `pam_authenticate` and `pam_acct_mgmt`):
    /// through the stack, each entry changing only a password of its own that has expired
    /// (`expiredOnly`). Refused or cancelled, the login is not admitted and whatever the backend holds
    /// for the identity is let go; the password that was right was no failed guess.
    private func changeExpiredPassword(of identity: Identity, conversation: any Conversation) async throws(AuthError)
        -> Identity
    {
        await conversation.show(PasswordPrompt.expiredNotice, as: .info)
        await conversation.show("Changing password for \(identity.username).", as: .info)
        let outcome: PasswordChangeOutcome
        do throws(AuthError) {
            (outcome, _) = try await tracing { () async throws(AuthError) in
                try await provider.changePasswordWithTrace(
                    of: identity.username, conversation: ValidatingConversation(conversation), expiredOnly: true,
                    terminal: configuration.terminal, remoteHost: configuration.remoteHost,
                    requestingUser: configuration.requestingUser)
            }
        } catch {
            record(.passwordChangeFailed, identity.username, error)
            await provider.signOut(identity)
            throw error
        }
        if let error = outcome.error {
            record(.passwordChangeFailed, identity.username, error)
            await provider.signOut(identity)
            throw error
        }
        record(.passwordChanged, identity.username, detail: "the password had expired; changed at the login")
        var admitted = identity
        admitted.mustChangePassword = false
        remember(admitted)
        return admitted
    }

    /// Runs a password change, keeping its trace as the latest (``latestTrace``).
    private func tracing(
        _ change: () async throws(AuthError) -> Traced<PasswordChangeOutcome>
    ) async throws(AuthError) -> (PasswordChangeOutcome, ProviderChain.Trace?) {
        let number = traces.begin()
        let answer = try await change()
        traces.land(answer.trace, number: number)
        return (answer.outcome, answer.trace)
    }

    /// The lockout policy in force, if any.
    private var activePolicy: LockoutPolicy? {
        guard let policy = configuration.lockout, policy.deny > 0 else { return nil }
        return policy
    }

    private var source: LoginSource {
        LoginSource(
            remoteHost: configuration.remoteHost, terminal: configuration.terminal, service: configuration.service)
    }

    /// A login remembered for `account` in this place (the invoking user, the terminal session or parent,
    /// where the input comes from: ``RememberedLogins``), accepted only when the backend still vouches for
    /// the account and the lockout does not refuse it; `nil` when a login must be made.
    private func rememberedLogin(of account: LockoutAccount) async throws(AuthError) -> Identity? {
        guard let remembered, let login = remembered.lookup(account.key) else { return nil }
        if let lockedOut = try lockoutError(for: account) { throw lockedOut }
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

    /// Counts the attempt before anything is checked. A locked-out account is refused here; a store that
    /// cannot record the attempt refuses the login (fails closed).
    private func beginAttempt(_ account: LockoutAccount) throws(AuthError) -> (
        ticket: LockoutTicket, status: LockoutStatus
    )? {
        guard let policy = activePolicy else { return nil }
        let attempt: LockoutAttempt
        do throws(AuthError) {
            attempt = try lockout.beginAttempt(account, source: source, policy: policy)
        } catch {
            record(.stateUnavailable, nil, error, detail: "the attempt could not be counted; the login is refused")
            throw error
        }
        switch attempt {
        case .refused(let status):
            throw lockedOut(status, account.key, known: account.known)
        case .counted(let ticket, let status):
            return (ticket, status)
        }
    }

    private func withdraw(_ attempt: (ticket: LockoutTicket, status: LockoutStatus)?) {
        guard let attempt else { return }
        do throws(AuthError) {
            try lockout.withdraw(attempt.ticket)
        } catch {
            // The attempt stays counted as a failure: never an unlock.
            record(.stateUnavailable, nil, error, detail: "an attempt that was not checked could not be taken back")
        }
    }

    private static func lockoutError(_ status: LockoutStatus) -> AuthError {
        guard case .locked(_, let remaining) = status else { return .lockedUntilUnlocked }
        return remaining.map { AuthError.tooManyAttempts(retryAfter: $0) } ?? .lockedUntilUnlocked
    }

    /// The error for an account that is locked out now (recorded in the audit), or `nil`. A store that
    /// cannot tell fails closed: its error refuses the login.
    private func lockoutError(for account: LockoutAccount) throws(AuthError) -> AuthError? {
        guard let policy = activePolicy else { return nil }
        let status: LockoutStatus
        do throws(AuthError) {
            status = try lockout.status(of: account, policy: policy)
        } catch {
            record(.stateUnavailable, nil, error)
            throw error
        }
        guard status.isLocked else { return nil }
        return lockedOut(status, account.key, known: account.known)
    }

    /// The error for a locked-out account, recorded in the audit.
    private func lockedOut(_ status: LockoutStatus, _ account: String, known: Bool) -> AuthError {
        let error = Self.lockoutError(status)
        record(.lockedOut, account, known: known, error)
        return error
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

    /// Counts a failure after the fact, against the spelling the backend answered for; `nil` when it could
    /// not be counted (audited).
    private func recordFailure(of account: LockoutAccount) -> LockoutStatus? {
        guard let policy = activePolicy else { return nil }
        do throws(AuthError) {
            return try lockout.recordFailure(of: account, source: source, policy: policy)
        } catch {
            record(.stateUnavailable, nil, error, detail: "a failed login could not be counted")
            return nil
        }
    }

    /// Audits a failed attempt, and the lockout it brought about.
    private func failed(
        _ account: String, known: Bool, _ reason: AuthError, status: LockoutStatus?, stackEntry: String?
    ) {
        record(.signInFailed, account, known: known, reason, stackEntry: stackEntry)
        guard let status, status.isLocked else { return }
        _ = lockedOut(status, account, known: known)
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

/// The attempt one login in flight has counted, until the login ends or is abandoned, and whether the
/// person's answer (a password, a code) has reached the backend: from then on the backend may have checked
/// it — a PAM module that waits two seconds after a wrong password has told the answer by not answering —
/// so a cancellation no longer takes the attempt back.
final class AttemptSlot: Sendable {
    private let state = Locked<(ticket: LockoutTicket?, closed: Bool, presented: Bool)>((nil, false, false))

    /// Holds `ticket`; `false` when the login was abandoned already.
    func hold(_ ticket: LockoutTicket) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.ticket = ticket
            return true
        }
    }

    /// An answer was handed to the backend.
    func present() {
        state.withLock { $0.presented = true }
    }

    /// Whether an answer was handed to the backend.
    var wasPresented: Bool { state.withLock { $0.presented } }

    /// The ticket held, for the login to settle; `nil` once taken back.
    func take() -> LockoutTicket? {
        state.withLock { state in
            defer { state.ticket = nil }
            return state.ticket
        }
    }

    /// The login was abandoned: the ticket to take back — none once an answer reached the backend (the
    /// attempt then stands, and the login settles it when the backend answers).
    func close() -> LockoutTicket? {
        state.withLock { state in
            state.closed = true
            guard !state.presented else { return nil }
            defer { state.ticket = nil }
            return state.ticket
        }
    }
}

/// Checks every password the provider asks for before the provider sees it, and notes in `slot` when an
/// answer reaches the provider.
struct ValidatingConversation: Conversation {
    let base: any Conversation
    let slot: AttemptSlot?

    init(_ base: any Conversation, slot: AttemptSlot? = nil) {
        self.base = base
        self.slot = slot
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        let answer = try await base.ask(prompt)
        slot?.present()
        return answer
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        try Credentials.validatePassword(secret)
        slot?.present()
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }
}
