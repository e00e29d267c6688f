// Helpers shared by the test targets; not part of any product.
public import Authentication
public import BlockingPools
// `Locked`, the lock every shared value of the package and its tests is kept behind.
@_exported import GatekeeperSupport
import Synchronization
public import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Validated credentials from plain strings, for tests.
public func credentials(_ username: String, _ password: String) throws -> Credentials {
    try Credentials(username: username, password: Secret(copying: password.utf8))
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

/// A random number generator whose sequence a seed decides (SplitMix64), so a failure found with random
/// input can be replayed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    /// A generator seeded from `GATEKEEPER_TEST_SEED` if set, from `fixedSeed` if given, at random
    /// otherwise; prints the seed with `name`, so a failing run says how to repeat it.
    public init(for name: String, fixedSeed: UInt64? = nil) {
        let given = getenv("GATEKEEPER_TEST_SEED").flatMap { UInt64(String(cString: $0)) }
        seed = given ?? fixedSeed ?? UInt64.random(in: .min ... .max)
        state = seed
        print("\(name): random seed \(seed) (GATEKEEPER_TEST_SEED=\(seed) repeats it)")
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// How many bytes written to the pipe behind `descriptor` (either end) nobody has read yet.
public func unreadBytes(_ descriptor: Int32) -> Int {
    var count: Int32 = 0
    guard ioctl(descriptor, UInt(FIONREAD), &count) == 0 else { return -1 }
    return Int(count)
}

/// A new directory whose whole path only root or this user may write — where a host accepts plugins and
/// helper programs from: under /run for root, the user's runtime directory otherwise.
public func trustedDirectory() throws -> String {
    let base = trustedBase
    var template = Array("\(base)/gatekeeper-trusted.XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw TrustedDirectoryError(description: "no private directory could be made under \(base)")
    }
    let directory = String(cString: made)
    chmod(directory, 0o755)
    return directory
}

public struct TrustedDirectoryError: Error, CustomStringConvertible {
    public let description: String
}

/// Runs `work` while the only thread of a one-thread pool is held, and tells whether `work` queued on that
/// pool (waited for the thread) before it could finish: how a test sees that a backend runs its blocking
/// calls on the pool it was given. The thread is let go once `work` has queued, or after 2 s.
public func queuesOn<T: Sendable>(
    _ make: (BlockingPool) throws -> @Sendable () async -> T
) async rethrows -> (queued: Bool, value: T) {
    let pool = BlockingPool(name: "test.one-thread", maxThreads: 1, maxIdle: 0)
    let holding = Locked(true)
    let (held, heldContinuation) = AsyncStream<Void>.makeStream()
    pool.submit {
        heldContinuation.yield()
        while holding.withLock({ $0 }) { usleep(1000) }
    }
    for await _ in held { break }
    let work = try make(pool)
    let task = Task { await work() }
    let queued = await eventually(within: 2) { pool.waitingCount == 1 }
    holding.withLock { $0 = false }
    return (queued, await task.value)
}

/// The identity `outcome` admitted; anything else fails the test here, with `comment` (what was expected,
/// in the test's words) and what came instead — one check in place of a guard written in every test.
@discardableResult
public func expectAuthenticated(
    _ outcome: AuthOutcome, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
) throws -> Identity {
    let identity: Identity? = if case .authenticated(let identity) = outcome { identity } else { nil }
    return try #require(identity, "\(comment.rawValue): \(outcome)", sourceLocation: sourceLocation)
}
