import Authentication
import BlockingPools
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// Keeping the cache true to the backend: a success saved, a refusal or a change forgetting, ties settled.
extension OfflineCachingProvider {
    /// When a login's password went to the backend: its place in this process's order of answers, and the time
    /// (what orders the answers of two processes).
    struct Begun {
        let ticket: UInt64
        let at: Int64
    }

    /// What an online answer means for the cache: a success saves the account's entry, a refusal of the
    /// password or the account removes it.
    /// - Parameters:
    ///   - begun: When the login's password went to the backend: a success is saved only if no answer on the
    ///     account begun later came first, and is saved as of then.
    ///   - standingBefore: The account as the backend read it before it checked the password.
    ///   - standingAfter: For a success, as the backend read it again once the password was found right, if it did.
    func remember(
        _ outcome: AuthOutcome, typed: String, password: Secret?, begun: Begun, standingBefore: AccountStanding,
        standingAfter: AccountStanding? = nil
    ) async {
        switch outcome {
        case .authenticated(let identity):
            // As of when the password was checked: what decides which of two processes' answers is the newer.
            let savedAt = begun.at
            let digest = password.map { writes.digest(of: $0, for: identity.username) }
            let ticket = order.take(identity.username, digest: digest, begun: begun.ticket)
            // A password that must be changed first is no password to sign in with offline.
            guard !identity.mustChangePassword, let password, let digest else {
                _ = try? update { $0[identity.username] = nil }
                return
            }
            // The account as read before the password was checked, and again now: a password changed in
            // between (a reset while this login was in flight) is not saved, under either stamp.
            let stamp: String?
            let after: AccountStanding
            if let standingAfter { after = standingAfter } else { after = await inner.standing(of: identity.username) }
            switch (standingBefore, after) {
            case (.withdrawn, _), (_, .withdrawn):
                order.take(identity.username)
                _ = try? update { $0[identity.username] = nil }
                return
            case (.current(let before, _), .current(let after, _)):
                guard inner.passwordUnchangedByLogin(before: before, after: after) else { return }
                stamp = after
            case (.current(let before, _), .cannotTell): stamp = before
            case (.cannotTell, .cannotTell): stamp = nil
            case (.cannotTell, .current):
                // Whether the password changed while the login was in flight cannot be told.
                return
            }
            let (username, displayName, groups) = (identity.username, identity.displayName, identity.groups)
            if renew(
                username, ifItsVerifierIsOf: digest, savedAt: savedAt, stamp: stamp, displayName, groups,
                ticket: ticket)
            {
                return
            }
            let scheme = verifierScheme
            let entry = await PasswordHash.checks.run { () -> CacheEntry? in
                guard let verifier = try? PasswordHash.make(password, scheme: scheme) else { return nil }
                return CacheEntry(
                    username: username, verifier: verifier.text, savedAt: savedAt, failures: 0,
                    displayName: displayName, groups: groups.sorted(), checkedAt: savedAt, stamp: stamp)
            }
            // An account whose values make a line longer than a line may be (a display name or groups
            // of megabytes) is not cached: it would crowd others out of the file.
            let own = writes.noted(for: username)
            writes.forget(username)
            let saving = try? update { entries -> Saving in
                guard isNewest(ticket, of: username, savedAt, entries[username]) else { return .skipped }
                guard let entry = entry ?? nil, entry.line.utf8.count <= CacheEntry.maxLineBytes else {
                    entries[username] = nil
                    return .skipped
                }
                // Saved by another process in the same second: which answer is the newer cannot be told.
                if let existing = entries[username], existing.savedAt == savedAt, existing.verifier != own {
                    return .tied(with: existing.verifier)
                }
                entries[entry.username] = entry
                return .written(entry.verifier)
            }
            switch saving {
            case .written(let verifier): writes.note(verifier, of: digest, for: username)
            case .tied(let theirs): await settleTie(username, theirs, password)
            case .skipped, nil: break
            }
        case .rejected(.wrongCredentials, let canonical):
            await forget(Set([typed] + (canonical.map { [$0] } ?? [])), ifOf: password)
        case .notMine, .rejected(.locked, _), .rejected(.expiredAccount, _), .rejected(.refusedByPolicy, _),
            .rejected(.passwordChangeRequired, _):
            // The directory refused this password, or the account: what was cached for it is no longer
            // true (a password changed online makes the old one useless offline).
            let canonical: String? = if case .rejected(_, let name) = outcome { name } else { nil }
            order.take(typed)
            if let canonical { order.take(canonical) }
            _ = try? update { entries in
                entries[typed] = nil
                if let canonical { entries[canonical] = nil }
            }
        default:
            break
        }
    }

