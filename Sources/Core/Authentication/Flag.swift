import Synchronization

/// A thread-safe flag that can be raised once.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)

    init() {}

    /// Raises the flag; returns `true` only for the call that raised it.
    func setOnce() -> Bool {
        raised.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
