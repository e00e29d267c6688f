import GatekeeperSupport

/// The one place that decides when a guess is counted, and against whom: every login, every password
/// change, every re-asked prompt and every remembered login of a ``Gatekeeper`` goes through it.
///
/// The rule (docs/host-protection.md holds it as a table):
/// - A credential is *presented* when the person's answer is handed to a backend; showing a prompt is not
///   a presentation. Nothing that happens before it counts anything.
/// - At the presentation the attempt is counted against the account the typed name was counted under,
///   under the lockout's lock, together with the check that the account is not locked: however many
///   guesses arrive at once, from any number of processes, at most `deny` are handed over. A locked account
///   is refused there, and the answer never reaches the backend. When the `deny` counts are full but some
///   are attempts this process is still checking, the attempt waits (``LockoutAttempt/waiting(_:)``) until
///   they settle, for at most the gatekeeper's ``Gatekeeper/Configuration/Attempts/lockoutWait``: none of them may be a failure, so many right
///   passwords at once are each admitted, and the tally is what it would be one after another.
/// - Once presented, the count stands whatever follows — a refusal, "unavailable", a time-out, a crash, a
///   cancel or a kill: the backend may have checked the answer, and the clock may tell right from wrong —
///   unless the answer proves the credential right: the stack admits, or finds the password right but
///   expired (or the account not yet activated) with no entry refusing it.
/// - Each entry that refused the credential counts it against its own account, as that entry spells it
///   (``ProviderChain/Trace/refusals``), so a guess is never moved from one account to another.
/// - A success clears the account it admitted; an account the answer names that is locked is answered as
///   locked, whatever the password was (no oracle).
///
/// A cancel and a kill leave the same count: the count is written at the presentation and taken back only
/// by an answer that proves the credential right, so a process that dies early never leaves less counted
/// than the rule says, nor more.
struct AttemptLedger: Sendable {
    /// Something about the tallies the audit records.
    enum Incident {
        /// `account` is locked: the login is answered with `error`.
        case lockedOut(LockoutAccount, AuthError)
        /// Every slot of `account` was held by attempts still being checked for the ledger's `wait`: the login is
        /// refused (``AuthError/loginsInFlight``), nothing counted.
        case busy(LockoutAccount)
        /// The store failed; `detail` says what could not be done.
        case stateUnavailable(AuthError, detail: String, account: String?)
    }

    let store: any LockoutStore
    /// `nil`: nothing is counted.
    let policy: LockoutPolicy?
    let source: LoginSource
    /// How long an attempt waits for a slot held by attempts still being checked.
    let wait: Duration
    let report: @Sendable (Incident) -> Void

    /// What a presentation's count came to.
    enum Charge {
        /// Nothing is counted: no lockout.
        case uncounted
        case counted(ticket: LockoutTicket, status: LockoutStatus)
        /// Every slot is held, some by attempts still being checked: ask again once one settles.
        case waiting
    }

    /// The error a login is answered with when `account` is locked out now, or `nil`; a store that cannot
    /// tell fails closed and refuses the login. Asked before anything is asked or presented.
    func lockedOut(_ account: LockoutAccount) throws(AuthError) -> AuthError? {
        guard let policy else { return nil }
        let status: LockoutStatus
        do throws(AuthError) {
            status = try store.status(of: account, policy: policy)
        } catch {
            report(
                .stateUnavailable(error, detail: "the lockout could not be read; the login is refused", account: nil))
            throw error
        }
        return status.isLocked ? refuse(account, status) : nil
    }

    /// Opens an attempt for `account`: a locked account is refused here, before anything is asked.
    func open(_ account: LockoutAccount) throws(AuthError) -> LedgerAttempt {
        if let error = try lockedOut(account) { throw error }
        return LedgerAttempt(account, ledger: self)
    }

    /// Counts a failure against `account` unless it is locked, under its lock; the error to answer when it
    /// is locked. A store that cannot count fails closed.
    func charge(_ account: LockoutAccount) throws(AuthError) -> Charge {
        guard let policy else { return .uncounted }
        let attempt: LockoutAttempt
        do throws(AuthError) {
            attempt = try store.beginAttempt(account, source: source, policy: policy)
        } catch {
            report(
                .stateUnavailable(error, detail: "the attempt could not be counted; the login is refused", account: nil)
            )
            throw error
        }
        switch attempt {
        case .refused(let status): throw refuse(account, status)
        case .counted(let ticket, let status): return .counted(ticket: ticket, status: status)
        case .waiting: return .waiting
        }
    }

