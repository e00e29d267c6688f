public import Authentication
import GatekeeperSupport

/// An in-memory provider that answers after a delay, like a login server across a network.
///
/// For demonstrations and tests: users live in memory, every check waits ``delay`` (one second by
/// default) on a clock that honours task cancellation at once, and ``inject(_:count:)`` makes the next
/// logins fail in chosen ways.
///
/// ```swift
/// let provider = MockAuthProvider(users: [
///     .init(username: "alice", password: Secret(copying: "wonderland".utf8), groups: ["admin"]),
/// ])
/// ```
public final class MockAuthProvider: AuthProvider {
    /// One account.
    public struct User: Sendable {
        public var username: String
        public var password: Secret
        public var displayName: String?
        public var groups: Set<String>
        public var status: Status

        /// An account's standing.
        public enum Status: Sendable, Hashable {
            /// Can sign in.
            case active
            /// Not activated yet: ``Rejection/activationRequired``.
            case activationRequired
            /// Locked: ``Rejection/locked(until:)``.
            case locked
            /// Expired: ``Rejection/expiredAccount``.
            case expired
            /// The password must be changed first: ``Rejection/passwordChangeRequired``.
            case passwordChangeRequired
        }

        public init(
            username: String,
            password: Secret,
            displayName: String? = nil,
            groups: Set<String> = [],
            status: Status = .active
        ) {
            self.username = username
            self.password = password
            self.displayName = displayName
            self.groups = groups
            self.status = status
        }
    }

    /// A way to make logins fail, for tests and demonstrations.
    public enum Failure: Sendable, Hashable {
        /// Answer ``AuthOutcome/unavailable(reason:)`` with this reason.
        case unavailable(reason: String)
        /// Never answer until the task is cancelled, like a backend that hangs.
        case hang
        /// Reject the login for this reason, whatever the password.
        case reject(Rejection)
    }

    public let name: String
    /// How long each check takes.
    public let delay: Duration
    /// The prompt for the password.
    public let passwordPrompt: String

    /// The accounts, behind a lock: a password change replaces one.
    private let users: Locked<[String: User]>
    private let state = Locked(State())

    private struct State {
        var failures: [Failure] = []
        var authentications = 0
        var signOuts = 0
    }

    /// - Parameters:
    ///   - users: The accounts; the first of two with the same name wins.
    ///   - delay: How long each check takes (the time a round trip to a login server would).
    ///   - name: The provider name reported in identities.
    ///   - passwordPrompt: The prompt for the password.
    public init(
        users: [User],
        delay: Duration = .seconds(1),
        name: String = "mock",
        passwordPrompt: String = "Password: "
    ) {
        self.users = Locked(Dictionary(users.map { ($0.username, $0) }, uniquingKeysWith: { first, _ in first }))
        self.delay = delay
        self.name = name
        self.passwordPrompt = passwordPrompt
    }

    /// Makes the next `count` logins fail with `failure` (queued after failures injected earlier).
    public func inject(_ failure: Failure, count: Int = 1) {
        state.withLock { $0.failures += Array(repeating: failure, count: count) }
    }

    /// How many logins reached the point of checking a password.
    public var authenticationCount: Int { state.withLock { $0.authentications } }

    /// How many times ``signOut(_:)`` was called.
    public var signOutCount: Int { state.withLock { $0.signOuts } }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // Ask for the password whether or not the user exists, so prompts do not reveal names.
        let password = try await request.conversation.askSecret(passwordPrompt)
        let failure = state.withLock { state -> Failure? in
            state.authentications += 1
            return state.failures.isEmpty ? nil : state.failures.removeFirst()
        }
        if failure == .hang {
            try await sleep(.seconds(365 * 24 * 60 * 60))
        }
        try await sleep(delay)
        switch failure {
        case .unavailable(let reason)?: return .unavailable(reason: reason)
        case .reject(let error)?: return .rejected(error)
        case .hang?, nil: break
        }
        // Compare against a stand-in when the user is unknown, so both paths do the same work.
        let user = users.withLock { $0[request.username] }
        let expected = user?.password ?? Self.standIn
        guard password == expected, let user else {
            return user == nil ? .notMine : .rejected(.wrongCredentials)
        }
        switch user.status {
        case .active:
            return .authenticated(
                Identity(username: user.username, displayName: user.displayName, groups: user.groups, provider: name)
            )
        case .activationRequired: return .rejected(.activationRequired)
        case .locked: return .rejected(.locked(until: nil))
        case .expired: return .rejected(.expiredAccount)
        case .passwordChangeRequired:
            guard request.mayChangeExpiredPassword else { return .rejected(.passwordChangeRequired) }
            // Right, but to be changed before anyone is admitted: once the whole stack has said yes.
            var identity = Identity(
                username: user.username, displayName: user.displayName, groups: user.groups, provider: name)
            identity.mustChangePassword = true
            return .authenticated(identity)
        }
    }

    public var changesPasswords: Bool { true }

    /// Changes a password in the table: the current one in the preliminary pass, the new one twice in
    /// the update (refused when it is the current one). A changed password that had expired no longer has.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        let found = users.withLock { $0[request.username] }
        // The change a login needs concerns only a password that has expired.
        if request.expiredOnly && found?.status != .passwordChangeRequired { return .ignored }
        // Asked whether or not the user exists, as a login asks.
        let current = try await request.conversation.askSecret(PasswordPrompt.current)
        try await sleep(delay)
        guard let user = found else { return .notMine }
        guard current == user.password else { return .rejected(.wrongCurrentPassword) }
        guard request.pass == .update else { return .changed }
        if let refusal = try await change(user, current: current, conversation: request.conversation) {
            return .rejected(refusal)
        }
        return .changed
    }

    /// Asks the new password twice and stores it, if it is still `user`'s turn; the refusal otherwise.
    private func change(_ user: User, current: Secret, conversation: any Conversation) async throws(AuthError)
        -> PasswordChangeRefusal?
    {
        let new: Secret
        switch try await PasswordPrompt.askNewPassword(conversation) {
        case .success(let password): new = password
        case .failure(let refusal): return refusal
        }
        guard new != current else { return .unacceptable("it is the current password") }
        return users.withLock { users -> PasswordChangeRefusal? in
            guard var changed = users[user.username], changed.password == current else {
                return .unacceptable("the password was changed meanwhile")
            }
            changed.password = new
            if changed.status == .passwordChangeRequired { changed.status = .active }
            users[user.username] = changed
            return nil
        }
    }

    public func signOut(_ identity: Identity) async {
        state.withLock { $0.signOuts += 1 }
    }

    /// The table's entry for the name, if it has one.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        users.withLock { $0[username] }.map { .known(canonicalName: $0.username) } ?? .unknown
    }

    /// The account as the table has it: gone, or refused as a login would be, or valid.
    public func recheck(_ identity: Identity) async -> Recheck {
        guard let user = users.withLock({ $0[identity.username] }) else { return .refused(.userNotFound) }
        switch user.status {
        case .active:
            return .valid(
                Identity(username: user.username, displayName: user.displayName, groups: user.groups, provider: name))
        case .activationRequired: return .refused(.accountNotActivated)
        case .locked: return .refused(.accountLocked(until: nil))
        case .expired: return .refused(.accountExpired)
        case .passwordChangeRequired: return .refused(.passwordChangeRequired)
        }
    }

    private func sleep(_ duration: Duration) async throws(AuthError) {
        guard duration > .zero else {
            if Task.isCancelled { throw .cancelled }
            return
        }
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw .cancelled
        }
    }

    private static let standIn = Secret(copying: [UInt8](repeating: 0x2A, count: 32))
}
