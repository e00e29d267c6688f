/// An open session. Times are ``SessionClock`` nanoseconds; `Int64.max` stands for "never".
struct Session {
    let identity: Identity
    /// When the absolute timeout ends the session.
    let absoluteDeadline: Int64
    /// When the session ends unless used again: the earlier of the idle and absolute deadlines.
    private(set) var expiry: Int64

    init(identity: Identity, at now: Int64, _ timeouts: Timeouts) {
        self.identity = identity
        self.absoluteDeadline = timeouts.absolute.map { SessionClock.adding(now, $0) } ?? .max
        self.expiry = absoluteDeadline
        touch(at: now, timeouts)
    }

    /// Records a use at `now`, which moves the idle deadline.
    @inline(__always)
    mutating func touch(at now: Int64, _ timeouts: Timeouts) {
        guard let idle = timeouts.idle else { return }
        expiry = min(SessionClock.adding(now, idle), absoluteDeadline)
    }

    @inline(__always)
    func isExpired(at now: Int64) -> Bool {
        now >= expiry
    }
}

/// The configured timeouts in nanoseconds, converted once.
struct Timeouts: Sendable {
    let idle: Int64?
    let absolute: Int64?
    /// Whether sessions last until signed out, so checking one needs no clock.
    let areNone: Bool

    init(_ configuration: Gatekeeper.Configuration) {
        idle = configuration.sessions.idleTimeout.map(SessionClock.nanoseconds)
        absolute = configuration.sessions.absoluteTimeout.map(SessionClock.nanoseconds)
        areNone = idle == nil && absolute == nil
    }
}
