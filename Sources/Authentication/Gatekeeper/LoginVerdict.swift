/// One attempt's answer as the gatekeeper acts on it: the stack's outcome (or what it threw), its trace,
/// the error to answer, the account the answer names, and what the ledger makes of it. Made in one place
/// from the answer alone, so the audit and the ledger read the same facts.
struct LoginVerdict {
    /// The name as typed.
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
            ledgerAnswer = .unanswered(refusals: [])
            return
        case .success(let traced):
            (outcome, trace) = (traced.outcome.normalized, traced.trace)
        }
        // The entries that refused the credential: the trace's, or a lone provider's own refusal.
        let refusals: [String?]
        switch outcome! {
        case .authenticated(let identity):
            error = nil
            named = (identity.username, true)
            ledgerAnswer = .admitted(identity.username, refusals: trace?.refusals ?? [])
            return
        case .rejected(let rejection, let canonical):
            error = rejection.error
            named = (canonical ?? account.key, account.known || canonical != nil)
            let refusesCredential = rejection.pamResult == .authenticationError || rejection.pamResult == .maximumTries
            refusals = trace?.refusals ?? (refusesCredential ? [canonical] : [])
            // The right password, expired or for an account not activated yet (a backend says so only once it
            // has checked it), and no entry refused the credential: no failed guess.
            if rejection.followsTheRightCredential && refusals.isEmpty {
                ledgerAnswer = .rightCredential
                return
            }
            ledgerAnswer = .refused(refusals: refusals)
        case .notMine:
            error = revealsUnknownUsers ? .userNotFound : .invalidCredentials
            named = (account.key, false)
            ledgerAnswer = .refused(refusals: trace?.refusals ?? [])
        case .ignored:
            // Nothing applied to this login: as PAM's stack of only ignored modules, it fails.
            error = .refusedByPolicy
            named = (account.key, account.known)
            ledgerAnswer = .refused(refusals: trace?.refusals ?? [])
        case .unavailable(let reason), .failed(_, let reason):
            error = .providerUnavailable(reason: reason)
            named = (account.key, account.known)
            ledgerAnswer = .unanswered(refusals: trace?.refusals ?? [])
        }
    }
}