    /// A password the backend refused online: the entries of `names` are forgotten only if they are of that
    /// very password — it was changed elsewhere, and the cached one no longer opens the account. A wrong
    /// guess says nothing of the account: forgetting on it would let anyone who can try a name wipe that
    /// name's offline login before an outage. Told by the keyed digest where this process wrote the entry,
    /// else by checking the verifier (on the checks' pool); a check that cannot be made forgets. A success of
    /// this very password still being saved is superseded first: it was changed since.
    func forget(_ names: Set<String>, ifOf password: Secret?) async {
        var digests: [String: [UInt8]] = [:]
        if let password {
            for name in names {
                let digest = writes.digest(of: password, for: name)
                digests[name] = digest
                order.supersede(name, ifItsLatestLoginIs: digest)
            }
        }
        let entries = read()
        for name in names {
            guard let entry = entries[name] else { continue }
            let stale: Bool
            if let password, let digest = digests[name] {
                if writes.verifier(of: digest, for: entry.username) == entry.verifier {
                    stale = true
                } else if writes.wrote(entry.verifier, for: entry.username) {
                    stale = false
                } else {
                    // Checked to its end, whether or not the login's caller is still there: a guess whose
                    // caller went away (a closed connection, ^C) must not count as "cannot be checked", which
                    // forgets — anyone could wipe anyone's offline login so.
                    stale = await Self.verifies(entry.verifier, password, toTheEnd: true) ?? true
                }
            } else {
                stale = true
            }
            guard stale else { continue }
            // The newest word on the account: a success answered before it does not put the entry back.
            order.take(name)
            _ = try? update { entries in
                if entries[name]?.verifier == entry.verifier { entries[name] = nil }
            }
        }
    }

    /// Saves the entry of a login whose password is the one its verifier was made of, in this process, by
    /// `writes`: its times, stamp and identity renewed, its failures cleared, as a new entry of the same
    /// password would have them, without hashing the password again. `false` when there is no such entry —
    /// this process did not write it, another process or login wrote another since, or the password is
    /// not the one it was made of — and nothing was changed.
    func renew(
        _ username: String, ifItsVerifierIsOf digest: [UInt8], savedAt: Int64, stamp: String?,
        _ displayName: String?, _ groups: Set<String>, ticket: UInt64
    ) -> Bool {
        guard let verifier = writes.verifier(of: digest, for: username) else { return false }
        let renewed = try? update { entries -> Bool in
            // A newer answer for the account came first: it stands, and nothing is left to do.
            guard isNewest(ticket, of: username, savedAt, entries[username]) else { return true }
            guard var entry = entries[username], entry.verifier == verifier else { return false }
            entry.savedAt = savedAt
            entry.checkedAt = savedAt
            entry.failures = 0
            entry.stamp = stamp
            entry.adoptsStamp = false
            entry.displayName = displayName
            entry.groups = groups.sorted()
            guard entry.line.utf8.count <= CacheEntry.maxLineBytes else {
                entries[username] = nil
                return true
            }
            entries[username] = entry
            return true
        }
        return renewed ?? false
    }

    /// Whether the verifier `text` is of `password`, checked on the checks' pool; `nil` when it cannot be
    /// checked (a damaged verifier, libxcrypt missing, or — unless `toTheEnd` — the task cancelled).
    static func verifies(_ text: String, _ password: Secret, toTheEnd: Bool = false) async -> Bool? {
        let verifier = try? PasswordHash(text)
        let check = { @Sendable () -> Bool? in
            guard let verifier, verifier.libraryProblem == nil else { return nil }
            return verifier.verify(password)
        }
        if toTheEnd { return await PasswordHash.checks.runToTheEnd(check) }
        return await PasswordHash.checks.run(check) ?? nil
    }

    /// What saving a success came to.
    enum Saving {
        case written(String)
        /// Another process saved the account in the same second, with this verifier.
        case tied(with: String)
        case skipped
    }

    /// Another process saved `username`'s entry in the same second as this login's answer, so which of the two
    /// is the newer cannot be told: its entry stands if it is of this login's password too, and is forgotten
    /// otherwise (the password changed in that second; neither is trusted offline until the next online
    /// login). Checked on the checks' pool; a check that cannot be made forgets.
    func settleTie(_ username: String, _ theirs: String, _ password: Secret) async {
        guard await Self.verifies(theirs, password) != true else { return }
        _ = try? update { entries in
            if entries[username]?.verifier == theirs { entries[username] = nil }
        }
    }

    /// Whether a success answered with `ticket`, saved at `savedAt`, is still the newest word on its account:
    /// no answer for it came after (in this process: a later login's success, or a refusal that removed
    /// it), and no other process saved it later (an entry saved in the future, the clock set back, does not
    /// count). An older login whose password was changed since must not put it back over the new one.
    func isNewest(_ ticket: UInt64, of username: String, _ savedAt: Int64, _ existing: CacheEntry?) -> Bool {
        guard order.isLatest(ticket, for: username) else { return false }
        guard let existing, existing.savedAt > savedAt, existing.savedAt <= clock() else { return true }
        return false
    }
}
