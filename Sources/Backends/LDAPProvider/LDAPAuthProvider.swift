public import Authentication
public import BlockingPools
import CLDAPLoader
import GatekeeperSupport
public import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// Accounts in a directory (OpenLDAP, 389-ds, Active Directory), through OpenLDAP's client library.
///
/// A login connects to the first URI that answers (the others are tried in order, each within the
/// connect timeout), protects the connection — `ldaps://`, or StartTLS on `ldap://`, required unless the
/// configuration says `tls=none` — with the certificate checked against the CA file, binds with the
/// service account (or anonymously), searches the user with the filter template and the name escaped per
/// RFC 4515, requires exactly one entry, and binds as that entry with the password. An empty password is
/// refused before anything is sent: an empty simple bind is an "unauthenticated bind" that succeeds
/// (RFC 4513 §5.1.2).
///
/// The blocking calls run on threads of their own through the package's blocking bridge; cancelling a
/// login returns at once and shuts the connection's socket, which ends the call in progress.
public final class LDAPAuthProvider: ReachabilityReporting {
    public struct Configuration: Sendable {
        /// Tried in order.
        public var uris: [String]
        public var base: String
        /// The search filter; `%s` is replaced by the escaped user name.
        public var filter: String
        /// The service account, and its password (read from a file, never written in the configuration).
        public var bindDN: String?
        public var bindPassword: Secret?
        /// Whether `ldap://` URIs must be upgraded with StartTLS (on by default).
        public var requiresTLS: Bool
        /// The CA certificates to check the server's against (the system's when `nil`).
        public var caFile: String?
        public var timeout: Duration
        /// Where `posixGroup` entries are searched for `memberUid`; `nil` uses `base`.
        public var groupBase: String?
        /// How many connections may be open at once, kept between logins.
        public var connections: Int
        /// Where groups come from: the entry's `memberOf`, `posixGroup` entries' `memberUid`, or both.
        public var groupSources: Set<GroupSource> = [.memberOf, .memberUid]
        /// The threads the directory's blocking calls run on: the process's shared pool by default; one of
        /// their own keeps a directory that hangs (until `timeout`) from holding up other backends.
        public var threads: BlockingPool = .shared

        public enum GroupSource: String, Sendable, Hashable, CaseIterable {
            case memberOf = "memberof"
            case memberUid = "memberuid"
        }

        public init(
            uris: [String],
            base: String,
            filter: String = "(&(objectClass=posixAccount)(uid=%s))",
            bindDN: String? = nil,
            bindPassword: Secret? = nil,
            requiresTLS: Bool = true,
            caFile: String? = nil,
            timeout: Duration = .seconds(5),
            groupBase: String? = nil,
            connections: Int = 8
        ) {
            self.uris = uris
            self.base = base
            self.filter = filter
            self.bindDN = bindDN
            self.bindPassword = bindPassword
            self.requiresTLS = requiresTLS
            self.caFile = caFile
            self.timeout = timeout
            self.groupBase = groupBase
            self.connections = connections
        }
    }

    public let name = "ldap"
    public let configuration: Configuration

    /// The servers and how they are trusted (TLS, CA), the search (base, filter, service account's DN) and
    /// where groups come from, each field length-prefixed: what decides who is admitted and with which
    /// groups. Not the time-out, the connection count, the threads, nor the service account's password.
    public var offlineScope: String {
        let c = configuration
        let fields =
            [["ldap"], c.uris, [c.base, c.filter, c.bindDN ?? "", c.requiresTLS ? "tls" : "none", c.caFile ?? ""]]
            + [[c.groupBase ?? "", c.groupSources.map(\.rawValue).sorted().joined(separator: ",")]]
        return fields.map { group in
            String(group.count) + "[" + group.map { "\($0.utf8.count):\($0)" }.joined() + "]"
        }.joined()
    }
    public let passwordPrompt = "Password: "
    /// Connections kept between logins (at most ``Configuration/connections``).
    let pool: LDAPConnectionPool

    /// The most connections this provider had open at once, and how many it made: for tests and `make bench`.
    public var connectionStatistics: (mostOpen: Int, made: Int) { (pool.mostOpen, pool.made) }

