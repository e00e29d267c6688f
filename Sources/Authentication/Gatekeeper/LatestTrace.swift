import GatekeeperSupport

/// The trace of the latest login attempt or password change a gatekeeper began, as its stack answered.
/// Each begins with a number, in order; a trace numbered below the one kept (an abandoned login whose
/// backend answers after a later login has) replaces nothing.
final class LatestTrace: Sendable {
    private let storage = Locked<(begun: UInt64, kept: UInt64, trace: ProviderChain.Trace?)>((0, 0, nil))

    var trace: ProviderChain.Trace? { storage.withLock { $0.trace } }

    /// The number of a login or change about to ask its provider.
    func begin() -> UInt64 {
        storage.withLock { state in
            state.begun += 1
            return state.begun
        }
    }

    /// The answer of the login or change numbered `number` (`begin()`), when it came from a stack.
    func land(_ trace: ProviderChain.Trace?, number: UInt64) {
        guard let trace else { return }
        storage.withLock { state in
            guard number > state.kept else { return }
            state.kept = number
            state.trace = trace
        }
    }
}
