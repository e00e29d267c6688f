/// The shared login: at most one login in flight, and the tasks waiting for its result.
///
/// A pure state machine, kept inside the gatekeeper's one lock: every transition returns the effects
/// (continuations to resume, tasks to cancel) to deliver once the lock is released, so nothing runs
/// while it is held. Tested on its own, without a gatekeeper.
///
/// A flight's result reaches each of its waiters exactly once, whether the waiter had suspended yet or
/// not. A waiter that leaves is told `cancelled`; when the last *interested* waiter leaves, the flight is
/// abandoned and its task cancelled. Waiters queued behind someone else's login are not interested in
/// it: they only want to know when it ends, to start their own.
struct SingleFlight: ~Copyable {
    /// A login's answer, with the trace of the stack's answer to its last attempt.
    typealias Result = Traced<Swift.Result<Identity, AuthError>>

    /// The answer of a login nobody waits for any more.
    static let cancelled = Result(.failure(.cancelled))

    /// The login in progress.
    struct Flight {
        let id: UInt64
        var task: Task<Void, Never>?
        /// The trace of the stack's answer to the login's latest attempt, so far: what a waiter that leaves
        /// (a Ctrl-C during the fail delay) is told with its `cancelled`.
        var trace: ProviderChain.Trace?
    }

    /// A task waiting for a flight's result.
    struct Waiter {
        enum State {
            /// Registered, not yet suspended.
            case pending
            case waiting(CheckedContinuation<Result, Never>)
            /// The result arrived (or the waiter left) before it suspended.
            case finished(Result)
        }

        let flightID: UInt64
        let interested: Bool
        var state: State
    }

    /// What to do after the lock is released.
    struct Effects {
        var resumes: [(CheckedContinuation<Result, Never>, Result)] = []
        var cancellations: [Task<Void, Never>] = []
        /// A login in progress was abandoned (the caller audits it as cancelled).
        var abandoned = false

        /// Resumes waiters and cancels abandoned logins. Call it without holding the lock.
        func deliver() {
            for (continuation, result) in resumes { continuation.resume(returning: result) }
            for task in cancellations { task.cancel() }
        }
    }

    private(set) var flight: Flight?
    private(set) var waiters: [UInt64: Waiter] = [:]
    private var lastID: UInt64 = 0
    /// Effects of the transitions since the last ``takeEffects()``.
    private var pending = Effects()

    var isInFlight: Bool { flight != nil }

    private mutating func nextID() -> UInt64 {
        lastID += 1
        return lastID
    }

    /// Joins the flight in progress, or starts one when there is none.
    /// - Parameter joinExisting: Whether to share a login already in progress; otherwise wait for it to
    ///   end (as an uninterested waiter) and then try again.
    /// - Returns: the waiter's ID, the ID of a flight this call started (its caller must start the login
    ///   task and ``attach(_:to:)`` it), and whether the waiter only queued behind another login.
    mutating func join(joinExisting: Bool) -> (waiter: UInt64, started: UInt64?, queued: Bool) {
        if let flight {
            return (addWaiter(for: flight.id, interested: joinExisting), nil, !joinExisting)
        }
        let flightID = nextID()
        flight = Flight(id: flightID)
        return (addWaiter(for: flightID, interested: true), flightID, false)
    }

    private mutating func addWaiter(for flightID: UInt64, interested: Bool) -> UInt64 {
        let id = nextID()
        waiters[id] = Waiter(flightID: flightID, interested: interested, state: .pending)
        return id
    }

    /// Records the task of a flight; `false` when the flight ended before (the caller cancels the task).
    mutating func attach(_ task: Task<Void, Never>, to flightID: UInt64) -> Bool {
        guard flight?.id == flightID else { return false }
        flight?.task = task
        return true
    }

    /// The stack answered an attempt of flight `flightID` with `trace`.
    mutating func note(_ trace: ProviderChain.Trace, for flightID: UInt64) {
        guard flight?.id == flightID else { return }
        flight?.trace = trace
    }

    /// `cancelled`, with the trace of flight `flightID`'s latest answered attempt while it is in the air.
    private func cancelled(from flightID: UInt64) -> Result {
        Result(.failure(.cancelled), trace: flight?.id == flightID ? flight?.trace : nil)
    }

    /// The result for a waiter about to suspend, if it is already there (then the waiter is gone);
    /// otherwise keeps `continuation` to resume later and returns `nil`.
    mutating func receive(_ waiterID: UInt64, orSuspend continuation: CheckedContinuation<Result, Never>) -> Result? {
        guard let waiter = waiters[waiterID] else { return Self.cancelled }
        switch waiter.state {
        case .finished(let result):
            waiters[waiterID] = nil
            return result
        case .pending:
            waiters[waiterID]?.state = .waiting(continuation)
            return nil
        case .waiting:
            preconditionFailure("a waiter suspends once")
        }
    }

    /// A waiter stops waiting: it is told `cancelled` (with the login's trace so far), and if nobody else wants the login, the flight is
    /// abandoned.
    mutating func leave(_ waiterID: UInt64) {
        guard let waiter = waiters[waiterID] else { return }
        switch waiter.state {
        case .waiting(let continuation):
            waiters[waiterID] = nil
            pending.resumes.append((continuation, cancelled(from: waiter.flightID)))
        case .pending:
            let result = cancelled(from: waiter.flightID)
            waiters[waiterID]?.state = .finished(result)
        case .finished:
            return
        }
        if let flight, flight.id == waiter.flightID, !hasInterestedWaiters(flight.id) {
            abandon()
        }
    }

    /// The flight `flightID` ended with `result`. Returns whether it was still the current one (an
    /// abandoned flight's late result goes to nobody).
    mutating func land(_ flightID: UInt64, with result: Result) -> Bool {
        guard flight?.id == flightID else { return false }
        flight = nil
        settle(flightID, with: result)
        return true
    }

    /// Ends the flight in progress without a result: its waiters are told `cancelled` and its task is
    /// cancelled. Whatever the task later returns is discarded.
    mutating func abandon() {
        guard let flight else { return }
        self.flight = nil
        settle(flight.id, with: Result(.failure(.cancelled), trace: flight.trace))
        if let task = flight.task { pending.cancellations.append(task) }
        pending.abandoned = true
    }

    /// The effects of the transitions since the last call, to deliver once the lock is released.
    mutating func takeEffects() -> Effects {
        defer { pending = Effects() }
        return pending
    }

    /// Delivers `result` to every waiter of `flightID`, now or when it starts waiting.
    private mutating func settle(_ flightID: UInt64, with result: Result) {
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

    /// Whether any waiter still wants the result of `flightID`.
    private func hasInterestedWaiters(_ flightID: UInt64) -> Bool {
        waiters.values.contains { waiter in
            guard waiter.flightID == flightID, waiter.interested else { return false }
            if case .finished = waiter.state { return false }
            return true
        }
    }
}
