import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// What a directory says of an account without its password: locked, expired, must change, or changed since (ppolicy's and the other servers' attributes).
extension LDAPLogin {
    /// The attributes ``standing(on:_:)`` reads (operational ones are sent only when named).
    static let standingAttributes = [
        "uid", "pwdChangedTime", "pwdLastSet", "pwdUpdateTime", "modifyTimestamp", "pwdAccountLockedTime",
        "pwdReset", "nsAccountLock", "lockoutTime", "userAccountControl", "shadowExpire", "pwdStartTime",
        "pwdEndTime", "accountExpires", "pwdFailureTime", "passwordRetryCount",
        // The entry's own identity (``entryIdentity(_:)``).
        "entryUUID", "nsUniqueId", "createTimestamp", "whenCreated",
    ]

    /// The account's standing, read with the service account's rights: see ``LDAPAuthProvider/standing(of:)``.
    /// Always a search of its own, never the entry a login's search kept a moment ago: read after a login's
    /// answer, it must tell whether the password changed while that login was in flight (the login's own
    /// search, before its bind, gives the standing before: ``attempt(on:_:_:_:changesExpired:readsGroups:_:)``).
    func standing(on handle: OpaquePointer, _ username: String) -> Result<AccountStanding, Failure> {
        accountState(on: handle, username, fresh: true).map(Self.standing)
    }

    /// ``standing(on:_:)`` with the account's groups now, as a login reads them (`memberOf`, and the `posixGroup`
    /// entries naming it, searched with the service account's rights): what a check of the offline cache asks.
    func standingWithGroups(on handle: OpaquePointer, _ username: String) -> Result<AccountStanding, Failure> {
        accountState(on: handle, username, fresh: true).flatMap { state in
            guard case .current(let entry, let stamp) = state else { return .success(Self.standing(state)) }
            return currentIdentity(of: entry, username, on: handle).map { .current(stamp: stamp, groups: $0.groups) }
        }
    }

    /// What the offline cache is told of an account in `state`.
    static func standing(_ state: AccountState) -> AccountStanding {
        switch state {
        case .ambiguous: .withdrawn(reason: "the filter matches more than one entry")
        case .gone: .withdrawn(reason: "the directory no longer has the account")
        case .locked: .withdrawn(reason: "the account is locked or disabled")
        case .reset: .withdrawn(reason: "the password was reset and must be changed")
        case .expired: .withdrawn(reason: "the account has expired or is not valid yet")
        case .current(_, let stamp): .current(stamp: stamp, groups: nil)
        }
    }

    /// The account as the directory keeps it now, read with the service account's rights: what both the
    /// offline cache's standing and the account check (``LDAPAuthProvider/recheck(_:)``) are made of.
    enum AccountState {
        /// The filter finds more than one entry: a login is refused so.
        case ambiguous
        case gone
        /// Locked or disabled: ppolicy's `pwdAccountLockedTime`, 389-ds's `nsAccountLock`, Active
        /// Directory's `lockoutTime` or disabled flag.
        case locked
        /// Reset by an administrator (`pwdReset`): to be changed at the next login.
        case reset
        /// Expired, or not valid yet.
        case expired
        /// The entry, and the time its password was last set.
        case current(LDAPEntry, stamp: String?)
    }

    /// - Parameter fresh: Search whatever was kept (``find(on:_:forBind:fresh:)``).
    func accountState(on handle: OpaquePointer, _ username: String, fresh: Bool = false) -> Result<
        AccountState, Failure
    > {
        let found: LDAPEntry?
        switch find(on: handle, username, fresh: fresh) {
        case .success(let entry): found = entry
        // The login itself is refused so (the filter is ambiguous): no cached password stands for it either.
        case .failure(.refused(let why)) where why == Self.ambiguous: return .success(.ambiguous)
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success(.gone) }
        return .success(Self.state(of: entry))
    }

    /// The account as `entry`, read with the service account's rights, has it.
    static func state(of entry: LDAPEntry) -> AccountState {
        let now = Int64(time(nil))
        let today = now / 86_400
        if entry.first("pwdAccountLockedTime") != nil || entry.first("nsAccountLock")?.lowercased() == "true"
            || entry.first("lockoutTime").flatMap(Int64.init).map({ $0 != 0 }) == true
            || entry.first("userAccountControl").flatMap(Int64.init).map({ $0 & 0x2 != 0 }) == true
        {
            return .locked
        }
        if entry.first("pwdReset")?.uppercased() == "TRUE" { return .reset }
        // Expired: shadowExpire (days since 1970), Active Directory's accountExpires (100 ns since 1601;
        // 0 and the largest value mean never), OpenLDAP 2.6's pwdEndTime — or not valid yet (pwdStartTime).
        let generalizedNow = generalizedTime(now)
        let expired =
            entry.first("shadowExpire").flatMap(Int64.init).map { $0 > 0 && $0 <= today } == true
            || entry.first("accountExpires").flatMap(Int64.init).map {
                $0 != 0 && $0 != Int64.max && $0 / 10_000_000 - 11_644_473_600 <= now
            } == true
            || entry.first("pwdEndTime").flatMap(generalizedPrefix).map { $0 <= generalizedNow } == true
            || entry.first("pwdStartTime").flatMap(generalizedPrefix).map { $0 > generalizedNow } == true
        if expired { return .expired }
        return .current(entry, stamp: stamp(entry))
    }

