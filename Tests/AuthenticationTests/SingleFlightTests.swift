import TestSupport
import Testing

@testable import Authentication

/// The state machine behind a lock, as the gatekeeper keeps it.
private final class Shared: Sendable {
    let machine = Locked(SingleFlight())

    func withLock<T>(_ body: (inout SingleFlight) -> T) -> T { machine.withLock { body(&$0) } }
}

/// The shared login as a state machine, without a gatekeeper: who gets which result, and when a login
/// is abandoned.
@Suite(.timeLimit(.minutes(1)))
struct SingleFlightTests {
    let alice = Identity(username: "alice", provider: "test")

    /// Waits for `waiter`'s result as the gatekeeper does: at once if it is there, or suspended until the
    /// effects of a later transition deliver it.
    private func result(of waiter: UInt64, in state: Shared) async -> SingleFlight.Result {
        await withCheckedContinuation { continuation in
            if let ready = state.withLock({ $0.receive(waiter, orSuspend: continuation) }) {
                continuation.resume(returning: ready)
            }
        }
    }

    @Test func everyWaiterGetsTheOneResultOnceWhetherOrNotItSuspendedYet() async throws {
        let state = Shared()
        let first = state.withLock { $0.join(joinExisting: true) }
        let second = state.withLock { $0.join(joinExisting: true) }
        #expect(first.started != nil && second.started == nil && !second.queued)
        let suspended = Task { await result(of: second.waiter, in: state) }
        #expect(
            await eventually {
                state.withLock { if case .waiting = $0.waiters[second.waiter]?.state { true } else { false } }
            })
        let effects = state.withLock { state in
            _ = state.land(first.started!, with: Traced(.success(alice)))
            return state.takeEffects()
        }
        #expect(effects.resumes.count == 1)  // The suspended one; the other finds its result on arrival.
        effects.deliver()
        #expect(try await suspended.value.outcome.get() == alice)
        #expect(try await result(of: first.waiter, in: state).outcome.get() == alice)
        #expect(state.withLock { $0.waiters.isEmpty && !$0.isInFlight })
    }

    @Test func theLoginEndsWhenItsLastInterestedWaiterLeaves() {
        let state = Shared()
        let login = Task<Void, Never> { try? await Task.sleep(for: .seconds(3600)) }
        let first = state.withLock { $0.join(joinExisting: true) }
        #expect(state.withLock { $0.attach(login, to: first.started!) })
        let second = state.withLock { $0.join(joinExisting: true) }
        let queued = state.withLock { $0.join(joinExisting: false) }  // An explicit sign-in, waiting its turn.
        #expect(queued.queued)
        let afterFirst = state.withLock { state in
            state.leave(first.waiter)
            return state.takeEffects()
        }
        #expect(!afterFirst.abandoned && state.withLock { $0.isInFlight })
        let afterSecond = state.withLock { state in
            state.leave(second.waiter)
            return state.takeEffects()
        }
        // The queued sign-in wants no part of this login: it does not keep it alive.
        #expect(afterSecond.abandoned)
        #expect(afterSecond.cancellations.count == 1)
        afterSecond.deliver()
        #expect(login.isCancelled)
        // A late result of the abandoned login goes to nobody.
        #expect(!state.withLock { $0.land(first.started!, with: Traced(.success(alice))) })
    }

    @Test func aLoginAbandonedBeforeItsTaskIsKnownRefusesTheTask() {
        let state = Shared()
        let first = state.withLock { $0.join(joinExisting: true) }
        state.withLock { $0.leave(first.waiter) }
        let late = Task<Void, Never> {}
        #expect(!state.withLock { $0.attach(late, to: first.started!) })
    }
}
