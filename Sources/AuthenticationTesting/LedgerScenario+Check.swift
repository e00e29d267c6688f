public import Authentication
import GatekeeperSupport

/// A tally a lockout store keeps: an account's own, or a shared one for names no backend could look up.
public enum LedgerTally: Sendable, Hashable, CustomStringConvertible {
    case account(String)
    /// A name no look-up recognised: the records in `file` that carry `tag` where pam_faillock keeps a
    /// record's source.
    case unknown(file: String, tag: [UInt8])

    public var description: String {
        switch self {
        case .account(let name): "tally of \(name)"
        case .unknown(let file, _): "an unknown name's count in \(file)"
        }
    }
}

/// How a scenario reaches the lockout store under test.
public struct LedgerStoreAccess: Sendable {
    /// A new store on the shared tally, as a new process opens it.
    public var open: @Sendable () throws -> any LockoutStore
    /// Where a name no look-up recognised is counted when it has no tally of its own.
    public var unknownTally: @Sendable (String) -> LedgerTally
    /// How many failures a tally holds now (read from the store's files, not through the ledger).
    public var failures: @Sendable (LedgerTally) -> Int

    public init(
        open: @escaping @Sendable () throws -> any LockoutStore,
        unknownTally: @escaping @Sendable (String) -> LedgerTally,
        failures: @escaping @Sendable (LedgerTally) -> Int
    ) {
        self.open = open
        self.unknownTally = unknownTally
        self.failures = failures
    }
}

extension LedgerScenario {
    /// Runs the scenario through real gatekeepers (one per process, each with its own store on one tally)
    /// and returns every way the store's tallies, or a login's admission, differ from the model after
    /// each step: empty when the ledger keeps the rule.
    public func check(_ access: LedgerStoreAccess) async -> [String] {
        var model = Model(scenario: self, access: access)
        let director = Director()
        let chain = ProviderChain(
            name: "stack",
            entries.enumerated().map { index, entry in
                ProviderChain.Entry(
                    ChainControl(entry.control), ScriptedEntry(index: index, entry: entry, director: director))
            })
        var processes: [Int: (Gatekeeper, KillableStore)] = [:]
        func process(_ index: Int) throws -> Gatekeeper {
            if let (gatekeeper, store) = processes[index], !store.killed { return gatekeeper }
            let made = try make(chain, access: access, remembering: nil)
            processes[index] = made
            return made.0
        }
        var problems: [String] = []
        for (number, step) in steps.enumerated() {
            let expected: Bool
            let admitted: Bool
            do {
                switch step {
                case .login(let index, let attempts, let disruption):
                    expected = model.login(attempts, disruption)
                    let gatekeeper = try process(index)
                    let conversation = StepConversation(
                        attempts: attempts, disruption: disruption, director: director, store: processes[index]!.1)
                    director.begin(disruption, store: processes[index]!.1)
                    admitted = (try? await gatekeeper.signIn(conversation: conversation)) != nil
                case .burst(let count, let typed, let password):
                    let before = model.presentationsAllowed(typed)
                    model.burst(count, typed: typed, password: password)
                    expected = false
                    director.begin(.none, store: nil)
                    let gatekeepers = try (0..<count).map { _ in try make(chain, access: access, remembering: nil).0 }
                    await withTaskGroup(of: Void.self) { group in
                        for gatekeeper in gatekeepers {
                            group.addTask {
                                guard
                                    let credentials = try? Credentials(
                                        username: typed, password: Secret(copying: password.utf8))
                                else { return }
                                _ = try? await gatekeeper.signIn(credentials)
                            }
                        }
                    }
                    admitted = false
                    let checked = director.presentations
                    if checked > min(count, before) {
                        problems.append("step \(number + 1): \(checked) of \(count) guesses at once reached the stack")
                    }
                case .change(let index, let account, let entry, let current, let disruption):
                    let signedIn = model.login([(account, Self.password(entry: entry, account))], .none)
                    let gatekeeper = try process(index)
                    director.begin(.none, store: processes[index]!.1)
                    let credentials = try Credentials(
                        username: account, password: Secret(copying: Self.password(entry: entry, account).utf8))
                    let identity = try? await gatekeeper.signIn(credentials)
                    if (identity != nil) != signedIn {
                        problems.append(
                            "step \(number + 1): the sign-in before the change admitted: \(identity != nil)")
                    }
                    expected = false
                    admitted = false
                    guard let identity, signedIn else { break }
                    model.change(identity.username, current: current, disruption)
                    let conversation = StepConversation(
                        attempts: [], current: current, disruption: disruption, director: director,
                        store: processes[index]!.1)
                    director.begin(disruption, store: processes[index]!.1)
                    try? await gatekeeper.changePassword(conversation: conversation)
                case .remembered(let account, let typed):
                    expected = model.remembered(account, typed: typed)
                    let holder = entries.indices.first { entries[$0].accounts[account] != nil }
                    let (gatekeeper, store) = try make(
                        chain, access: access,
                        remembering: holder.map { RememberedLogin(username: account, provider: "e\($0)", age: .zero) })
                    director.begin(.none, store: store)
                    let conversation = StepConversation(
                        attempts: [(typed, "wrong")], disruption: .none, director: director, store: store)
                    admitted = (try? await gatekeeper.signIn(conversation: conversation)) != nil
                }
            } catch {
                problems.append("step \(number + 1): \(error)")
                break
            }
            if admitted != expected {
                problems.append("step \(number + 1) (\(step)): admitted \(admitted), the model says \(expected)")
            }
            for (tally, count) in model.tallies() where access.failures(tally) != count {
                problems.append(
                    "step \(number + 1) (\(step)): \(tally) holds \(access.failures(tally)), the model says \(count)")
            }
            if !problems.isEmpty { break }
        }
        return problems
    }

