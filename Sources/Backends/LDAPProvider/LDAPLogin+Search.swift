import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// Finding the user's entry (the filter, the service account's bind) and binding as it.
extension LDAPLogin {
    /// What a login's search reads of the user's entry: what the identity is made of, and the account's
    /// standing (for the offline cache).
    static let foundAttributes =
        LDAPEntry.loginAttributes
        + standingAttributes.filter {
            !LDAPEntry.loginAttributes.contains($0)
        }

    static let ambiguous = "the filter matches more than one entry"

    /// The service account's bind (or an anonymous one), then the search for the user's one entry (`nil`: there
    /// is none), reading ``foundAttributes``. A login's look-up, its bind, the offline cache's stamp and the
    /// account check after it ask for the same entry within moments: one search serves them
    /// (``LDAPConnectionPool/foundLifetime``) — but the offline cache's reads, which must see the entry as it is
    /// now.
    /// - Parameters:
    ///   - forBind: For a login's bind: an entry no bind has used yet (``LDAPConnectionPool/found(_:forBind:)``).
    ///   - fresh: Search whatever was kept: for the offline cache's standing, read after a login's answer to
    ///     tell whether the password changed while it was in flight, and by its checks.
    func find(on handle: OpaquePointer, _ username: String, forBind: Bool = false, fresh: Bool = false) -> Result<
        LDAPEntry?, Failure
    > {
        let key = foundKey(username)
        // An entry that records failed binds may have had them cleared by the bind since (a password policy does
        // at a good bind): read afresh, so that a stamp taken now is the entry's after that bind.
        if !fresh, let kept = pool.found(key, forBind: forBind), kept?.recordsFailedBinds != true {
            return .success(kept)
        }
        switch entries(on: handle, username, attributes: Self.foundAttributes) {
        case .success(let entries):
            guard entries.count <= 1 else { return .failure(.refused(Self.ambiguous)) }
            // A fresh read (the offline cache's, after a login's answer or at a check) serves the account check
            // after it, never a later login's bind, whose standing before must be read before that bind.
            pool.keep(entries.first, for: key, forBinds: !fresh)
            return .success(entries.first)
        case .failure(let failure): return .failure(failure)
        }
    }

    /// What ``find(on:_:forBind:)`` keeps an entry under: the base and the filter.
    func foundKey(_ username: String) -> String { "\(configuration.base)\u{0}\(filter(for: username))" }

    /// The search filter for `username`, escaped.
    func filter(for username: String) -> String {
        configuration.filter.replacing("%s", with: LDAPAuthProvider.escapedForFilter(username))
    }

    /// The service account's bind (none when the connection is bound as it already), then the entries the
    /// filter finds for `username` (at most two).
    func entries(on handle: OpaquePointer, _ username: String, attributes: [String]?) -> Result<
        [LDAPEntry], Failure
    > {
        let serviceStatus = serviceBind(handle)
        guard serviceStatus == LDAP_SUCCESS else {
            // Any refusal of this bind is the configuration's (a wrong or locked service account), never
            // "offline": only a server that cannot be reached is.
            return .failure(
                serviceStatus == LDAP_INVALID_CREDENTIALS
                    ? .refused("the service account's bind was refused") : Self.failure(serviceStatus, "bind"))
        }
        return search(handle, base: configuration.base, filter: filter(for: username), limit: 2, attributes: attributes)
    }

    /// Binds `handle` as the service account (anonymously without one), unless it is bound so already.
    func serviceBind(_ handle: OpaquePointer) -> Int32 {
        if pool.isServiceBound(handle) { return LDAP_SUCCESS }
        let status = bind(handle, configuration.bindDN, configuration.bindPassword)
        if status == LDAP_SUCCESS { pool.noteServiceBound(handle, true) }
        return status
    }

    /// The login's operations on a connection: service bind, search (each skipped when done a moment ago), user
    /// bind, groups.
    /// - Parameters:
    ///   - changesExpired: Whether the person may change an expired password now: a password used on a grace
    ///     login is then one to change, not a login.
    ///   - readsGroups: Whether anything reads the identity's groups: without, no search for `posixGroup`
    ///     entries (`memberOf` comes with the entry).
    ///   - readsStandingAfter: Whether a success reads the account's standing again, afresh, on this connection
    ///     (for the offline cache: ``OnlineLogin/standingAfter``).
    func attempt(
        on handle: OpaquePointer,
        _ uri: String,
        _ username: String,
        _ password: Secret,
        changesExpired: Bool = false,
        readsGroups: Bool = true,
        readsStandingAfter: Bool = false,
        _ messages: inout [String]
    ) -> Result<(outcome: AuthOutcome, standingBefore: AccountStanding, standingAfter: AccountStanding?), Failure> {
        let found: LDAPEntry?
        switch find(on: handle, username, forBind: true) {
        case .success(let entry): found = entry
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success((.notMine, Self.standing(.gone), nil)) }
        // The standing the offline cache saves a success under: read with the entry the password is bound to,
        // before the bind.
        let before = Self.standing(Self.state(of: entry))
        return bind(
            to: entry, on: handle, username, password, changesExpired: changesExpired, readsGroups: readsGroups,
            &messages
        ).map { outcome in
            guard readsStandingAfter, case .authenticated = outcome else { return (outcome, before, nil) }
            // Read again once the password was found right, afresh and on this connection (no other is taken
            // from the pool): a change made while the bind was in flight is seen.
            let after = accountState(on: handle, username, fresh: true).map(Self.standing)
            return (outcome, before, (try? after.get()) ?? .cannotTell)
        }
    }

