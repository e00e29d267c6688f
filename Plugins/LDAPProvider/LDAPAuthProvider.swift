public import Authentication
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
        let password = try await request.conversation.askSecret(passwordPrompt)
        // Never an unauthenticated bind.
        guard password.count > 0 else { return .answered(.rejected(.wrongCredentials)) }
        let username = request.username
        let changes = request.mayChangeExpiredPassword
        let readsGroups = request.readsGroups
        guard
            let (answer, messages) = await onThread({ login in
                login.run { handle, uri, messages in
                    login.attempt(
                        on: handle, uri, username, password, changesExpired: changes, readsGroups: readsGroups,
                        &messages)
                }
            })
        else { throw .cancelled }
        // What the password policy said (grace logins left, an expiry near), once the login is decided.
        for message in messages { await request.conversation.show(message, as: .info) }
        switch answer {
        case .served(let outcome): return .answered(outcome)
        case .unavailable(let reason): return .answered(.unavailable(reason: reason))
        case .unreachable(let reason): return .unreachable(reason: reason)
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
    /// (``LDAPLogin/passwordStamp(_:)``, compared by ``passwordUnchanged(saved:current:)``).
    public func standing(of username: String) async -> AccountStanding {
        guard
            let (answer, _) = await onThread({ login in
                login.run(skippingResting: true) { handle, _, _ in login.standing(on: handle, username) }
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
    /// check can tell. (A good bind through this cache is no such move: its stamp is read after the bind.)
    public func passwordUnchanged(saved: String?, current: String?) -> Bool {
        guard saved != current else { return true }
        guard let saved, let current, saved.hasPrefix("modifyTimestamp="), current.hasPrefix("modifyTimestamp=")
        else { return false }
        return current.hasSuffix(LDAPLogin.writtenByFailures)
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

/// The connection of a login in progress, so a cancellation can shut its socket.
final class LDAPConnectionSlot: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var handle: OpaquePointer?
    private var cancelled = false

    init() { pthread_mutex_init(lock, nil) }
    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// Records `handle`; `false` if the login was cancelled already.
    func set(_ handle: OpaquePointer?) -> Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        self.handle = handle
        return !cancelled
    }

    var isCancelled: Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return cancelled
    }

    /// Shuts the socket: the blocking call in progress returns with an error. A connection still being
    /// made has no socket yet; then it is shut as soon as it has one (tried for a second).
    func shut() {
        if shutNow() { return }
        Task.detached { [self] in
            for _ in 0..<100 {
                try? await Task.sleep(for: .milliseconds(10))
                if shutNow() { return }
            }
        }
    }

    /// Marks the login cancelled and shuts the socket if there is one; `true` when nothing is left to do.
    private func shutNow() -> Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        cancelled = true
        guard let handle else { return false }
        var socket: Int32 = -1
        guard gk_ldap_get_option(handle, LDAP_OPT_DESC, &socket) == LDAP_OPT_SUCCESS, socket >= 0 else { return false }
        Glibc.shutdown(socket, Int32(SHUT_RDWR))
        return true
    }
}

/// One login, on its thread.
struct LDAPLogin {
    let configuration: LDAPAuthProvider.Configuration
    let slot: LDAPConnectionSlot
    let pool: LDAPConnectionPool

    enum Failure: Error {
        /// The server could not be reached: connect or TLS failed, it timed out, it went away. The next
        /// server is tried; when none can be reached, an offline cache may answer.
        case unreachable(String)
        /// The server (or this side) could not serve the login now — busy, shutting down, no connection
        /// free, the library missing. The next server is tried; never an offline login.
        case unavailable(String)
        /// The server refused what the configuration asks of it (the service account's bind, a filter
        /// matching several entries): an error of the configuration, told at once.
        case refused(String)

        /// The server did not answer within the time-out (as `unreachable`, but waiting for it again costs the
        /// time-out again: not retried on a fresh connection, and skipped for a while).
        case timedOut(String)

        var isUnreachable: Bool {
            switch self {
            case .unreachable, .timedOut: true
            case .unavailable, .refused: false
            }
        }

        var isTimeout: Bool {
            if case .timedOut = self { return true }
            return false
        }
    }

    typealias Operation<T> = (OpaquePointer, String, inout [String]) -> Result<T, Failure>

    /// What running an operation came to.
    enum Answer<T: Sendable>: Sendable {
        case served(T)
        /// No server served it, or one refused it: the reason.
        case unavailable(String)
        /// No server could be reached.
        case unreachable(String)
    }

    /// Runs `operation` on the first server that can serve it (servers that failed at once a moment ago last;
    /// those that timed out a moment ago not at all: the directory costs the login its time-out once).
    /// - Parameter skippingResting: Leave out every server that failed a moment ago.
    func run<T: Sendable>(skippingResting: Bool = false, _ operation: Operation<T>) -> (Answer<T>, [String]) {
        var reasons: [String] = []
        var everyServerUnreachable = true
        let rests = configuration.uris.map { pool.rest(of: $0) }
        let order =
            zip(configuration.uris, rests).filter { $0.1 == nil }.map(\.0)
            + (skippingResting ? [] : zip(configuration.uris, rests).filter { $0.1 == .failed }.map(\.0))
        if order.isEmpty { return (.unreachable("every directory server failed a moment ago"), []) }
        for uri in order {
            if slot.isCancelled { return (.unavailable("cancelled"), []) }
            var messages: [String] = []
            switch pooled(uri, operation, &messages) {
            case .success(let value):
                pool.answered(uri)
                return (.served(value), messages)
            case .failure(.refused(let why)): return (.unavailable("\(uri): \(why)"), [])
            case .failure(let failure):
                if !slot.isCancelled { pool.failed(uri, timedOut: failure.isTimeout) }
                everyServerUnreachable = everyServerUnreachable && failure.isUnreachable
                switch failure {
                case .unreachable(let why), .timedOut(let why), .unavailable(let why), .refused(let why):
                    reasons.append("\(uri): \(why)")
                }
            }
        }
        let reason = "no directory server answered (\(reasons.joined(separator: "; ")))"
        return (everyServerUnreachable && !slot.isCancelled ? .unreachable(reason) : .unavailable(reason), [])
    }

    /// One server, on a pooled connection when one is idle (a stale one is replaced by a fresh one once).
    private func pooled<T>(_ uri: String, _ operation: Operation<T>, _ messages: inout [String]) -> Result<T, Failure> {
        for round in 0..<2 {
            let handle: OpaquePointer
            let reused: Bool
            switch pool.take(uri, wait: configuration.timeout) {
            case .busy:
                return .failure(.unavailable("all \(pool.capacity) connections stayed busy"))
            case .reuse(let idle) where round == 0:
                (handle, reused) = (idle, true)
            case .reuse(let idle):
                pool.give(idle, to: uri, healthy: false)
                continue
            case .connect:
                switch connect(uri) {
                case .success(let made):
                    pool.counted()
                    (handle, reused) = (made, false)
                case .failure(let failure):
                    pool.release()
                    return .failure(failure)
                }
            }
            guard slot.set(handle) else {
                pool.give(handle, to: uri, healthy: false)
                return .failure(.unavailable("cancelled"))
            }
            let result = operation(handle, uri, &messages)
            _ = slot.set(nil)
            let cancelled = slot.isCancelled
            switch result {
            case .failure(.unreachable) where reused && !cancelled:
                pool.give(handle, to: uri, healthy: false)  // Closed by the server while idle: try a new one.
                continue
            case .success:
                pool.give(handle, to: uri, healthy: !cancelled)
            case .failure:
                pool.give(handle, to: uri, healthy: false)
            }
            return result
        }
        return .failure(.unreachable("no connection could be made"))
    }

    /// A new connection to `uri`, with its options set and TLS up.
    private func connect(_ uri: String) -> Result<OpaquePointer, Failure> {
        if let problem = LDAPAuthProvider.libraryProblem { return .failure(.unavailable(problem)) }
        var made: OpaquePointer?
        guard gk_ldap_initialize(&made, uri) == LDAP_SUCCESS, let handle = made else {
            return .failure(.refused("not an LDAP URI"))
        }
        guard slot.set(handle) else {
            gk_ldap_unbind_ext_s(handle, nil, nil)
            return .failure(.unavailable("cancelled"))
        }
        defer { _ = slot.set(nil) }
        var version = LDAP_VERSION3
        gk_ldap_set_option(handle, LDAP_OPT_PROTOCOL_VERSION, &version)
        var timeout = timeval(
            tv_sec: Int(configuration.timeout.components.seconds),
            tv_usec: Int(configuration.timeout.components.attoseconds / 1_000_000_000_000))
        gk_ldap_set_option(handle, LDAP_OPT_NETWORK_TIMEOUT, &timeout)
        gk_ldap_set_option(handle, LDAP_OPT_TIMEOUT, &timeout)
        var demand = LDAP_OPT_X_TLS_HARD
        gk_ldap_set_option(handle, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand)
        if let caFile = configuration.caFile {
            _ = caFile.withCString { gk_ldap_set_option(handle, LDAP_OPT_X_TLS_CACERTFILE, $0) }
        }
        var fresh: Int32 = 0
        gk_ldap_set_option(handle, LDAP_OPT_X_TLS_NEWCTX, &fresh)
        // No referrals: a server must not send the password to another.
        gk_ldap_set_option(handle, LDAP_OPT_REFERRALS, nil)
        if uri.hasPrefix("ldap://") && configuration.requiresTLS {
            let status = gk_ldap_start_tls_s(handle, nil, nil)
            guard status == LDAP_SUCCESS else {
                gk_ldap_unbind_ext_s(handle, nil, nil)
                return .failure(Self.failure(status, "StartTLS"))
            }
        }
        return .success(handle)
    }

    /// The attributes ``standing(on:_:)`` reads (operational ones are sent only when named).
    static let standingAttributes = [
        "uid", "pwdChangedTime", "pwdLastSet", "pwdUpdateTime", "modifyTimestamp", "pwdAccountLockedTime",
        "pwdReset", "nsAccountLock", "lockoutTime", "userAccountControl", "shadowExpire", "pwdStartTime",
        "pwdEndTime", "accountExpires", "pwdFailureTime", "passwordRetryCount",
    ]

    /// The account's standing, read with the service account's rights: see
    /// ``LDAPAuthProvider/standing(of:)``. Where a login's own search read it a moment ago (``find(on:_:)``
    /// reads the standing's attributes too), that answers, read before the login's bind: a reset in the moment
    /// between makes the stamp kept older than the directory's, which withdraws the cached password at its next
    /// check, never keeps it.
    func standing(on handle: OpaquePointer, _ username: String) -> Result<AccountStanding, Failure> {
        accountState(on: handle, username).map { state in
            switch state {
            case .ambiguous: .withdrawn(reason: "the filter matches more than one entry")
            case .gone: .withdrawn(reason: "the directory no longer has the account")
            case .locked: .withdrawn(reason: "the account is locked or disabled")
            case .reset: .withdrawn(reason: "the password was reset and must be changed")
            case .expired: .withdrawn(reason: "the account has expired or is not valid yet")
            case .current(_, let stamp): .current(stamp: stamp)
            }
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

    func accountState(on handle: OpaquePointer, _ username: String) -> Result<AccountState, Failure> {
        let found: LDAPEntry?
        switch find(on: handle, username) {
        case .success(let entry): found = entry
        // The login itself is refused so (the filter is ambiguous): no cached password stands for it either.
        case .failure(.refused(let why)) where why == Self.ambiguous: return .success(.ambiguous)
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success(.gone) }
        let now = Int64(time(nil))
        let today = now / 86_400
        if entry.first("pwdAccountLockedTime") != nil || entry.first("nsAccountLock")?.lowercased() == "true"
            || entry.first("lockoutTime").flatMap(Int64.init).map({ $0 != 0 }) == true
            || entry.first("userAccountControl").flatMap(Int64.init).map({ $0 & 0x2 != 0 }) == true
        {
            return .success(.locked)
        }
        if entry.first("pwdReset")?.uppercased() == "TRUE" { return .success(.reset) }
        // Expired: shadowExpire (days since 1970), Active Directory's accountExpires (100 ns since 1601;
        // 0 and the largest value mean never), OpenLDAP 2.6's pwdEndTime — or not valid yet (pwdStartTime).
        let generalizedNow = Self.generalizedTime(now)
        let expired =
            entry.first("shadowExpire").flatMap(Int64.init).map { $0 > 0 && $0 <= today } == true
            || entry.first("accountExpires").flatMap(Int64.init).map {
                $0 != 0 && $0 != Int64.max && $0 / 10_000_000 - 11_644_473_600 <= now
            } == true
            || entry.first("pwdEndTime").flatMap(Self.generalizedPrefix).map { $0 <= generalizedNow } == true
            || entry.first("pwdStartTime").flatMap(Self.generalizedPrefix).map { $0 > generalizedNow } == true
        if expired { return .success(.expired) }
        return .success(.current(entry, stamp: Self.passwordStamp(entry)))
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
            // Groups with the service account's rights (anonymously without one): the connection may be bound
            // as the last user to sign in on it.
            let account = entry.first("uid").flatMap { try? Username.validate($0) } ?? username
            let status = serviceBind(handle)
            guard status == LDAP_SUCCESS else {
                return .failure(
                    status == LDAP_INVALID_CREDENTIALS
                        ? .refused("the service account's bind was refused") : Self.failure(status, "bind"))
            }
            return .success(.valid(identity(of: entry, account, readingGroupsOn: handle)))
        }
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
    /// (``LDAPConnectionPool/foundLifetime``).
    /// - Parameter forBind: For a login's bind: an entry no bind has used yet (``LDAPConnectionPool/found(_:forBind:)``).
    func find(on handle: OpaquePointer, _ username: String, forBind: Bool = false) -> Result<LDAPEntry?, Failure> {
        let key = foundKey(username)
        // An entry that records failed binds may have had them cleared by the bind since (a password policy does
        // at a good bind): read afresh, so that a stamp taken now is the entry's after that bind.
        if let kept = pool.found(key, forBind: forBind), kept?.recordsFailedBinds != true { return .success(kept) }
        switch entries(on: handle, username, attributes: Self.foundAttributes) {
        case .success(let entries):
            guard entries.count <= 1 else { return .failure(.refused(Self.ambiguous)) }
            pool.keep(entries.first, for: key)
            return .success(entries.first)
        case .failure(let failure): return .failure(failure)
        }
    }

    /// What ``find(on:_:forBind:)`` keeps an entry under: the base and the filter.
    func foundKey(_ username: String) -> String { "\(configuration.base)\u{0}\(filter(for: username))" }

    /// The search filter for `username`, escaped.
    private func filter(for username: String) -> String {
        configuration.filter.replacing("%s", with: LDAPAuthProvider.escapedForFilter(username))
    }

    /// The service account's bind (none when the connection is bound as it already), then the entries the
    /// filter finds for `username` (at most two).
    private func entries(on handle: OpaquePointer, _ username: String, attributes: [String]?) -> Result<
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
    private func serviceBind(_ handle: OpaquePointer) -> Int32 {
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
    func attempt(
        on handle: OpaquePointer,
        _ uri: String,
        _ username: String,
        _ password: Secret,
        changesExpired: Bool = false,
        readsGroups: Bool = true,
        _ messages: inout [String]
    ) -> Result<AuthOutcome, Failure> {
        let found: LDAPEntry?
        switch find(on: handle, username, forBind: true) {
        case .success(let entry): found = entry
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success(.notMine) }
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

    /// A password change on a connection: the user's entry, a bind with the current password, and, when
    /// `new` is given, RFC 3062's Password Modify of the entry with the password-policy control.
    func change(on handle: OpaquePointer, _ username: String, current: Secret, new: Secret?, expiredOnly: Bool)
        -> Result<PasswordChangeOutcome, Failure>
    {
        let found: LDAPEntry?
        switch find(on: handle, username, forBind: true) {
        case .success(let entry): found = entry
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success(.notMine) }
        let (status, policy) = bindWithPolicy(handle, entry.dn, current)
        // A change makes what was read of the entry old (its password's stamp): the next login searches afresh.
        pool.forget(foundKey(username))
        switch (status, policy.error) {
        case (LDAP_SUCCESS, _): break
        case (LDAP_INVALID_CREDENTIALS, PP_accountLocked?), (LDAP_INVALID_CREDENTIALS, PP_passwordExpired?):
            // The server takes no bind with this password any more: only an administrator can set another.
            return .success(.rejected(.refusedByPolicy))
        case (LDAP_INVALID_CREDENTIALS, _): return .success(.rejected(.wrongCurrentPassword))
        default: return .failure(Self.failure(status, "bind"))
        }
        if expiredOnly && policy.error != PP_changeAfterReset && policy.grace < 0 { return .success(.ignored) }
        guard let new else { return .success(.changed) }
        var request: UnsafeMutablePointer<LDAPControl>?
        guard gk_ldap_create_passwordpolicy_control(handle, &request) == LDAP_SUCCESS, let request else {
            return .failure(.unavailable("the password-policy control could not be made"))
        }
        defer { gk_ldap_control_free(request) }
        var controls: [UnsafeMutablePointer<LDAPControl>?] = [request, nil]
        var messageID: Int32 = 0
        let sent = entry.dn.withCString { dn in
            current.withUnsafeBytes { old in
                new.withUnsafeBytes { replacement in
                    var user = CLDAPLoader.berval(
                        bv_len: ber_len_t(strlen(dn)), bv_val: UnsafeMutablePointer(mutating: dn))
                    var oldValue = Self.value(old)
                    var newValue = Self.value(replacement)
                    return controls.withUnsafeMutableBufferPointer {
                        gk_ldap_passwd(handle, &user, &oldValue, &newValue, $0.baseAddress, nil, &messageID)
                    }
                }
            }
        }
        guard sent == LDAP_SUCCESS else { return .failure(Self.failure(sent, "password modify")) }
        let (result, diagnostic, modifyPolicy) = awaitResult(handle, messageID)
        if result == LDAP_SUCCESS { return .success(.changed) }
        if let error = modifyPolicy.error, let text = gk_ldap_passwordpolicy_err2txt(error) {
            // ppolicy's own words: "Password is too short for policy", "Password has been changed too
            // recently", "New password is in list of old passwords", "Password fails quality checks".
            return .success(.rejected(.unacceptable(TextSafety.escaped(String(cString: text)))))
        }
        switch result {
        case LDAP_CONSTRAINT_VIOLATION, LDAP_UNWILLING_TO_PERFORM:
            let said = diagnostic.map { TextSafety.escaped($0) } ?? ""
            return .success(.rejected(.unacceptable(said.isEmpty ? "the directory refused it" : said)))
        case LDAP_INSUFFICIENT_ACCESS: return .success(.rejected(.refusedByPolicy))
        default: return .failure(Self.failure(result, "password modify"))
        }
    }

    private static func value(_ bytes: UnsafeRawBufferPointer) -> berval {
        CLDAPLoader.berval(
            bv_len: ber_len_t(bytes.count),
            bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
    }

    /// What the password-policy response control said: its error, grace logins left (-1 when none were
    /// used), seconds to expiry (-1 when not said).
    struct Policy {
        var error: LDAPPasswordPolicyError?
        var grace: Int32 = -1
        var expire: Int32 = -1
    }

    /// A simple bind as `dn` asking for the password-policy control (slapd's ppolicy overlay answers it).
    private func bindWithPolicy(_ handle: OpaquePointer, _ dn: String, _ password: Secret) -> (Int32, Policy) {
        pool.noteServiceBound(handle, false)
        var request: UnsafeMutablePointer<LDAPControl>?
        guard gk_ldap_create_passwordpolicy_control(handle, &request) == LDAP_SUCCESS, let request else {
            return (bind(handle, dn, password), Policy())
        }
        defer { gk_ldap_control_free(request) }
        var controls: [UnsafeMutablePointer<LDAPControl>?] = [request, nil]
        var messageID: Int32 = 0
        let sent = password.withUnsafeBytes { bytes in
            var credential = berval(
                bv_len: ber_len_t(bytes.count),
                bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
            return controls.withUnsafeMutableBufferPointer {
                gk_ldap_sasl_bind(handle, dn, nil, &credential, $0.baseAddress, nil, &messageID)
            }
        }
        guard sent == LDAP_SUCCESS else { return (sent, Policy()) }
        let (status, _, policy) = awaitResult(handle, messageID)
        return (status, policy)
    }

    /// Waits (up to the timeout) for the result of the operation `messageID`: its status, the server's
    /// diagnostic message, and what its password-policy response control said.
    private func awaitResult(_ handle: OpaquePointer, _ messageID: Int32) -> (Int32, String?, Policy) {
        var timeout = timeval(tv_sec: Int(configuration.timeout.components.seconds), tv_usec: 0)
        var result: OpaquePointer?
        let kind = gk_ldap_result(handle, messageID, LDAP_MSG_ALL, &timeout, &result)
        guard kind > 0, let result else {
            if let result { gk_ldap_msgfree(result) }
            return (kind == 0 ? LDAP_TIMEOUT : LDAP_SERVER_DOWN, nil, Policy())
        }
        var status: Int32 = 0
        var diagnostic: UnsafeMutablePointer<CChar>?
        var responses: UnsafeMutablePointer<UnsafeMutablePointer<LDAPControl>?>?
        guard gk_ldap_parse_result(handle, result, &status, nil, &diagnostic, nil, &responses, 1) == LDAP_SUCCESS
        else {
            return (LDAP_SERVER_DOWN, nil, Policy())
        }
        defer {
            if let responses { gk_ldap_controls_free(responses) }
            if let diagnostic { gk_ldap_memfree(diagnostic) }
        }
        let said = diagnostic.flatMap { String(validatingCString: $0) }
        var policy = Policy()
        if let responses, let response = gk_ldap_control_find(LDAP_CONTROL_PASSWORDPOLICYRESPONSE, responses, nil) {
            var expire: ber_int_t = -1
            var grace: ber_int_t = -1
            var error = PP_noError
            if gk_ldap_parse_passwordpolicy_control(handle, response, &expire, &grace, &error) == LDAP_SUCCESS {
                policy = Policy(error: error == PP_noError ? nil : error, grace: grace, expire: expire)
            }
        }
        return (status, said, policy)
    }

    private func bind(_ handle: OpaquePointer, _ dn: String?, _ password: Secret?) -> Int32 {
        guard let dn, let password, password.count > 0 else {
            var empty = berval(bv_len: 0, bv_val: nil)
            return gk_ldap_sasl_bind_s(handle, "", nil, &empty, nil, nil, nil)
        }
        return password.withUnsafeBytes { bytes in
            var credential = berval(
                bv_len: ber_len_t(bytes.count),
                bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
            return gk_ldap_sasl_bind_s(handle, dn, nil, &credential, nil, nil, nil)
        }
    }

    private func search(
        _ handle: OpaquePointer, base: String, filter: String, limit: Int32, attributes: [String]? = nil
    ) -> Result<[LDAPEntry], Failure> {
        var result: OpaquePointer?
        // libldap's list of names: C strings, then a null pointer.
        var names: [UnsafeMutablePointer<CChar>?] = (attributes ?? []).map { strdup($0) } + [nil]
        defer { for name in names { free(name) } }
        let status = names.withUnsafeMutableBufferPointer { list in
            gk_ldap_search_ext_s(
                handle, base, LDAP_SCOPE_SUBTREE, filter, attributes == nil ? nil : list.baseAddress, 0, nil, nil,
                nil, limit, &result)
        }
        defer { if let result { gk_ldap_msgfree(result) } }
        guard status == LDAP_SUCCESS || status == LDAP_SIZELIMIT_EXCEEDED, let result else {
            return .failure(Self.failure(status, "search"))
        }
        var entries: [LDAPEntry] = []
        var message = gk_ldap_first_entry(handle, result)
        while let current = message {
            entries.append(
                LDAPEntry(handle: handle, message: current, reading: attributes ?? LDAPEntry.loginAttributes))
            message = gk_ldap_next_entry(handle, current)
        }
        if status == LDAP_SIZELIMIT_EXCEEDED && entries.count < Int(limit) { entries.append(entries.last!) }
        return .success(entries)
    }

    private static func failure(_ status: Int32, _ step: String) -> Failure {
        let message = gk_ldap_err2string(status).map { String(cString: $0) } ?? "error \(status)"
        switch status {
        case LDAP_TIMEOUT:
            return .timedOut("\(step): \(message)")
        case LDAP_SERVER_DOWN, LDAP_CONNECT_ERROR:
            return .unreachable("\(step): \(message)")
        case LDAP_UNAVAILABLE, LDAP_BUSY:
            return .unavailable("\(step): \(message)")
        default:
            return .refused("\(step): \(message)")
        }
    }

    /// `cn=staff,ou=groups,…` → `staff`.
    static func firstRDNValue(_ dn: String) -> String? {
        guard let equals = dn.firstIndex(of: "="), let comma = dn.firstIndex(of: ",") ?? Optional(dn.endIndex),
            equals < comma
        else { return nil }
        return String(dn[dn.index(after: equals)..<comma])
    }
}

/// An entry's DN and attributes, copied out of libldap's message.
struct LDAPEntry {
    let dn: String
    private var attributes: [String: [String]] = [:]

    /// What a login reads of an entry.
    static let loginAttributes = ["uid", "cn", "uidNumber", "gidNumber", "homeDirectory", "loginShell", "memberOf"]

    /// An entry as given: for tests of what is read from one.
    init(dn: String, attributes: [String: [String]]) {
        self.dn = dn
        self.attributes = attributes
    }

    init(handle: OpaquePointer, message: OpaquePointer, reading names: [String]) {
        if let pointer = gk_ldap_get_dn(handle, message) {
            dn = String(cString: pointer)
            gk_ldap_memfree(pointer)
        } else {
            dn = ""
        }
        for name in names {
            guard let values = gk_ldap_get_values_len(handle, message, name) else { continue }
            var index = 0
            var list: [String] = []
            while let value = values[index] {
                let bytes = UnsafeRawBufferPointer(start: value.pointee.bv_val, count: Int(value.pointee.bv_len))
                if let text = String(validating: bytes, as: UTF8.self) { list.append(text) }
                index += 1
            }
            gk_ldap_value_free_len(values)
            attributes[name] = list
        }
    }

    func values(_ name: String) -> [String] { attributes[name] ?? [] }
    func first(_ name: String) -> String? { attributes[name]?.first }

    /// Whether a password policy has recorded failed binds in it (`pwdFailureTime`, 389-ds's
    /// `passwordRetryCount`).
    var recordsFailedBinds: Bool { first("pwdFailureTime") != nil || first("passwordRetryCount") != nil }
}
