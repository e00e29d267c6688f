public import Authentication
import BlockingPools
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// The offline login, and what the cache answers for the backend's other questions.
extension OfflineCachingProvider {
    /// No server could be reached: the cache decides, if it may. The attempt is counted before the
    /// verifier is checked, under the cache's lock, so parallel guesses cannot pass the limit.
    func offline(_ request: AuthRequest, _ capturing: CapturingConversation, onlineOutcome: AuthOutcome)
        async throws(AuthError) -> AuthOutcome
    {
        // An entry saved later than now, or so long ago that its age cannot be counted, is not used.
        guard usable(read()[request.username]) != nil else { return onlineOutcome }
        let password: Secret
        if let asked = capturing.password {
            password = asked
        } else {
            password = try await request.conversation.askSecret("Password: ")
        }
        // Counted first; a count that cannot be written refuses the login.
        var reserved: CacheEntry?
        var exhausted = false
        do {
            try update { entries in
                guard var entry = entries[request.username] else { return }
                guard entry.failures < maxOfflineFailures else {
                    exhausted = true
                    return
                }
                entry.failures += 1
                entries[request.username] = entry
                reserved = entry
            }
        } catch {
            return onlineOutcome
        }
        if exhausted { return .rejected(.locked(until: nil)) }
        guard let entry = reserved, let verifier = try? PasswordHash(entry.verifier) else { return onlineOutcome }
        /// No answer came of the check (the login cancelled before it ended, or libxcrypt cannot be loaded): the
        /// count is taken back. A cancelled check may still run to its end on the pool's thread
        /// (`BlockingPool.run` returns at the cancellation, not when its work does), but its answer reaches
        /// nobody, so it tells no one anything.
        func takeBack() {
            _ = try? update { entries in
                if entries[request.username]?.verifier == entry.verifier,
                    let failures = entries[request.username]?.failures, failures > 0
                {
                    entries[request.username]?.failures = failures - 1
                }
            }
        }
        guard
            let checked = await PasswordHash.checks.run({ () -> Bool? in
                verifier.libraryProblem == nil ? verifier.verify(password) : nil
            })
        else {
            takeBack()
            throw .cancelled
        }
        guard let matches = checked else {
            takeBack()
            return onlineOutcome
        }
        guard matches else { return .rejected(.wrongCredentials) }
        _ = try? update { entries in
            if entries[request.username]?.verifier == entry.verifier { entries[request.username]?.failures = 0 }
        }
        return .authenticated(offlineIdentity(entry))
    }

    /// The backend's answer; while it cannot tell (its servers unreachable), a cached account is known by
    /// the spelling it was cached under.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        let answer = await inner.lookUpAccount(username)
        guard answer == .cannotTell, let entry = read()[username] else { return answer }
        return .known(canonicalName: entry.username)
    }

    public func signOut(_ identity: Identity) async {
        await inner.signOut(identity)
    }

    /// The backend's answer; while no server can be reached, the cache's: an account it holds, saved less
    /// than `maxAge` ago, is valid (`offline: yes`) — as SSSD's account phase answers from its cache — and
    /// any other is `unavailable`. Entries whose accounts the backend withdrew are gone from the cache at its
    /// checks; offline failures do not count here (they refuse passwords, and the account phase asks none).
    public func recheck(_ identity: Identity) async -> Recheck {
        switch await inner.recheckOnline(identity) {
        case .answered(let answer): return answer
        case .unreachable(let reason):
            guard let entry = usable(read()[identity.username]) else { return .unavailable(reason: reason) }
            return .valid(offlineIdentity(entry))
        }
    }

    /// `entry`, if it may serve now: saved no later than now, and less than `maxAge` ago.
    func usable(_ entry: CacheEntry?) -> CacheEntry? {
        guard let entry else { return nil }
        let (age, overflow) = clock().subtractingReportingOverflow(entry.savedAt)
        guard !overflow, age >= 0, Duration.seconds(age) < maxAge else { return nil }
        return entry
    }

    /// The identity an offline login of `entry` signs in.
    func offlineIdentity(_ entry: CacheEntry) -> Identity {
        Identity(
            username: entry.username, displayName: entry.displayName, groups: Set(entry.groups), provider: inner.name,
            attributes: ["offline": "yes"])
    }

    public var changesPasswords: Bool { inner.changesPasswords }

    /// The backend's change; once it has changed a password, the cached verifier of the old one is
    /// forgotten, so the old password cannot sign in offline. If the cache cannot be written the change
    /// still stands, and the entry is refused at its next offline use only by its age: said in the reason.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        let outcome = try await inner.changePassword(request)
        guard request.pass == .update, outcome == .changed else { return outcome }
        do {
            try update { entries in
                entries[request.username] = nil
                for (key, entry) in entries where Username.same(entry.username, request.username) { entries[key] = nil }
            }
        } catch {
            return .failed(
                .systemError,
                reason: "the password was changed, but the offline cache could not forget the old one: \(error)")
        }
        return outcome
    }
}