    /// The login's bind to the entry its search found, and the identity it makes.
    private func bind(
        to entry: LDAPEntry, on handle: OpaquePointer, _ username: String, _ password: Secret, changesExpired: Bool,
        readsGroups: Bool, _ messages: inout [String]
    ) -> Result<AuthOutcome, Failure> {
        // Failures are counted against the entry's own spelling of the account.
        let canonical = entry.first("uid").flatMap { try? Username.validate($0) }
        let (userStatus, policy) = bindWithPolicy(handle, entry.dn, password)
        pool.bound(foundKey(username))
        switch (userStatus, policy.error) {
        case (LDAP_INVALID_CREDENTIALS, PP_accountLocked?):
            return .success(.rejected(.locked(until: nil), canonicalUsername: canonical))
        case (LDAP_INVALID_CREDENTIALS, PP_passwordExpired?):
            return .success(.rejected(.passwordChangeRequired, canonicalUsername: canonical))
        case (LDAP_INVALID_CREDENTIALS, _): return .success(.rejected(.wrongCredentials, canonicalUsername: canonical))
        case (LDAP_SUCCESS, PP_changeAfterReset?) where !changesExpired:
            return .success(.rejected(.passwordChangeRequired, canonicalUsername: canonical))
        case (LDAP_SUCCESS, _): break
        default: return .failure(Self.failure(userStatus, "bind"))
        }
        // Reset by an administrator, or expired with a grace login left for the change's own bind: to be
        // changed once the whole stack has admitted the person.
        let mustChange = changesExpired && (policy.error == PP_changeAfterReset || policy.grace > 0)
        if policy.grace == 0 {
            messages.append(
                "Your password has expired and this was its last grace login: ask an administrator to reset it.")
        } else if policy.grace > 0 && !mustChange {
            messages.append(
                "Your password has expired; \(policy.grace) grace login\(policy.grace == 1 ? "" : "s") left.")
        } else if policy.expire > 0 {
            messages.append("Your password expires in \((policy.expire + 86_399) / 86_400) day(s).")
        }
        // Groups: posixGroup entries naming the user, read with the service account's rights when there is
        // one (it may read what users may not); without one, the user's own rights serve, which saves a
        // round trip (the next login binds afresh in any case).
        if readsGroups && configuration.bindDN != nil { _ = serviceBind(handle) }
        var admitted = identity(of: entry, canonical ?? username, readingGroupsOn: readsGroups ? handle : nil)
        admitted.mustChangePassword = mustChange
        return .success(.authenticated(admitted))
    }

    /// The identity `entry` makes for `account`: its display name, `dn`, numbers, home and shell, and its
    /// groups — `memberOf`, and the `posixGroup` entries naming it, searched on `handle` (none without one).
    /// Everything from the directory is text to show: escaped like any other input.
    func identity(of entry: LDAPEntry, _ account: String, readingGroupsOn handle: OpaquePointer?) -> Identity {
        var groups =
            configuration.groupSources.contains(.memberOf)
            ? Set(entry.values("memberOf").compactMap(Self.firstRDNValue).map { TextSafety.escaped($0) }) : []
        let groupFilter = "(&(objectClass=posixGroup)(memberUid=\(LDAPAuthProvider.escapedForFilter(account))))"
        if let handle, configuration.groupSources.contains(.memberUid),
            case .success(let found) = search(
                handle, base: configuration.groupBase ?? configuration.base, filter: groupFilter, limit: 1000)
        {
            for group in found { if let name = group.first("cn") { groups.insert(TextSafety.escaped(name)) } }
        }
        var attributes: [String: String] = ["dn": entry.dn]
        for (key, attribute) in [
            ("uid", "uidNumber"), ("gid", "gidNumber"), ("home", "homeDirectory"), ("shell", "loginShell"),
        ] {
            if let value = entry.first(attribute) { attributes[key] = value }
        }
        return Identity(
            username: account,
            displayName: entry.first("cn").map { TextSafety.escaped($0) }, groups: groups, provider: "ldap",
            attributes: attributes.mapValues { TextSafety.escaped($0) })
    }
}
