// Helpers shared by the test targets; not part of any product.
public import Authentication
import Synchronization

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
