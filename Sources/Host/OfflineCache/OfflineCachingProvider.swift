public import Authentication
import GatekeeperSupport
package import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// Logins that keep working while a backend is unreachable, as SSSD's `cache_credentials` — without its
/// unlimited offline guessing.
///
/// Wraps a provider that reports reachability. After each online success it keeps, for that user, a
/// yescrypt verifier of the password, the identity's display name and groups, and the time, in a file
/// only root (or the running user) can read. Only when **no server can be reached** is the login checked
/// against that verifier instead, if it is younger than `maxAge`; the identity then says `offline: yes`.
/// Any other failure — a server that refuses the service account, a search it refuses — is passed on as
/// it is.
///
/// Offline attempts are counted per user *before* the verifier is checked, under one lock on the cache
/// that every process shares, so that at most `maxOfflineFailures` guesses are ever checked; the entry
/// then refuses every offline login until the next online success. A backend that says the account is
/// gone, locked or expired, or that the password is wrong, removes its entry at once: an old password
/// is never admitted after a new one was set online.
///
/// While the servers are reachable the cache is kept true as SSSD's refresh keeps its own: each entry
/// carries the backend's password stamp (``AccountStanding``) from when it was saved, and every entry
/// checked more than `refreshInterval` ago is asked about again — a few at every online login of any
/// user, all of them by ``refresh(dueOnly:limit:)`` (`gatekeeper-run --refresh-offline`). An entry whose
/// account is gone, locked or expired, or whose stamp changed (a reset), is removed.
public final class OfflineCachingProvider: AuthProvider {
    public let inner: any ReachabilityReporting
    public var name: String { inner.name }
    public let maxAge: Duration
    public let maxOfflineFailures: Int
    /// How long an entry goes unchecked while the servers are reachable.
    public let refreshInterval: Duration
    /// How many due entries an online login checks, after its own answer: a bound on what it adds.
    public static let refreshesPerLogin = 4
    let directory: StateDirectory
    /// `offline-logins-` and the first 16 bytes of the SHA-256 of the backend's ``ReachabilityReporting/offlineScope``
    /// in hexadecimal; the lock beside it with `.lock` added.
    let fileName: String
    var lockName: String { fileName + ".lock" }
    /// Seconds since the epoch, what an entry's age is measured on: the system's clock but in tests.
    let clock: @Sendable () -> Int64
    /// The scheme verifiers are made with: yescrypt, but in tests that save thousands (a cheaper one, the
    /// cache's rules being the same whatever the hash).
    let verifierScheme: PasswordHash.Scheme

    /// In this process one change at a time; across processes, the lock file.
    let lock = Locked(())

    /// The order in which online answers came, per account: each answer takes a ticket, and only the newest
    /// answer's success writes (``isNewest(_:of:_:_:)``).
    let order = LoginOrder()

    /// The verifiers this process wrote, each with a keyed digest of the password it was made of: what
    /// lets an online login of an unchanged password renew its entry instead of hashing the password again
    /// (yescrypt's cost, on every login's path, is what an offline cache is otherwise slowest at).
    ///
    /// The digest is HMAC-SHA-256 under a key made of 32 random bytes drawn when the cache is made and the
    /// account's name, so equal passwords of two accounts have unequal digests; key and digests live in this
    /// process's memory only, never in a file, a log or an error. A reader of the process's memory could
    /// test guesses against a digest faster than against a verifier — and could read the passwords
    /// themselves as they arrive: gatekeeperd is not dumpable.
    let writes = Writes()

    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the directory cannot be used safely.
    public convenience init(
        wrapping inner: any ReachabilityReporting,
        directory: String,
        maxAge: Duration,
        maxOfflineFailures: Int = 5,
        refreshInterval: Duration = .seconds(15 * 60)
    ) throws(AuthError) {
        try self.init(
            wrapping: inner, directory: directory, maxAge: maxAge, maxOfflineFailures: maxOfflineFailures,
            refreshInterval: refreshInterval, clock: { Int64(time(nil)) })
    }

    /// The cache, its times (seconds since the epoch) read from `clock` instead of the system's clock: for
    /// tests, which move time on rather than wait for it.
    package init(
        wrapping inner: any ReachabilityReporting,
        directory: String,
        maxAge: Duration,
        maxOfflineFailures: Int = 5,
        refreshInterval: Duration = .seconds(15 * 60),
        clock: @escaping @Sendable () -> Int64,
        verifierScheme: PasswordHash.Scheme = .yescrypt
    ) throws(AuthError) {
        self.inner = inner
        self.maxAge = maxAge
        self.maxOfflineFailures = maxOfflineFailures
        self.refreshInterval = refreshInterval
        self.clock = clock
        self.verifierScheme = verifierScheme
        let digest = SHA256.hash(Array(inner.offlineScope.utf8)).prefix(16)
        self.fileName = "offline-logins-" + digest.hexadecimal
        let opened: StateDirectory
        do {
            opened = try StateDirectory(directory, creatingWith: 0o700)
        } catch {
            throw .providerUnavailable(reason: "the offline cache cannot be used: \(error)")
        }
        self.directory = opened
        // Refused as a bind password's file others can read is: said at once, not found at the first outage.
        do {
            close(try opened.openFile(fileName, creatingWith: nil, secret: true))
        } catch  where error.isExposed {
            throw .providerUnavailable(reason: "the offline cache cannot be used: \(error)")
        } catch {}
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let capturing = CapturingConversation(request.conversation)
        var forwarded = request
        forwarded.conversation = capturing
        // When the password went to the backend: what orders this login's saving among the others' (an answer
        // that comes late speaks of the password as it was then, not as it is when it arrives).
        let begun = Begun(ticket: order.begin(), at: clock())
        let outcome: AuthOutcome
        let online = try await inner.loginOnline(forwarded)
        switch online.answer {
        case .unreachable(let reason):
            return try await offline(request, capturing, onlineOutcome: .unavailable(reason: reason))
        case .answered(let answer):
            outcome = answer
        }
        await remember(
            outcome, typed: request.username, password: capturing.password, begun: begun,
            standingBefore: online.standingBefore, standingAfter: online.standingAfter)
        // A server answered (and served): entries of other accounts not checked for a while are asked
        // about now.
        switch outcome {
        case .unavailable: break
        case .authenticated(let identity): await refresh(limit: Self.refreshesPerLogin, skipping: identity.username)
        default: await refresh(limit: Self.refreshesPerLogin, skipping: request.username)
        }
        return outcome
    }
}
