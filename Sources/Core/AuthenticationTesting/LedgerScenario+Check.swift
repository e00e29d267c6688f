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