    /// Counts a failure of a credential already checked — an entry's refusal of another `account` than the
    /// presentation's, a current password refused during a change: it never waits and never holds a slot.
    /// The error to answer when the account is locked.
    func chargeChecked(_ account: LockoutAccount) throws(AuthError) {
        switch try charge(account) {
        case .uncounted: return
        case .counted(let ticket, _): store.settled(ticket)
        case .waiting:
            do throws(AuthError) {
                _ = try store.recordFailure(of: account, source: source, policy: policy!)
            } catch {
                report(
                    .stateUnavailable(
                        error, detail: "the failure could not be counted; the login is refused", account: nil))
                throw error
            }
        }
    }

    /// Takes back a count the answer proved was no failed guess. One that cannot be taken back stands:
    /// never an unlock.
    func withdraw(_ ticket: LockoutTicket) {
        do throws(AuthError) {
            try store.withdraw(ticket)
        } catch {
            report(.stateUnavailable(error, detail: "a right credential's count could not be taken back", account: nil))
        }
    }

    /// A success: `account`'s count starts again; `ticket`, the success's own count, goes with it.
    func clear(_ account: String, settling ticket: LockoutTicket? = nil) {
        guard policy != nil else { return }
        do throws(AuthError) {
            try store.recordSuccess(of: account, settling: ticket)
        } catch {
            report(
                .stateUnavailable(error, detail: "the count of failed logins could not be reset", account: account))
        }
    }

    private func refuse(_ account: LockoutAccount, _ status: LockoutStatus) -> AuthError {
        let error: AuthError =
            if case .locked(_, let remaining?) = status { .tooManyAttempts(retryAfter: remaining) } else {
                .lockedUntilUnlocked
            }
        report(.lockedOut(account, error))
        return error
    }

    /// Settles a login attempt by its answer: what the rule does to every account it names. Returns the
    /// error to answer instead when an account the answer names is locked — whatever the password was, so a
    /// locked account tells nothing through another entry's spelling of it.
    func settle(_ attempt: LedgerAttempt, _ answer: LedgerAnswer) -> AuthError? {
        let counted = attempt.counted
        var released = false
        // However it ends, its count no longer holds a slot anyone waits for.
        defer { if let counted, !released { store.settled(counted.ticket) } }
        let typed = attempt.account
        /// Whether an entry's account is the one the typed name was counted against (the same spelling: a name
        /// no look-up recognised is counted where the presentation counted it, and never twice).
        func isTyped(_ name: String?) -> Bool { name.map { Username.same($0, typed.key) } ?? true }
        let admitted: String? = if case .admitted(let name) = answer.end { name } else { nil }
        var lockedOut: AuthError?
        var seen: Set<String> = []
        // One failure for each account an entry refused the credential for (once each), unless it is locked.
        if attempt.presented {
            for case let refused? in answer.refusals where !isTyped(refused) && refused != admitted {
                guard seen.insert(refused).inserted else { continue }
                do throws(AuthError) {
                    try chargeChecked(LockoutAccount(refused))
                } catch {
                    lockedOut = lockedOut ?? error
                }
            }
        }
        if case .admitted(let name) = answer.end {
            if !isTyped(name) {
                // The backend answered for another account: the count against the typed name is taken back
                // unless an entry refused the credential for it, and that account decides.
                if let counted, !answer.refusals.contains(where: isTyped) {
                    withdraw(counted.ticket)
                    released = true
                }
                do throws(AuthError) {
                    if let error = try self.lockedOut(LockoutAccount(name)) { return error }
                } catch {
                    return error
                }
            }
            // The store's success clears the account's file and its count among names no look-up knows, where
            // a typed name that none recognised was counted. This attempt's check is over: its own count is
            // settled with it, and cleared with the rest where it lies in a tally the success clears.
            clear(name, settling: released ? nil : counted?.ticket)
            released = true
            return nil
        }
        // Any other account an entry named (one that found the password right, but the stack said no): locked,
        // it answers as locked.
        for case let named? in answer.named + answer.refusals where !isTyped(named) && seen.insert(named).inserted {
            do throws(AuthError) {
                if let error = try self.lockedOut(LockoutAccount(named)) { lockedOut = lockedOut ?? error }
            } catch {
                lockedOut = lockedOut ?? error
            }
        }
        if case .rightCredential = answer.end, let counted {
            withdraw(counted.ticket)
            released = true
        }
        return lockedOut
    }
}