    private func make(_ chain: ProviderChain, access: LedgerStoreAccess, remembering: RememberedLogin?) throws
        -> (Gatekeeper, KillableStore)
    {
        let store = KillableStore(try access.open())
        let gatekeeper = Gatekeeper(
            provider: chain,
            configuration: .init(maxAttempts: 2, lockout: LockoutPolicy(deny: deny), failDelay: .zero),
            lockout: store, remembered: remembering.map(RememberingOne.init))
        return (gatekeeper, store)
    }
}

extension ChainControl {
    init(_ control: LedgerScenario.Control) {
        switch control {
        case .required: self = .required
        case .requisite: self = .requisite
        case .sufficient: self = .sufficient
        }
    }
}

/// The reference model: the rule, over tallies, in as few lines as it takes.
private struct Model {
    let scenario: LedgerScenario
    let access: LedgerStoreAccess
    var counts: [LedgerTally: Int] = [:]

    init(scenario: LedgerScenario, access: LedgerStoreAccess) {
        self.scenario = scenario
        self.access = access
    }

    var deny: Int { scenario.deny }
    var entries: [LedgerScenario.Entry] { scenario.entries }

    func tallies() -> [(LedgerTally, Int)] {
        let names = Set(LedgerScenario.accountNames + LedgerScenario.spellings)
        var all = Set(counts.keys)
        for name in names {
            all.insert(readTally(name, known: true))
            all.insert(readTally(name, known: false))
        }
        return all.map { ($0, counts[$0] ?? 0) }
    }

    /// The tally a name is judged by: an account's own; a name no entry could look up, its count among
    /// names that match no account (every spelling that folds alike).
    func readTally(_ name: String, known: Bool) -> LedgerTally {
        known ? .account(name) : access.unknownTally(name)
    }

    func locked(_ tally: LedgerTally) -> Bool { counts[tally, default: 0] >= deny }

    /// Counts a failure against `name` (a known account gets a tally of its own); the tally counted.
    mutating func charge(_ name: String, known: Bool) -> LedgerTally {
        let tally = readTally(name, known: known)
        counts[tally, default: 0] += 1
        return tally
    }

    /// A success: the account's count, and the name's among names no look-up recognised, start again.
    mutating func clear(_ name: String) {
        counts[.account(name)] = 0
        counts[access.unknownTally(name)] = 0
    }

    /// What the stack's look-up says: the first entry that knows the name names the account.
    func lookUp(_ typed: String) -> (name: String, known: Bool) {
        for entry in entries where entry.looksUp {
            if let account = entry.account(typed) { return (account, true) }
        }
        return (typed, false)
    }

    func presentationsAllowed(_ typed: String) -> Int {
        let account = lookUp(typed)
        return max(deny - counts[readTally(account.name, known: account.known), default: 0], 0)
    }

    /// One entry's PAM result.
    enum Result { case success(String, expired: Bool), refused(String), unknown, unavailable, ignore }

    /// Linux-PAM's dispatch for required, requisite and sufficient; `answer` gives each entry's result, or
    /// `nil` when the login ends there (cancelled, killed).
    func dispatch(_ answer: (Int) -> Result?) -> (result: Result, refusals: [String], named: [String])? {
        var failure: Result?
        var success: Result?
        var refusals: [String] = []
        var named: [String] = []
        for (index, entry) in entries.enumerated() {
            guard let result = answer(index) else { return nil }
            if case .refused(let account) = result { refusals.append(account) }
            if case .success(let account, _) = result { named.append(account) }
            if case .ignore = result { continue }
            let succeeded = if case .success = result { true } else { false }
            switch entry.control {
            case .required, .requisite:
                if succeeded {
                    if failure == nil { success = success ?? result }
                } else {
                    failure = failure ?? result
                    if entry.control == .requisite { return (failure!, refusals, named) }
                }
            case .sufficient:
                if succeeded && failure == nil { return (success ?? result, refusals, named) }
            }
        }
        return (failure ?? success ?? .ignore, refusals, named)
    }

