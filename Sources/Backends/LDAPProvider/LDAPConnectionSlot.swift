import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// The connection of a login in progress, so a cancellation can shut its socket.
final class LDAPConnectionSlot: Sendable {
    /// The connection (a libldap handle, used here only to find its socket) and whether the login was cancelled.
    private struct State: @unchecked Sendable {
        var handle: OpaquePointer?
        var cancelled = false
    }
    private let state = Locked(State())

    /// Records `handle`; `false` if the login was cancelled already.
    func set(_ handle: OpaquePointer?) -> Bool {
        state.withLock { state in
            state.handle = handle
            return !state.cancelled
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

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
        state.withLock { state in
            state.cancelled = true
            guard let handle = state.handle else { return false }
            var socket: Int32 = -1
            guard gk_ldap_get_option(handle, LDAP_OPT_DESC, &socket) == LDAP_OPT_SUCCESS, socket >= 0 else {
                return false
            }
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
            return true
        }
    }
}