/// How an attempt ended, as far as the ledger is concerned, and the accounts the entries' answers named.
struct LedgerAnswer {
    enum End {
        /// The stack admitted `account` (its password may have expired: it was right).
        case admitted(String)
        /// The credential was right, and the login refused for another reason (an expired password that is
        /// not changed here, an account not activated), and no entry refused the credential.
        case rightCredential
        /// Refused: a wrong credential, an unknown name, a policy.
        case refused
        /// No answer: unavailable, timed out, failed, cancelled, killed.
        case unanswered
    }

    var end: End
    /// The accounts of the entries that refused the credential, as each spells it; `nil` for an entry that
    /// named none (it refused the name as typed).
    var refusals: [String?] = []
    /// The accounts entries named without refusing (one that found the password right, one that refused for
    /// another reason).
    var named: [String?] = []

    init(_ end: End, refusals: [String?] = [], named: [String?] = []) {
        self.end = end
        self.refusals = refusals
        self.named = named
    }

    /// From a stack's trace.
    init(_ end: End, trace: ProviderChain.Trace) {
        let namings = trace.namings
        self.init(
            end, refusals: namings.filter(\.refused).map(\.account),
            named: namings.filter { !$0.refused }.map(\.account))
    }
}

/// One attempt at a credential, from the moment the account is known until the answer is final: counted
/// at its presentation (``present()``), settled by ``AttemptLedger/settle(_:_:)``.
final class LedgerAttempt: Sendable {
    let account: LockoutAccount
    private let ledger: AttemptLedger
    private let state = Locked<
        (
            counted: (ticket: LockoutTicket, status: LockoutStatus)?, presented: Bool, refusal: AuthError?,
            asked: Bool, answeredAt: ContinuousClock.Instant?
        )
    >((nil, false, nil, false, nil))

    init(_ account: LockoutAccount, ledger: AttemptLedger) {
        self.account = account
        self.ledger = ledger
    }

    /// The person's answer is about to be handed to the backend: the attempt is counted now (once), under
    /// the lockout's lock. A locked account, or a store that cannot count, throws (and keeps throwing), and
    /// the answer is not handed over. While every slot is held by attempts still being checked, it waits
    /// (an async sleep, ended by a cancel) for the ledger's `wait` at most, then is refused
    /// (``AuthError/loginsInFlight``, audited), counting nothing.
    func present() async throws(AuthError) {
        let deadline = ContinuousClock.now + ledger.wait
        var pause = Duration.milliseconds(5)
        while try !presentOnce() {
            guard ContinuousClock.now < deadline else {
                let error = AuthError.loginsInFlight
                state.withLock { $0.refusal = $0.refusal ?? error }
                ledger.report(.busy(account))
                throw error
            }
            do {
                try await Task.sleep(for: pause)
            } catch {
                throw .cancelled
            }
            pause = min(pause * 2, .milliseconds(100))
        }
    }

    /// One try at ``present()``: `false` when it must wait for a slot.
    private func presentOnce() throws(AuthError) -> Bool {
        try state.withLock { state throws(AuthError) in
            if let refusal = state.refusal { throw refusal }
            state.answeredAt = .now
            guard !state.presented else { return true }
            do throws(AuthError) {
                switch try ledger.charge(account) {
                case .waiting: return false
                case .uncounted: state.counted = nil
                case .counted(let ticket, let status): state.counted = (ticket, status)
                }
            } catch {
                state.refusal = error
                throw error
            }
            state.presented = true
            return true
        }
    }

    /// Whether an answer was handed to the backend.
    var presented: Bool { state.withLock { $0.presented } }

    /// When the latest answer was handed to the backend (`nil` before the first): where a failure's delay
    /// is measured from, so that how long the backend took to refuse is not what the clock tells.
    var answeredAt: ContinuousClock.Instant? { state.withLock { $0.answeredAt } }

    /// The person was asked a question (answered or not): not a presentation, but the login did ask.
    func asking() { state.withLock { $0.asked = true } }

    /// Whether the person was asked anything during the attempt.
    var asked: Bool { state.withLock { $0.asked } }

    /// Why the presentation was refused (the account was locked meanwhile, the store could not count): the
    /// login's answer, whatever the backend made of it.
    var refusal: AuthError? { state.withLock { $0.refusal } }

    /// The count, once presented (`nil` when nothing is counted: no lockout configured).
    var counted: (ticket: LockoutTicket, status: LockoutStatus)? { state.withLock { $0.counted } }
}
