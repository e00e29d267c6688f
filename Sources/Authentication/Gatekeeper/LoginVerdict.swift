/// One attempt's answer as the gatekeeper acts on it: the stack's outcome (or what it threw), its trace,
/// the error to answer, the account the answer names, and what the ledger makes of it. Made in one place
/// from the answer alone, so the audit and the ledger read the same facts.
struct LoginVerdict {
    /// The name the attempt was counted under (the look-up's spelling, or the name as typed), for records
    /// that keep only its digest.
    let typed: String
    /// The stack's outcome, normalised; `nil` when it threw.
    let outcome: AuthOutcome?
    let trace: ProviderChain.Trace?
    /// What the login answers; `nil` for a success.
    let error: AuthError?
    /// The account the answer names (the backend's spelling when it gave one), and whether a backend
    /// confirmed that it is an account.
    let named: (name: String, known: Bool)
    /// What the attempt ledger settles.
    let ledgerAnswer: LedgerAnswer

    init(_ answer: Result<Traced<AuthOutcome>, AuthError>, account: LockoutAccount, revealsUnknownUsers: Bool) {
        typed = account.key
        switch answer {
        case .failure(let thrown):
            // Cancelled, killed, or the conversation failed: nothing more is known.
            (outcome, trace, error) = (nil, nil, thrown)
            named = (account.key, account.known)
            ledgerAnswer = LedgerAnswer(.unanswered)
            return
        case .success(let traced):
            (outcome, trace) = (traced.outcome.normalized, traced.trace)
        }
        let stackTrace = trace
        /// What the ledger settles: the trace's accounts, or a lone provider's own answer.
        func settled(_ end: LedgerAnswer.End, refused: Bool = false, naming: String? = nil) -> LedgerAnswer {
            if let stackTrace { return LedgerAnswer(end, trace: stackTrace) }
            return refused ? LedgerAnswer(end, refusals: [naming]) : LedgerAnswer(end, named: [naming])
        }
        switch outcome! {
        case .authenticated(let identity):
            error = nil
            named = (identity.username, true)
            ledgerAnswer = settled(.admitted(identity.username))
        case .rejected(let rejection, let canonical):
            error = rejection.error
            named = (canonical ?? account.key, account.known || canonical != nil)
            let refusesCredential = rejection.pamResult == .authenticationError || rejection.pamResult == .maximumTries
            let refused = settled(.refused, refused: refusesCredential, naming: canonical)
            // The right password, expired or for an account not activated yet (a backend says so only once it
            // has checked it), and no entry refused the credential: no failed guess.
            if rejection.followsTheRightCredential && refused.refusals.isEmpty {
                ledgerAnswer = settled(.rightCredential, naming: canonical)
            } else {
                ledgerAnswer = refused
            }
        case .notMine:
            error = revealsUnknownUsers ? .userNotFound : .invalidCredentials
            named = (account.key, false)
            ledgerAnswer = settled(.refused)
        case .ignored:
            // Nothing applied to this login: as PAM's stack of only ignored modules, it fails.
            error = .refusedByPolicy
            named = (account.key, account.known)
            ledgerAnswer = settled(.refused)
        case .failed(.credentialsExpired, _):
            // A sign-in code not approved in time (PAM's cred_expired): its own answer, not an outage.
            error = .credentialsExpired
            named = (account.key, account.known)
            ledgerAnswer = settled(.refused)
        case .unavailable(let reason), .failed(_, let reason):
            error = .providerUnavailable(reason: reason)
            named = (account.key, account.known)
            ledgerAnswer = settled(.unanswered)
        }
    }
}
