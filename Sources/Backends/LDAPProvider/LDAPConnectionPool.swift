import Authentication
import CLDAPLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Connections kept open between logins — connected, TLS set up — so a login pays for the handshake only
/// when no connection is idle. At most `capacity` are open at once, in use or idle; a login that finds
/// them all in use waits for one (at most `wait`). A server that failed to answer is skipped for a while,
/// one second after its first failure, doubling to thirty — unless every server is in that state and it
/// failed at once (a refused connection is cheap to try again); one that timed out is skipped all the same
/// (trying it again would cost the login another time-out: the offline cache answers meanwhile).
final class LDAPConnectionPool: @unchecked Sendable {
    let capacity: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let freed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var idle: [String: [OpaquePointer]] = [:]
    private var open = 0
    private var down: [String: (until: Int64, backoff: Int64, timedOut: Bool)] = [:]
    /// Connections bound as the service account (or anonymously, without one) and not since as anyone else: a
    /// search on them needs no bind first.
    private var serviceBound: Set<OpaquePointer> = []
    /// Searches for one user's entry answered a moment ago (``found(_:)``), by base, filter and name, and whether
    /// a bind has used the entry since.
    private var found: [String: (at: Int64, entry: LDAPEntry?, bound: Bool)] = [:]
    /// For tests and `make bench`: the most connections ever open at once, and how many were made.
    private(set) var mostOpen = 0
    private(set) var made = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(freed, nil)
    }

    deinit {
        // Released on whatever thread lets go last; an unbind to a server that is gone must not raise SIGPIPE.
        BrokenPipes.suppressed {
            for handles in idle.values { for handle in handles { gk_ldap_unbind_ext_s(handle, nil, nil) } }
        }
        pthread_cond_destroy(freed)
        pthread_mutex_destroy(mutex)
        freed.deallocate()
        mutex.deallocate()
    }

    enum Grant {
        /// An idle connection to reuse.
        case reuse(OpaquePointer)
        /// Room for a new connection, which the caller makes (then ``counted()`` or ``release()``).
        case connect
        /// Every connection stayed in use for longer than `wait`.
        case busy
    }

    /// An idle connection to `uri`, or room to make one.
    func take(_ uri: String, wait: Duration) -> Grant {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let deadline = ContinuousClock.now + wait
        while true {
            if let handle = idle[uri]?.popLast() { return .reuse(handle) }
            if open < capacity {
                open += 1
                mostOpen = max(mostOpen, open)
                return .connect
            }
            // Full: close an idle connection to another server to make room, or wait for one.
            if let other = idle.first(where: { !$0.value.isEmpty })?.key, let handle = idle[other]?.popLast() {
                serviceBound.remove(handle)
                gk_ldap_unbind_ext_s(handle, nil, nil)
                open -= 1
                continue
            }
            guard ContinuousClock.now < deadline else { return .busy }
            var until = timespec()
            clock_gettime(CLOCK_REALTIME, &until)
            until.tv_nsec += 50_000_000
            if until.tv_nsec >= 1_000_000_000 {
                until.tv_sec += 1
                until.tv_nsec -= 1_000_000_000
            }
            pthread_cond_timedwait(freed, mutex, &until)
        }
    }

    /// A new connection was made in the room ``take(_:wait:)`` granted.
    func counted() {
        pthread_mutex_lock(mutex)
        made += 1
        pthread_mutex_unlock(mutex)
    }

    /// The room was not used (the connection could not be made).
    func release() {
        pthread_mutex_lock(mutex)
        open -= 1
        pthread_cond_signal(freed)
        pthread_mutex_unlock(mutex)
    }

    /// A connection comes back: kept for the next login when `healthy`, closed otherwise.
    func give(_ handle: OpaquePointer, to uri: String, healthy: Bool) {
        pthread_mutex_lock(mutex)
        if healthy {
            idle[uri, default: []].append(handle)
        } else {
            serviceBound.remove(handle)
            gk_ldap_unbind_ext_s(handle, nil, nil)
            open -= 1
        }
        pthread_cond_signal(freed)
        pthread_mutex_unlock(mutex)
    }

    /// Whether `handle` is bound as the service account now.
    func isServiceBound(_ handle: OpaquePointer) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return serviceBound.contains(handle)
    }

    /// Notes what `handle` is bound as: before any other bind is sent, `false` (whatever it answers, the
    /// connection is no longer the service's); after the service's bind succeeded, `true`.
    func noteServiceBound(_ handle: OpaquePointer, _ bound: Bool) {
        pthread_mutex_lock(mutex)
        if bound { serviceBound.insert(handle) } else { serviceBound.remove(handle) }
        pthread_mutex_unlock(mutex)
    }

    /// How long a user's entry found by a search is used again: long enough for the login that looked the
    /// name up to bind with it and for the account check that follows (PAM's `acct_mgmt`), short enough that
    /// nothing is decided on it — the bind itself goes to the server, which refuses an entry locked or gone.
    static let foundLifetime: Int64 = 5_000

    /// The entry a search for `key` found less than ``foundLifetime`` ago (`.some(nil)`: none), or `nil`. With
    /// `forBind`, only one no bind has used yet: each login's bind gets an entry searched for that login, so the
    /// standing read with it (the offline cache's stamp) is never an earlier login's.
    func found(_ key: String, forBind: Bool = false) -> LDAPEntry?? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let kept = found[key], Self.now() - kept.at < Self.foundLifetime, !(forBind && kept.bound) else {
            return nil
        }
        return .some(kept.entry)
    }

    /// Keeps what a search for `key` found; at most 4,096 searches are kept, the expired ones dropped first.
    /// - Parameter forBinds: Whether a login's bind may use it (``found(_:forBind:)``); not one read after a
    ///   login's answer, which may be older than the next login's bind.
    func keep(_ entry: LDAPEntry?, for key: String, forBinds: Bool = true) {
        pthread_mutex_lock(mutex)
        let now = Self.now()
        if found.count >= 4_096 { found = found.filter { now - $0.value.at < Self.foundLifetime } }
        if found.count >= 4_096 { found.removeAll() }
        found[key] = (now, entry, !forBinds)
        pthread_mutex_unlock(mutex)
    }

    /// What was found for `key` is no longer to be used.
    func forget(_ key: String) {
        pthread_mutex_lock(mutex)
        found[key] = nil
        pthread_mutex_unlock(mutex)
    }

    /// A bind used the entry found for `key`.
    func bound(_ key: String) {
        pthread_mutex_lock(mutex)
        found[key]?.bound = true
        pthread_mutex_unlock(mutex)
    }

    /// How `uri` failed, if recently enough to be skipped now.
    enum Rest {
        /// It refused or closed at once.
        case failed
        /// It did not answer in time.
        case timedOut
    }

    func rest(of uri: String) -> Rest? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let state = down[uri], Self.now() < state.until else { return nil }
        return state.timedOut ? .timedOut : .failed
    }

    func failed(_ uri: String, timedOut: Bool) {
        pthread_mutex_lock(mutex)
        let previous = down[uri]?.backoff ?? 0
        let backoff: Int64 = previous == 0 ? 1_000 : min(previous * 2, 30_000)
        down[uri] = (Self.now() + backoff, backoff, timedOut)
        // Its idle connections are of no use either.
        for handle in idle[uri] ?? [] {
            serviceBound.remove(handle)
            gk_ldap_unbind_ext_s(handle, nil, nil)
            open -= 1
        }
        idle[uri] = []
        pthread_mutex_unlock(mutex)
    }

    func answered(_ uri: String) {
        pthread_mutex_lock(mutex)
        down[uri] = nil
        pthread_mutex_unlock(mutex)
    }

    /// Milliseconds on the monotonic clock.
    private static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