    /// What the offline cache keeps of an entry to tell, later, whether it still opens with the same password:
    /// the entry's identity (``entryIdentity(_:)``), a line break, and its password stamp (``passwordStamp(_:)``,
    /// empty when it keeps none). A name the directory gives to another entry since is another identity, whatever
    /// its password stamp.
    static func stamp(_ entry: LDAPEntry) -> String {
        entryIdentity(entry) + "\n" + (passwordStamp(entry) ?? "")
    }

    /// The entry itself, not its name: `entryUUID` (RFC 4530: OpenLDAP and most servers), 389-ds's `nsUniqueId`,
    /// else its DN and the time it was made (`createTimestamp`, Active Directory's `whenCreated`) — an account
    /// deleted and made again under the same name is another entry.
    static func entryIdentity(_ entry: LDAPEntry) -> String {
        if let uuid = entry.first("entryUUID") { return "entryUUID=\(uuid)" }
        if let unique = entry.first("nsUniqueId") { return "nsUniqueId=\(unique)" }
        let created = entry.first("createTimestamp") ?? entry.first("whenCreated") ?? ""
        return "dn=\(entry.dn) createTimestamp=\(created)"
    }

    /// A kept stamp's parts: the entry's identity (`nil` for one kept before entries were told apart) and its
    /// password stamp (`nil` when it keeps none).
    static func stampParts(_ stamp: String?) -> (entry: String?, password: String?) {
        guard let stamp else { return (nil, nil) }
        guard let cut = stamp.firstIndex(of: "\n") else { return (nil, stamp) }
        let password = String(stamp[stamp.index(after: cut)...])
        return (String(stamp[..<cut]), password.isEmpty ? nil : password)
    }

    /// What a `modifyTimestamp` stamp ends with when the entry holds failed binds a password policy wrote into
    /// it (`pwdFailureTime`, 389-ds's `passwordRetryCount`): the policy, not a new password, may have changed it.
    static let writtenByFailures = " (failed binds recorded)"

    /// The account's password stamp: the time its password was last set (`pwdChangedTime`, `pwdLastSet`,
    /// `pwdUpdateTime`) — or, where it keeps none of those, the entry's `modifyTimestamp`, so that any change of
    /// the entry reads as a new password, marked (``writtenByFailures``) when the entry holds failed binds.
    static func passwordStamp(_ entry: LDAPEntry) -> String? {
        for name in ["pwdChangedTime", "pwdLastSet", "pwdUpdateTime"] {
            if let value = entry.first(name) { return "\(name)=\(value)" }
        }
        guard let modified = entry.first("modifyTimestamp") else { return nil }
        return "modifyTimestamp=\(modified)" + (entry.recordsFailedBinds ? writtenByFailures : "")
    }

    /// The account check without a password: see ``LDAPAuthProvider/recheck(_:)``.
    func recheck(on handle: OpaquePointer, _ username: String) -> Result<Recheck, Failure> {
        let state: AccountState
        switch accountState(on: handle, username) {
        case .success(let found): state = found
        case .failure(let failure): return .failure(failure)
        }
        switch state {
        case .ambiguous: return .success(.unavailable(reason: Self.ambiguous))
        case .gone: return .success(.refused(.userNotFound))
        case .locked: return .success(.refused(.accountLocked(until: nil)))
        case .reset: return .success(.refused(.passwordChangeRequired))
        case .expired: return .success(.refused(.accountExpired))
        case .current(let entry, _):
            return currentIdentity(of: entry, username, on: handle).map { .valid($0) }
        }
    }

    /// The identity `entry` makes now, its groups read with the service account's rights (anonymously without
    /// one): the connection may be bound as the last user to sign in on it.
    func currentIdentity(of entry: LDAPEntry, _ username: String, on handle: OpaquePointer) -> Result<
        Identity, Failure
    > {
        let account = entry.first("uid").flatMap { try? Username.validate($0) } ?? username
        let status = serviceBind(handle)
        guard status == LDAP_SUCCESS else {
            return .failure(
                status == LDAP_INVALID_CREDENTIALS
                    ? .refused("the service account's bind was refused") : Self.failure(status, "bind"))
        }
        return .success(identity(of: entry, account, readingGroupsOn: handle))
    }

    /// `seconds` since the epoch as LDAP's generalized time to the second, `YYYYMMDDHHMMSS` (UTC): what
    /// ``generalizedPrefix(_:)`` compares with.
    static func generalizedTime(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let fields: [(Int32, Int)] = [
            (parts.tm_year + 1900, 4), (parts.tm_mon + 1, 2), (parts.tm_mday, 2), (parts.tm_hour, 2),
            (parts.tm_min, 2), (parts.tm_sec, 2),
        ]
        return fields.map { value, width in
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }.joined()
    }

    /// The first fourteen digits of a generalized time in UTC (`20261204153000Z`, with or without a
    /// fraction), which compare as text; `nil` for any other form (a time zone offset), which is then
    /// not taken to say anything.
    static func generalizedPrefix(_ value: String) -> String? {
        let digits = value.utf8.prefix(14)
        guard digits.count == 14, digits.allSatisfy({ (0x30...0x39).contains($0) }), value.hasSuffix("Z") else {
            return nil
        }
        return String(decoding: digits, as: UTF8.self)
    }
}
