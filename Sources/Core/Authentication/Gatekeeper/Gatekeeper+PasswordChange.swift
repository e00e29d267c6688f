import GatekeeperSupport

extension Gatekeeper {
    /// Whether a password change's answer makes its current password a failed guess: a wrong current
    /// password is one — the stack's answer, or an entry's whose refusal another entry's answer decided over.
    static func refusedCurrentPassword(_ outcome: PasswordChangeOutcome, _ trace: ProviderChain.Trace?) -> Bool {
        outcome == .rejected(.wrongCurrentPassword) || trace?.refusedCredential == true
    }

    /// Changes the password of the signed-in person (signing in first, through `conversation`, when
    /// nobody is), through the provider (a stack: through every entry that keeps passwords, with PAM's
    /// two passes: ``AuthProvider/changePassword(of:conversation:expiredOnly:origin:)``).
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
    func changePassword(
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
                origin: configuration.origin)
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
    func changeExpiredPassword(of identity: Identity, conversation: any Conversation, flight: UInt64) async
        -> Traced<Result<Identity, AuthError>>
    {
        await conversation.show(PasswordPrompt.expiredNotice, as: .info)
        await conversation.show("Changing password for \(identity.username).", as: .info)
        let answer: Traced<PasswordChangeOutcome>
        do throws(AuthError) {
            answer = try await provider.changePasswordWithTrace(
                of: identity.username, conversation: ValidatingConversation(conversation), expiredOnly: true,
                origin: configuration.origin)
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
}
