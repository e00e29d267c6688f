import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

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
    func pooled<T>(_ uri: String, _ operation: Operation<T>, _ messages: inout [String]) -> Result<T, Failure> {
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
    func connect(_ uri: String) -> Result<OpaquePointer, Failure> {
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
}
