// Helpers shared by the test targets; not part of any product.
public import Authentication
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Validated credentials from plain strings, for tests.
public func credentials(_ username: String, _ password: String) throws -> Credentials {
    try Credentials(username: username, password: Secret(copying: password.utf8))
}

/// A value shared between tasks in a test.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public var value: Value { mutex.withLock { $0 } }

    @discardableResult
    public func update<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// Counts how often something happened.
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    public init() {}

    public func increment() { value.add(1, ordering: .relaxed) }

    public var count: Int { value.load(ordering: .relaxed) }
}

/// Polls `condition` until it holds, for at most `seconds`; returns whether it held. Every wait in the
/// tests has such a deadline, so a broken promise fails instead of hanging.
public func eventually(within seconds: Int = 20, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// ``eventually(within:_:)`` for async tests: polls with `Task.sleep`, so the thread it runs on stays
/// free for the tasks it waits for.
public func eventually(within seconds: Int = 20, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}