    /// An interactive login; whether it admitted.
    mutating func login(
        _ attempts: [(typed: String, password: String)], _ disruption: LedgerScenario.Disruption
    ) -> Bool {
        for (number, attempt) in zip(1..., attempts) {
            switch self.attempt(attempt.typed, attempt.password, disruption, number) {
            case .admitted: return true
            case .stop: return false
            case .retry: continue
            }
        }
        return false
    }

    enum End { case admitted, stop, retry }

    mutating func attempt(
        _ typed: String, _ password: String, _ disruption: LedgerScenario.Disruption, _ number: Int
    ) -> End {
        if disruption == .cancelAtUsername(number) { return .stop }
        let account = lookUp(typed)
        // A locked account is refused before anything is asked.
        if locked(readTally(account.name, known: account.known)) { return .stop }
        /// Whether an entry's account is the one the typed name was counted against.
        func isTyped(_ name: String) -> Bool { name == account.name }
        var typedTally: LedgerTally?
        let decided = dispatch { index -> Result? in
            if disruption == .unavailableBefore(index) { return .unavailable }
            if typedTally == nil {
                if disruption == .cancelAtPassword(number) || disruption == .killAtPassword(number) { return nil }
                typedTally = charge(account.name, known: account.known)
            }
            switch disruption {
            case .unavailableAfter(index), .timeoutAfter(index): return .unavailable
            case .cancelDuringCheck(index), .killDuringCheck(index): return nil
            default: break
            }
            let entry = entries[index]
            guard let name = entry.account(typed) else { return .unknown }
            guard password == LedgerScenario.password(entry: index, name) else { return .refused(name) }
            return .success(name, expired: entry.expired.contains(name))
        }
        guard let (result, refusals, named) = decided else { return .stop }
        guard let typedTally else {
            // Nothing was presented: nothing counts.
            if case .unavailable = result { return .stop }
            return .retry
        }
        var lockedOut = false
        var seen: Set<String> = []
        for refused in refusals where !isTyped(refused) && seen.insert(refused).inserted {
            if case .success(let name, _) = result, name == refused { continue }
            if locked(.account(refused)) {
                lockedOut = true
            } else {
                _ = charge(refused, known: true)
            }
        }
        if case .success(let name, let expired) = result {
            if !isTyped(name) {
                if !refusals.contains(where: isTyped) { counts[typedTally]! -= 1 }
                if locked(.account(name)) { return .stop }
            }
            clear(name)
            guard expired else { return .admitted }
            // The new password is refused, or the change cancelled: never a failed guess.
            if disruption == .cancelAtNew || disruption == .killAtNew { return .stop }
            return .retry
        }
        // Any other account an entry named that is locked answers as locked, whatever the password.
        for name in named where !isTyped(name) && seen.insert(name).inserted && locked(.account(name)) {
            lockedOut = true
        }
        if case .unavailable = result { return .stop }
        return lockedOut ? .stop : .retry
    }

    /// Identical logins at once, each with one attempt: as many as the lockout lets through, each as if alone.
    mutating func burst(_ count: Int, typed: String, password: String) {
        for _ in 0..<count { _ = attempt(typed, password, .none, 1) }
    }

    /// A password change by the signed-in `account`.
    mutating func change(_ account: String, current: String, _ disruption: LedgerScenario.Disruption) {
        if locked(.account(account)) { return }
        let holders = entries.indices.filter { entries[$0].account(account) != nil }
        guard !holders.isEmpty else { return }
        if disruption == .cancelAtCurrent || disruption == .killAtCurrent { return }
        let counted = charge(account, known: true)
        let decided = dispatch { index -> Result? in
            guard let name = entries[index].account(account) else { return .ignore }
            switch disruption {
            case .unavailableAfter(index): return .unavailable
            case .cancelDuringCheck(index): return nil
            default: break
            }
            return current == LedgerScenario.password(entry: index, name)
                ? .success(name, expired: false) : .refused(name)
        }
        guard let (result, _, _) = decided, case .success = result else { return }
        // The current password was right: the new one is asked, and refused.
        if disruption == .cancelAtNew || disruption == .killAtNew { return }
        counts[counted]! -= 1
    }

    /// A process that remembers a login of `account`; whether the login typed as `typed` admitted.
    mutating func remembered(_ account: String, typed: String) -> Bool {
        let looked = lookUp(typed)
        let rechecked = entries.contains { $0.accounts[account] != nil }
        if looked.name == account && rechecked {
            return !locked(readTally(looked.name, known: looked.known))
        }
        return login([(typed, "wrong")], .none)
    }
}

/// What the entries of the stack are to do in the step now running, and who to kill.
private final class Director: Sendable {
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
private final class KillableStore: LockoutStore {
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
private struct ScriptedEntry: AuthProvider {
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
private final class StepConversation: Conversation {
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
private struct RememberingOne: RememberedLogins {
    let login: RememberedLogin

    init(_ login: RememberedLogin) { self.login = login }

    func lookup(_ account: String) -> RememberedLogin? {
        Username.same(account, login.username) ? login : nil
    }

    func remember(_ identity: Identity) throws(AuthError) {}
}
