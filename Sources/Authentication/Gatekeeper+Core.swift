/// The gatekeeper's mutable state, only ever touched inside its `Mutex`.
struct Core: ~Copyable {
    var session: Session?
    var flight: Flight?
    var waiters: [UInt64: Waiter] = [:]
    var observers: [UInt64: AsyncStream<Gatekeeper.State>.Continuation] = [:]
    var lastBroadcast: Gatekeeper.State = .signedOut
    var failures = FailureTable()
    private var lastID: UInt64 = 0

    mutating func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }

    func state(at now: Int64, clock: SessionClock) -> Gatekeeper.State {
        if flight != nil { return .authenticating }
        if let session, !session.isExpired(at: now) {
            return .signedIn(session.identity, expires: session.expiry == .max ? nil : clock.instant(session.expiry))
        }
        return .signedOut
    }

    /// Work to do once the lock is released: resuming waiters, cancelling tasks.
    var pending = Effects()

    /// Runs `change`, then broadcasts the new state to every observer if it differs from the last one
    /// sent. Observers are told inside the lock, so they see transitions in the order they happened.
    /// Returns what `change` returned and the effects to ``Effects/deliver()`` once the lock is released.
    mutating func transition<T>(
        at now: Int64,
        clock: SessionClock,
        _ change: (inout Core) -> T
    ) -> (T, Effects) {
        let result = change(&self)
        let state = state(at: now, clock: clock)
        if state != lastBroadcast {
            lastBroadcast = state
            for observer in observers.values { observer.yield(state) }
        }
        let effects = pending
        pending = Effects()
        return (result, effects)
    }

    // MARK: Single flight

    /// Registers a waiter for `flightID`. `interested` waiters keep the login alive; a waiter queued
    /// behind someone else's login only wants to know when it ends.
    mutating func addWaiter(for flightID: UInt64, interested: Bool) -> UInt64 {
        let id = nextID()
        waiters[id] = Waiter(flightID: flightID, interested: interested, state: .pending)
        return id
    }

    /// Delivers `result` to every waiter of `flightID`, now or when it starts waiting.
    mutating func settle(_ flightID: UInt64, with result: Result<Identity, AuthError>) {
        for (id, waiter) in waiters where waiter.flightID == flightID {
            switch waiter.state {
            case .waiting(let continuation):
                waiters[id] = nil
                pending.resumes.append((continuation, result))
            case .pending:
                waiters[id]?.state = .finished(result)
            case .finished:
                continue
            }
        }
    }

    /// Ends the login in progress without a result: its waiters are told `cancelled` and its task is
    /// cancelled. Whatever the task later returns is discarded.
    mutating func abandon(_ flight: Flight) {
        self.flight = nil
        settle(flight.id, with: .failure(.cancelled))
        if let task = flight.task { pending.cancellations.append(task) }
        pending.abandoned = true
    }

    /// Whether any waiter still wants the result of `flightID`.
    func hasInterestedWaiters(_ flightID: UInt64) -> Bool {
        waiters.values.contains { waiter in
            guard waiter.flightID == flightID, waiter.interested else { return false }
            if case .finished = waiter.state { return false }
            return true
        }
    }
}

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
        idle = configuration.idleTimeout.map(SessionClock.nanoseconds)
        absolute = configuration.absoluteTimeout.map(SessionClock.nanoseconds)
        areNone = idle == nil && absolute == nil
    }
}

/// A login in progress, shared by every protected action that needs it.
struct Flight {
    let id: UInt64
    var task: Task<Void, Never>?
}

/// A task waiting for a login's result.
struct Waiter {
    enum State {
        /// Registered, not yet suspended.
        case pending
        case waiting(CheckedContinuation<Result<Identity, AuthError>, Never>)
        /// The result arrived (or the waiter was cancelled) before it suspended.
        case finished(Result<Identity, AuthError>)
    }

    let flightID: UInt64
    let interested: Bool
    var state: State
}

/// What to do after the lock is released.
struct Effects {
    var resumes: [(CheckedContinuation<Result<Identity, AuthError>, Never>, Result<Identity, AuthError>)] = []
    var cancellations: [Task<Void, Never>] = []
    /// A login in progress was abandoned (the caller audits it as cancelled).
    var abandoned = false

    /// Resumes waiters and cancels abandoned logins. Call it without holding the lock.
    func deliver() {
        for (continuation, result) in resumes { continuation.resume(returning: result) }
        for task in cancellations { task.cancel() }
    }
}

/// Consecutive failed logins per user name, for the lockout.
struct FailureTable {
    private struct Record {
        var count = 0
        var lockedUntil: Int64?
    }

    /// Bounds the memory an attacker can make the table use by trying many names.
    private static let capacity = 10_000
    private var records: [String: Record] = [:]

    /// How long `username` is still locked out, if it is.
    func lockout(of username: String, at now: Int64) -> Duration? {
        guard let until = records[username]?.lockedUntil, until > now else { return nil }
        return .nanoseconds(until - now)
    }

    /// Counts a failure; returns `true` if it locked the user name out.
    mutating func registerFailure(
        of username: String,
        at now: Int64,
        threshold: Int,
        duration: Duration
    ) -> Bool {
        if records.count >= Self.capacity, records[username] == nil { prune(at: now) }
        var record = records[username] ?? Record()
        if let until = record.lockedUntil, until <= now { record = Record() }
        record.count += 1
        let locked = record.count >= threshold
        if locked {
            record.count = 0
            record.lockedUntil = SessionClock.adding(now, SessionClock.nanoseconds(duration))
        }
        records[username] = record
        return locked
    }

    mutating func clear(_ username: String) {
        records[username] = nil
    }

    private mutating func prune(at now: Int64) {
        records = records.filter { _, record in record.lockedUntil.map { $0 > now } ?? false }
        if records.count >= Self.capacity { records.removeAll(keepingCapacity: true) }
    }
}
