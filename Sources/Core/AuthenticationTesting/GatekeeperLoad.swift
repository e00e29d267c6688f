public import Authentication
import GatekeeperSupport

/// Many protected actions at once over one provider, each counted: a check that a provider (or a stack)
/// keeps every login apart under load, and the figures of how it held up.
///
/// Each account gets a gatekeeper of its own (as one tool instance per person) and `actionsPerAccount`
/// protected actions started together; every action signs in on its own conversation. Intruders answer
/// a wrong password, so none of their actions may run.
///
/// ```swift
/// let load = GatekeeperLoad(accounts: accounts, intruders: intruders, actionsPerAccount: 20)
/// let result = await load.run(against: provider)
/// #expect(result.isSound)
/// ```
public struct GatekeeperLoad: Sendable {
    public var accounts: [(username: String, password: String)]
    public var intruders: [(username: String, password: String)]
    public var actionsPerAccount: Int

    public init(
        accounts: [(username: String, password: String)],
        intruders: [(username: String, password: String)] = [],
        actionsPerAccount: Int
    ) {
        self.accounts = accounts
        self.intruders = intruders
        self.actionsPerAccount = actionsPerAccount
    }

    /// What the actions did.
    public struct Result: Sendable {
        /// How many actions ran, per signed-in user.
        public var ran: [String: Int]
        /// Actions that ran for an identity other than the account that started them.
        public var wrongIdentity: Int
        /// Actions that did not run because their sign-in failed or was refused.
        public var dismissed: Int
        /// Actions that ended with an error instead.
        public var failed: Int
        /// From the start of each action to its end, sorted.
        public var latencies: [Duration]
        /// From the first action's start to the last one's end.
        public var elapsed: Duration

        /// The actions that ran, in all.
        public var total: Int { ran.values.reduce(0, +) }

        /// The latency below which `fraction` of the actions ended (0.5 for the median).
        public func latency(percentile fraction: Double) -> Duration {
            guard !latencies.isEmpty else { return .zero }
            return latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))]
        }
    }

    public func run(against provider: any AuthProvider) async -> Result {
        let ran = Locked<[String: Int]>([:])
        let counts = Locked((wrongIdentity: 0, dismissed: 0, failed: 0, latencies: [Duration]()))
        let clock = ContinuousClock()
        let start = clock.now
        let actions = actionsPerAccount
        await withTaskGroup(of: Void.self) { group in
            for (account, intruder) in accounts.map({ ($0, false) }) + intruders.map({ ($0, true) }) {
                let gatekeeper = Gatekeeper(
                    provider: provider, configuration: .init(maxAttempts: 1, lockout: nil, failDelay: .zero))
                for _ in 0..<actions {
                    group.addTask {
                        let begun = clock.now
                        let action = RequiresAuthentication(.signedIn) { identity -> Void in
                            if identity.username != account.username {
                                counts.withLock { $0.wrongIdentity += 1 }
                            }
                            ran.withLock { $0[identity.username, default: 0] += 1 }
                        }
                        let conversation = ScriptedConversation(
                            .text(account.username), .secret(intruder ? "not-" + account.password : account.password))
                        let outcome = try? await action.run(through: gatekeeper, conversation: conversation)
                        let took = begun.duration(to: clock.now)
                        counts.withLock {
                            switch outcome {
                            case .dismissed?: $0.dismissed += 1
                            case nil: $0.failed += 1
                            default: break
                            }
                            $0.latencies.append(took)
                        }
                    }
                }
            }
        }
        let elapsed = start.duration(to: clock.now)
        let (wrongIdentity, dismissed, failed, latencies) = counts.withLock { $0 }
        return Result(
            ran: ran.withLock { $0 }, wrongIdentity: wrongIdentity, dismissed: dismissed, failed: failed,
            latencies: latencies.sorted(), elapsed: elapsed)
    }

    /// Whether `result` is what a sound provider gives: every account's actions ran exactly once each, for
    /// that account; no intruder's action ran; every intruder's action was dismissed.
    public func isSound(_ result: Result) -> Bool {
        result.total == accounts.count * actionsPerAccount
            && accounts.allSatisfy { result.ran[$0.username] == actionsPerAccount }
            && intruders.allSatisfy { result.ran[$0.username] == nil }
            && result.wrongIdentity == 0 && result.failed == 0
            && result.dismissed == intruders.count * actionsPerAccount
    }
}
