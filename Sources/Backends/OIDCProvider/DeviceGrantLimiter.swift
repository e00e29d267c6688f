import GatekeeperSupport

/// How many device sign-ins one origin may start: at most ``perOrigin`` within any ``window``, per provider.
///
/// A device sign-in asks the identity provider for a code before anyone has proved anything: without a
/// bound, whoever can reach sshd has the daemon mint codes as fast as sshd lets them connect — load on the
/// identity provider, and fresh codes to phish people with. An origin is the remote host the login comes
/// from (sshd's `PAM_RHOST`), else the local account asking (`PAM_RUSER`), else this host. The table
/// keeps at most ``origins`` origins: past that, the one that started nothing for longest is forgotten
/// (many addresses are bounded by sshd's `MaxStartups` and the identity provider's own limits, not here).
final class DeviceGrantLimiter: Sendable {
    static let perOrigin = 5
    static let window = Duration.seconds(60)
    static let origins = 4096

    private let starts = Locked<[String: [ContinuousClock.Instant]]>([:])

    /// Whether `origin` may start a device sign-in at `now`; if so, it is counted.
    func admit(_ origin: String, at now: ContinuousClock.Instant = .now) -> Bool {
        starts.withLock { starts in
            let recent = (starts[origin] ?? []).filter { now - $0 < Self.window }
            guard recent.count < Self.perOrigin else {
                starts[origin] = recent
                return false
            }
            if starts[origin] == nil && starts.count >= Self.origins {
                starts = starts.filter { $0.value.contains { now - $0 < Self.window } }
                if starts.count >= Self.origins,
                    let stalest = starts.min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })?.key
                {
                    starts[stalest] = nil
                }
            }
            starts[origin] = recent + [now]
            return true
        }
    }

    /// How many origins are kept now.
    var count: Int { starts.withLock { $0.count } }

    /// The origin of a login: its remote host, else the local account asking, else this host.
    static func origin(remoteHost: String?, requestingUser: String?) -> String {
        if let remoteHost, !remoteHost.isEmpty { return remoteHost }
        if let requestingUser, !requestingUser.isEmpty { return "the account " + requestingUser }
        return "this host"
    }
}
