import Authentication
import GatekeeperSupport

/// What the entries of the stack are to do in the step now running, and who to kill.
final class Director: Sendable {
    private let state = Locked<(disruption: LedgerScenario.Disruption, store: KillableStore?, presented: Int)>(
        (.none, nil, 0))

    func begin(_ disruption: LedgerScenario.Disruption, store: KillableStore?) {
        state.withLock { $0 = (disruption, store, 0) }
    }

    var disruption: LedgerScenario.Disruption { state.withLock { $0.disruption } }
    var presentations: Int { state.withLock { $0.presented } }
    func presented() { state.withLock { $0.presented += 1 } }

    /// The process dies here: nothing it would do next reaches the tally.
    func kill() { state.withLock { $0.store?.kill() } }
}

/// A lockout store that a kill cuts off: from then on every call fails, as a dead process writes nothing.
final class KillableStore: LockoutStore {
    private let base: any LockoutStore
    private let dead = Locked(false)

    init(_ base: any LockoutStore) { self.base = base }

    var killed: Bool { dead.withLock { $0 } }
    func kill() { dead.withLock { $0 = true } }

    private func alive() throws(AuthError) {
        if killed { throw .providerUnavailable(reason: "the process was killed") }
    }

    func status(of account: LockoutAccount, policy: LockoutPolicy) throws(AuthError) -> LockoutStatus {
        try alive()
        return try base.status(of: account, policy: policy)
    }

    func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
        -> LockoutAttempt
    {
        try alive()
        return try base.beginAttempt(account, source: source, policy: policy)
    }

    func withdraw(_ ticket: LockoutTicket) throws(AuthError) {
        try alive()
        try base.withdraw(ticket)
    }

    /// A dead process settles nothing; its store, the process's own, goes with it.
    func settled(_ ticket: LockoutTicket) {
        if !killed { base.settled(ticket) }
    }

    func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy) throws(AuthError)
        -> LockoutStatus
    {
        try alive()
        return try base.recordFailure(of: account, source: source, policy: policy)
    }

    func recordSuccess(of account: String) throws(AuthError) {
        try alive()
        try base.recordSuccess(of: account)
    }

    func recordSuccess(of account: String, settling ticket: LockoutTicket?) throws(AuthError) {
        try alive()
        try base.recordSuccess(of: account, settling: ticket)
    }

    func unlock(_ account: String) throws(AuthError) {
        try alive()
        try base.unlock(account)
    }
}

/// One entry of the scenario's stack: it matches names as its ``LedgerScenario/Matching`` says and does
/// what the step's disruption tells it.
struct ScriptedEntry: AuthProvider {
    let index: Int
    let entry: LedgerScenario.Entry
    let director: Director

    var name: String { "e\(index)" }
    var changesPasswords: Bool { true }

    func lookUpAccount(_ username: String) async -> AccountLookup {
        guard entry.looksUp else { return .cannotTell }
        return entry.account(username).map { .known(canonicalName: $0) } ?? .unknown
    }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let disruption = director.disruption
        if disruption == .unavailableBefore(index) { return .unavailable(reason: "down") }
        let password = try await request.conversation.askSecret("Password: ")
        if index == 0 { director.presented() }
        switch disruption {
        case .unavailableAfter(index): return .unavailable(reason: "crashed after the password")
        case .timeoutAfter(index): return .unavailable(reason: "no answer within its time limit")
        case .cancelDuringCheck(index): throw .cancelled
        case .killDuringCheck(index):
            director.kill()
            throw .cancelled
        default: break
        }
        guard let account = entry.account(request.username) else { return .notMine }
        guard password == Secret(copying: LedgerScenario.password(entry: index, account).utf8) else {
            return .rejected(.wrongCredentials, canonicalUsername: account)
        }
        var identity = Identity(username: account, provider: name)
        identity.mustChangePassword = entry.expired.contains(account)
        return .authenticated(identity)
    }

    func recheck(_ identity: Identity) async -> Recheck {
        entry.accounts[identity.username] != nil ? .valid(identity) : .refused(.userNotFound)
    }

    func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        guard let account = entry.account(request.username) else { return .ignored }
        if request.expiredOnly {
            guard entry.expired.contains(account) else { return .ignored }
            if request.pass == .preliminaryCheck { return .changed }
        } else if request.pass == .preliminaryCheck {
            let current = try await request.conversation.askSecret(PasswordPrompt.current)
            switch director.disruption {
            case .unavailableAfter(index): return .unavailable(reason: "crashed after the password")
            case .cancelDuringCheck(index): throw .cancelled
            default: break
            }
            let right = current == Secret(copying: LedgerScenario.password(entry: index, account).utf8)
            return right ? .changed : .rejected(.wrongCurrentPassword)
        }
        _ = try await request.conversation.askSecret(PasswordPrompt.new)
        _ = try await request.conversation.askSecret(PasswordPrompt.retype)
        return .rejected(.unacceptable("it is too simple"))
    }
}

/// The person at the keyboard of one step: the names and passwords of its attempts, in order, and the
/// disruption at its prompt.
final class StepConversation: Conversation {
    private let attempts: [(typed: String, password: String)]
    private let current: String
    private let disruption: LedgerScenario.Disruption
    private let director: Director
    private let store: KillableStore
    private let asked = Locked(0)

    init(
        attempts: [(typed: String, password: String)], current: String = "", disruption: LedgerScenario.Disruption,
        director: Director, store: KillableStore
    ) {
        self.attempts = attempts
        self.current = current
        self.disruption = disruption
        self.director = director
        self.store = store
    }

    private var attempt: Int { asked.withLock { $0 } }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        let number = asked.withLock { count in
            count += 1
            return count
        }
        if disruption == .cancelAtUsername(number) { throw .cancelled }
        // An empty name past the scripted attempts: the person gives up.
        return number <= attempts.count ? attempts[number - 1].typed : ""
    }

    func ask(_ prompt: String) async throws(AuthError) -> String { throw .cancelled }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let answer: String
        switch prompt {
        case PasswordPrompt.current:
            try stop(at: .cancelAtCurrent, or: .killAtCurrent)
            answer = current
        case PasswordPrompt.new, PasswordPrompt.retype:
            try stop(at: .cancelAtNew, or: .killAtNew)
            answer = "a new password"
        default:
            let number = attempt
            try stop(at: .cancelAtPassword(number), or: .killAtPassword(number))
            guard number >= 1, number <= attempts.count else { throw .cancelled }
            answer = attempts[number - 1].password
        }
        return Secret(copying: answer.utf8)
    }

    private func stop(
        at cancel: LedgerScenario.Disruption, or kill: LedgerScenario.Disruption
    ) throws(AuthError) {
        if disruption == cancel { throw .cancelled }
        if disruption == kill {
            store.kill()
            throw .cancelled
        }
    }

    func show(_ message: String, as kind: MessageKind) async {}
}

/// Remembers one login, as a host tool's login cache does for its place.
struct RememberingOne: RememberedLogins {
    let login: RememberedLogin

    init(_ login: RememberedLogin) { self.login = login }

    func lookup(_ account: String) -> RememberedLogin? {
        Username.same(account, login.username) ? login : nil
    }

    func remember(_ identity: Identity) throws(AuthError) {}
}
