public import Authentication
import GatekeeperSupport

/// A provider whose answers a test decides: a closure gets each request.
///
/// ```swift
/// let provider = StubAuthProvider { request in
///     let password = try await request.conversation.askSecret("Password: ")
///     return .authenticated(Identity(username: request.username, provider: "stub"))
/// }
/// ```
public final class StubAuthProvider: AuthProvider {
    public let name: String
    private let answer: @Sendable (AuthRequest) async throws(AuthError) -> AuthOutcome
    private let lookup: @Sendable (String) -> AccountLookup
    private let counts = Locked((authentications: 0, signOuts: 0))

    /// - Parameter lookup: What ``lookUpAccount(_:)`` answers; by default it cannot tell.
    public init(
        name: String = "stub",
        lookup: @escaping @Sendable (String) -> AccountLookup = { _ in .cannotTell },
        _ answer: @escaping @Sendable (AuthRequest) async throws(AuthError) -> AuthOutcome
    ) {
        self.name = name
        self.lookup = lookup
        self.answer = answer
    }

    /// A provider with fixed accounts (user name → password and groups) that answers at once.
    public convenience init(name: String = "stub", accounts: [String: (password: String, groups: Set<String>)]) {
        let table = accounts.mapValues { (Secret(copying: $0.password.utf8), $0.groups) }
        self.init(name: name, lookup: { table[$0] == nil ? .unknown : .known(canonicalName: $0) }) {
            request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            guard let (expected, groups) = table[request.username] else { return .notMine }
            guard password == expected else { return .rejected(.wrongCredentials) }
            return .authenticated(Identity(username: request.username, groups: groups, provider: name))
        }
    }

    /// How many times ``authenticate(_:)`` was called.
    public var authenticationCount: Int { counts.withLock { $0.authentications } }
    /// How many times ``signOut(_:)`` was called.
    public var signOutCount: Int { counts.withLock { $0.signOuts } }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        counts.withLock { $0.authentications += 1 }
        return try await answer(request)
    }

    public func signOut(_ identity: Identity) async {
        counts.withLock { $0.signOuts += 1 }
    }

    public func lookUpAccount(_ username: String) async -> AccountLookup { lookup(username) }
}

/// An audit sink that keeps every event, for assertions.
public final class RecordingAuditSink: AuditSink {
    private let recorded = Locked<[AuditEvent]>([])

    public init() {}

    public var events: [AuditEvent] { recorded.withLock { $0 } }

    public func record(_ event: AuditEvent) {
        recorded.withLock { $0.append(event) }
    }
}

/// A clock that moves only when told, for session timeouts without sleeping.
///
/// ```swift
/// let clock = ManualClock()
/// let gatekeeper = Gatekeeper(provider: provider, now: clock.now)
/// clock.advance(by: .seconds(901))
/// ```
public final class ManualClock: Sendable {
    private let origin = ContinuousClock.now
    private let offset = Locked<Duration>(.zero)

    public init() {}

    /// The clock's current instant.
    public var instant: ContinuousClock.Instant { origin + offset.withLock { $0 } }

    /// The clock as a gatekeeper's `now` function.
    public var now: @Sendable () -> ContinuousClock.Instant { { self.instant } }

    /// Moves the clock forward.
    public func advance(by duration: Duration) {
        offset.withLock { $0 += duration }
    }
}