extension LDAPConnectionPool {
    /// What makes two providers' connections interchangeable: the same servers, reached the same way, as
    /// the same service account, with the same bound.
    struct Key: Hashable {
        let uris: [String]
        let requiresTLS: Bool
        let caFile: String?
        let timeout: Duration
        let bindDN: String?
        /// The service account's password, hashed: a connection bound with one password is never taken for a
        /// provider configured with another.
        let bindPassword: [UInt8]?
        let connections: Int
    }

    /// The pools in use, each held weakly: a pool lives as long as a provider uses it.
    private static let pools = Locked<[Key: WeakPool]>([:])

    private final class WeakPool: @unchecked Sendable {
        weak var pool: LDAPConnectionPool?
        init(_ pool: LDAPConnectionPool) { self.pool = pool }
    }

    /// The process's one pool for `configuration`'s directory: every provider naming the same servers the
    /// same way — each PAM service's stack in gatekeeperd, a stack read again at SIGHUP — shares its
    /// connections, its bound on them, and what it knows of servers that are down, so a failover one login
    /// saw is seen by the next login of every program.
    static func shared(for configuration: LDAPAuthProvider.Configuration) -> LDAPConnectionPool {
        let key = Key(
            uris: configuration.uris, requiresTLS: configuration.requiresTLS, caFile: configuration.caFile,
            timeout: configuration.timeout, bindDN: configuration.bindDN,
            bindPassword: configuration.bindPassword?.withUnsafeBytes { SHA256.hash($0) },
            connections: configuration.connections)
        return pools.withLock { pools in
            if let pool = pools[key]?.pool { return pool }
            pools = pools.filter { $0.value.pool != nil }
            let pool = LDAPConnectionPool(capacity: configuration.connections)
            pools[key] = WeakPool(pool)
            return pool
        }
    }
}
