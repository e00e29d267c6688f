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
    enum LoginStep {
        case signedInMeanwhile(Identity)
        /// Wait as `waiterID` (having started flight `started`, if set); `queued`: behind another login.
        case wait(UInt64, started: UInt64?, queued: Bool)
    }

    func start(_ flightID: UInt64, conversation: any Conversation, attempts: Int) {
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
    func wait(_ waiterID: UInt64) async -> SingleFlight.Result {
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
    func leave(_ waiterID: UInt64) {
        let now = clock.now()
        let ((), effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core in core.login.leave(waiterID) }
        }
        effects.deliver()
        if effects.abandoned { record(.signInCancelled, nil) }
    }

    /// A login's task ended. Its result counts only if the login is still the current one.
    func finish(_ flightID: UInt64, with answer: SingleFlight.Result) async {
        let admitted = answer.outcome
        var result = admitted
        // A gatekeeper that requires its audit trail writes the success before the session opens — for a
        // login nobody waits for any more too — and refuses one that no destination kept.
        var recorded = false
        if configuration.login.requiresAudit, case .success(let identity) = admitted {
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
}