    /// Why libldap cannot be loaded (it is loaded when first needed, not when the program starts), or
    /// `nil` once it is loaded.
    public static var libraryProblem: String? {
        var error: UnsafePointer<CChar>?
        guard gatekeeper_ldap_load(&error) != 0 else { return nil }
        return error.map { String(cString: $0) } ?? "libldap cannot be loaded"
    }

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        pool = LDAPConnectionPool.shared(for: configuration)
    }

    /// The login; "no server could be reached" is `unavailable` (an offline cache wrapping the provider
    /// tells it apart, through ``authenticateOnline(_:)``).
    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        switch try await authenticateOnline(request) {
        case .answered(let outcome): return outcome
        case .unreachable(let reason): return .unavailable(reason: reason)
        }
    }

    /// The login, with "no server could be reached" told apart from every other failure: only then may
    /// an offline cache answer instead.
    public func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer {
        try await login(request, readsStandingAfter: false).answer
    }

    /// The login, with the account's standing read from the entry its search found, before the bind (no search
    /// more than the login's own), and for a success read again afresh on the same connection once the bind
    /// answered: what the offline cache saves a success under, and whether the password changed in between.
    public func loginOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineLogin {
        try await login(request, readsStandingAfter: true)
    }

    private func login(_ request: AuthRequest, readsStandingAfter: Bool) async throws(AuthError) -> OnlineLogin {
        let password = try await request.conversation.askSecret(passwordPrompt)
        // Never an unauthenticated bind.
        guard password.count > 0 else {
            return OnlineLogin(.answered(.rejected(.wrongCredentials)), standingBefore: .cannotTell)
        }
        let username = request.username
        let changes = request.mayChangeExpiredPassword
        let readsGroups = request.readsGroups
        guard
            let (answer, messages) = await onThread({ login in
                login.run { handle, uri, messages in
                    login.attempt(
                        on: handle, uri, username, password, changesExpired: changes, readsGroups: readsGroups,
                        readsStandingAfter: readsStandingAfter, &messages)
                }
            })
        else { throw .cancelled }
        // What the password policy said (grace logins left, an expiry near), once the login is decided.
        for message in messages { await request.conversation.show(message, as: .info) }
        switch answer {
        case .served(let (outcome, before, after)):
            return OnlineLogin(.answered(outcome), standingBefore: before, standingAfter: after)
        case .unavailable(let reason):
            return OnlineLogin(.answered(.unavailable(reason: reason)), standingBefore: .cannotTell)
        case .unreachable(let reason): return OnlineLogin(.unreachable(reason: reason), standingBefore: .cannotTell)
        }
    }

    public var changesPasswords: Bool { true }

    /// A password change through the directory, as `passwd` through pam_ldap makes one: the current
    /// password binds as the user's entry (the preliminary pass ends there; the change a login needs,
    /// `expiredOnly`, is `ignore` for a password the server does not call reset or expired), then RFC 3062's Password
    /// Modify extended operation, with the password-policy control, changes it on the server, which keeps
    /// its own rules (slapd's ppolicy: length, age, history, quality) and says why it refuses, in words.
    /// The server changes the password atomically; a change cancelled before the operation is sent
    /// changes nothing.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        let current = try await request.conversation.askSecret(PasswordPrompt.current)
        return try await change(request, current: current)
    }

    /// The change with the current password known: the bind, and in the update pass the new password
    /// twice and the operation.
    private func change(_ request: PasswordChangeRequest, current: Secret) async throws(AuthError)
        -> PasswordChangeOutcome
    {
        guard current.count > 0 else { return .rejected(.wrongCurrentPassword) }  // Never an unauthenticated bind.
        var new: Secret?
        if request.pass == .update {
            switch try await PasswordPrompt.askNewPassword(request.conversation) {
            case .success(let password): new = password
            case .failure(let refusal): return .rejected(refusal)
            }
        }
        return try await modify(request.username, current: current, new: new, expiredOnly: request.expiredOnly)
    }

    /// On a directory thread: the bind with `current`, and the Password Modify to `new` when given.
    private func modify(_ username: String, current: Secret, new: Secret?, expiredOnly: Bool) async throws(AuthError)
        -> PasswordChangeOutcome
    {
        guard
            let (answer, _) = await onThread({ [new] login in
                login.run { handle, _, _ in
                    login.change(on: handle, username, current: current, new: new, expiredOnly: expiredOnly)
                }
            })
        else { throw .cancelled }
        switch answer {
        case .served(let outcome): return outcome
        case .unavailable(let reason), .unreachable(let reason): return .unavailable(reason: reason)
        }
    }

    /// The entry the filter finds for `username`, with the service account's rights: its `uid` is the
    /// account's own spelling (the directory may match `ALICE` or fullwidth letters to `alice`). Costs
    /// what a login's own search costs, whether or not the entry exists.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        guard
            let (answer, _) = await onThread({ login in
                // Servers that failed a moment ago are not tried for a look-up (the login itself tries
                // them): a directory that is down costs the login its time-out once, not twice.
                login.run(skippingResting: true) { handle, _, _ in login.find(on: handle, username) }
            })
        else { return .cannotTell }
        guard case .served(let found) = answer else { return .cannotTell }
        guard let entry = found else { return .unknown }
        guard let uid = entry.first("uid"), let name = try? Username.validate(uid) else { return .cannotTell }
        return .known(canonicalName: name)
    }

    /// The account's entry as the service account reads it now, for the offline cache: gone (the filter
    /// finds nothing), locked (ppolicy's `pwdAccountLockedTime`, 389-ds's `nsAccountLock`, Active
    /// Directory's `lockoutTime` or disabled flag), its password reset (`pwdReset`), expired
    /// (`shadowExpire`) — or current, stamped with the time its password was last set (`pwdChangedTime`,
    /// `pwdLastSet`, `pwdUpdateTime`), or the entry's `modifyTimestamp` where it keeps none of those
    /// (``LDAPLogin/stamp(_:)``: the entry's identity and its password stamp, compared by
    /// ``passwordUnchanged(saved:current:)``).
    public func standing(of username: String) async -> AccountStanding {
        await standing(of: username, withGroups: false)
    }

    /// ``standing(of:)`` with the account's groups now, read as a login reads them: what the offline cache's check
    /// asks, so that a group the directory took the account out of stops admitting it offline.
    public func standingWithGroups(of username: String) async -> AccountStanding {
        await standing(of: username, withGroups: true)
    }

    private func standing(of username: String, withGroups: Bool) async -> AccountStanding {
        guard
            let (answer, _) = await onThread({ login in
                login.run(skippingResting: true) { handle, _, _ in
                    withGroups ? login.standingWithGroups(on: handle, username) : login.standing(on: handle, username)
                }
            })
        else { return .cannotTell }
        guard case .served(let standing) = answer else { return .cannotTell }
        return standing
    }

    /// Whether the password is still the one cached with the stamp `saved`, the stamp being `current` now: the
    /// same stamp; or two `modifyTimestamp` stamps, the current one taken while the entry records failed binds.
    /// A password policy applies to such an entry and writes every wrong guess into it — a stamp anyone's wrong
    /// guess moves would let anyone wipe an account's offline login — and a password set under it keeps
    /// `pwdChangedTime`, which changes the stamp's kind. Whatever clears the failed binds again (a good bind
    /// elsewhere, a password deleted or set) moves the stamp with none recorded: a new password, for all the
    /// check can tell. (A good bind through this cache is no such move: ``passwordUnchangedByLogin(before:after:)``.)
    /// And always the same entry: a stamp of another entry under the name (``LDAPLogin/entryIdentity(_:)``: an
    /// account deleted and made again) is never the same password; one kept before entries were told apart
    /// must match the current password stamp exactly.
    public func passwordUnchanged(saved: String?, current: String?) -> Bool {
        guard saved != current else { return true }
        let (savedEntry, savedPassword) = LDAPLogin.stampParts(saved)
        let (currentEntry, currentPassword) = LDAPLogin.stampParts(current)
        if savedEntry == nil, currentEntry != nil {
            // Kept before entries were told apart: only the very same password stamp, so that a name given to
            // another entry since (its failed binds recorded) is not taken for the one saved.
            return savedPassword == currentPassword
        }
        // Another entry under the name: an account deleted and made again, whatever its password.
        guard savedEntry == currentEntry else { return false }
        guard savedPassword != currentPassword else { return true }
        guard let saved = savedPassword, let current = currentPassword, saved.hasPrefix("modifyTimestamp="),
            current.hasPrefix("modifyTimestamp=")
        else { return false }
        return current.hasSuffix(LDAPLogin.writtenByFailures)
    }

    /// Whether a login's good bind left the password as its search found it, the stamp `before` read by that
    /// search and `after` once it answered: as ``passwordUnchanged(saved:current:)``, and also when `before`
    /// recorded failed binds and `after`, a `modifyTimestamp` too, records none — the password policy cleared them
    /// at this very bind, which writes the entry. (A password deleted by an administrator in that moment looks the
    /// same, on a server that keeps no `pwdChangedTime`: docs/ldap.md says so.)
    public func passwordUnchangedByLogin(before: String?, after: String?) -> Bool {
        if passwordUnchanged(saved: before, current: after) { return true }
        let (beforeEntry, beforePassword) = LDAPLogin.stampParts(before)
        let (afterEntry, afterPassword) = LDAPLogin.stampParts(after)
        guard beforeEntry == afterEntry, let before = beforePassword, let after = afterPassword,
            before.hasSuffix(LDAPLogin.writtenByFailures),
            after.hasPrefix("modifyTimestamp="), !after.hasSuffix(LDAPLogin.writtenByFailures)
        else { return false }
        return true
    }

    /// The account as the directory has it now, without a password, read with the service account's
    /// rights as the offline cache's standing is: gone (`userNotFound`), locked or disabled
    /// (`accountLocked`), reset by an administrator (`passwordChangeRequired`), expired or not valid yet
    /// (`accountExpired`) — or valid, with its groups now. What `gatekeeperd`'s account phase answers a
    /// key-only ssh login with, and what a remembered login is checked against. A directory that cannot be
    /// reached, or whose filter finds two entries, is `unavailable`.
    public func recheck(_ identity: Identity) async -> Recheck {
        switch await recheckOnline(identity) {
        case .answered(let recheck): return recheck
        case .unreachable(let reason): return .unavailable(reason: reason)
        }
    }

    /// ``recheck(_:)``, with "no server could be reached" told apart: only then may an offline cache answer.
    public func recheckOnline(_ identity: Identity) async -> OnlineRecheck {
        let username = identity.username
        guard
            let (answer, _) = await onThread({ login in
                login.run(skippingResting: true) { handle, _, _ in login.recheck(on: handle, username) }
            })
        else { return .answered(.unavailable(reason: "cancelled")) }
        switch answer {
        case .served(let recheck): return .answered(recheck)
        case .unavailable(let reason): return .answered(.unavailable(reason: reason))
        case .unreachable(let reason): return .unreachable(reason: reason)
        }
    }

    /// Runs `work` on one of the provider's threads; `nil` when the task was cancelled (the connection in
    /// use is shut).
    private func onThread<T: Sendable>(_ work: @escaping @Sendable (LDAPLogin) -> (T, [String])) async -> (T, [String])?
    {
        let configuration = self.configuration
        let bridge = BlockingBridge<(T, [String])>()
        let connection = LDAPConnectionSlot()
        bridge.onCancel { connection.shut() }
        return await bridge.run(on: configuration.threads) { [pool] _ in
            work(LDAPLogin(configuration: configuration, slot: connection, pool: pool))
        }
    }

    /// RFC 4515: `*`, `(`, `)`, `\` and NUL as `\2a`, `\28`, `\29`, `\5c`, `\00`; every other byte as is.
    public static func escapedForFilter(_ text: String) -> String {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case 0x2A, 0x28, 0x29, 0x5C, 0x00:
                bytes += Array("\\\(byte < 16 ? "0" : "")\(String(byte, radix: 16))".utf8)
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
