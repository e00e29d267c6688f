/// One attempt's answer as the gatekeeper acts on it: the identity admitted or the error to answer, the
/// stack's trace, the account the answer names, and what the ledger makes of it. Made in one place
/// from the answer alone, so the audit and the ledger read the same facts.
struct LoginVerdict {
    /// The name the attempt was counted under (the look-up's spelling, or the name as typed), for records
    /// that keep only its digest.
    let typed: String
    /// What the login answers: the identity the stack admitted, or the error.
    let result: Result<Identity, AuthError>
    let trace: ProviderChain.Trace?
    /// The account the answer names (the backend's spelling when it gave one), and whether a backend
    /// confirmed that it is an account.
    let named: (name: String, known: Bool)
    /// What the attempt ledger settles.
    let ledgerAnswer: LedgerAnswer

    init(_ answer: Result<Traced<AuthOutcome>, AuthError>, account: LockoutAccount, revealsUnknownUsers: Bool) {
        typed = account.key
        let outcome: AuthOutcome
        switch answer {
        case .failure(let thrown):
            // Cancelled, killed, or the conversation failed: nothing more is known.
            (result, trace) = (.failure(thrown), nil)
            named = (account.key, account.known)
            ledgerAnswer = LedgerAnswer(.unanswered)
            return
        case .success(let traced):
            trace = traced.trace
            outcome = traced.outcome.normalized
        }
        let stackTrace = trace
        /// What the ledger settles: the trace's accounts, or a lone provider's own answer.
        func settled(_ end: LedgerAnswer.End, refused: Bool = false, naming: String? = nil) -> LedgerAnswer {
            if let stackTrace { return LedgerAnswer(end, trace: stackTrace) }
            return refused ? LedgerAnswer(end, refusals: [naming]) : LedgerAnswer(end, named: [naming])
        }
        switch outcome {
        case .authenticated(let identity):
            result = .success(identity)
            named = (identity.username, true)
            ledgerAnswer = settled(.admitted(identity.username))
        case .rejected(let rejection, let canonical):
            result = .failure(rejection.error)
            named = (canonical ?? account.key, account.known || canonical != nil)
            let refused = settled(.refused, refused: rejection.pamResult.refusesCredential, naming: canonical)
            // The right password, expired or for an account not activated yet (a backend says so only once it
            // has checked it), and no entry refused the credential: no failed guess.
            if rejection.followsTheRightCredential && refused.refusals.isEmpty {
                ledgerAnswer = settled(.rightCredential, naming: canonical)
            } else {
                ledgerAnswer = refused
            }
        case .notMine:
            result = .failure(revealsUnknownUsers ? .userNotFound : .invalidCredentials)
            named = (account.key, false)
            ledgerAnswer = settled(.refused)
        case .ignored:
            // Nothing applied to this login: as PAM's stack of only ignored modules, it fails.
            result = .failure(.refusedByPolicy)
            named = (account.key, account.known)
            ledgerAnswer = settled(.refused)
        case .failed(.credentialsExpired, _):
            // A sign-in code not approved in time (PAM's cred_expired): its own answer, not an outage.
            result = .failure(.credentialsExpired)
            named = (account.key, account.known)
            ledgerAnswer = settled(.refused)
        case .unavailable(let reason), .failed(_, let reason):
            result = .failure(.providerUnavailable(reason: reason))
            named = (account.key, account.known)
            ledgerAnswer = settled(.unanswered)
        }
    }
}
