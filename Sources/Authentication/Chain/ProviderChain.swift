import GatekeeperSupport

/// Providers stacked as PAM stacks modules: each entry's answer is one PAM return code
/// (``AuthOutcome/pamResult``), and its ``ChainControl`` decides, with Linux-PAM's exact rules, whether
/// the chain goes on, fails, or succeeds. A chain is itself an ``AuthProvider``, so chains nest and
/// everything that takes a provider takes a chain.
///
/// The rules, as `_pam_dispatch_aux` in Linux-PAM's `pam_dispatch.c` applies them (and the tests check
/// against libpam itself, on random stacks of `pam_debug.so`):
/// - The first failure (`bad` or `die`) is the one reported; `die` also ends the chain.
/// - `ok` and `done` count as success only while nothing has failed; `done` ends the chain only then.
/// - `reset` forgets what was decided so far; a jump `N` skips the next `N` entries (past the end, the
///   chain simply ends).
/// - A chain in which nothing counted (every entry ignored) fails with `PAM_PERM_DENIED`, and so does
///   one that "succeeded" without any success.
///
/// The identity is the one the first counted success of an entry that *establishes* an identity gave
/// (``AuthProvider/establishesIdentity``: the password entry, not a one-time code) — as PAM's `PAM_USER`
/// is set by the first module that sets it, and the account's details then come from the user database,
/// never from a second factor. A later entry's success confirms it and must answer for the same user: a
/// success for anyone else counts as a wrong credential. Groups, display name and attributes are never
/// a factor's. Cancellation stops the chain at once: no later entry asks anything, and the login is
/// cancelled, not failed. Every login leaves a ``Trace`` of which entry answered what, which entry gave
/// the identity, and what decided.
public final class ProviderChain: AuthProvider {
    /// One provider and how its answer counts.
    public struct Entry: Sendable {
        public var control: ChainControl
        public var provider: any AuthProvider

        public init(_ control: ChainControl, _ provider: any AuthProvider) {
            self.control = control
            self.provider = provider
        }
    }

    /// What one login went through: an answer per entry that ran, and the decision. Holds no secret.
    public struct Trace: Sendable, Hashable, CustomStringConvertible {
        public struct Step: Sendable, Hashable {
            /// The entry's position in the chain, from 0.
            public var index: Int
            public var provider: String
            public var control: String
            public var result: PAMResult
            public var action: ChainControl.Action
        }

        public var steps: [Step] = []
        /// The chain's result.
        public var result: PAMResult = .permissionDenied
        /// The entry whose success gave the identity, as `N:provider` (1 for the first), when the chain
        /// succeeded.
        public var identityEntry: String?

        /// The entry whose answer became the chain's, as `N:provider` (1 for the first): the last one that
        /// answered with the chain's result.
        public var decidingEntry: String? {
            guard let step = steps.last(where: { $0.result == result }) ?? steps.last else { return nil }
            return "\(step.index + 1):\(step.provider)"
        }

        public var description: String {
            let lines = steps.map { step in
                "\(step.index + 1). \(step.control) \(step.provider): \(step.result.rawValue) -> \(step.action)"
            }
            let identity = identityEntry.map { ["identity: \($0)"] } ?? []
            return (lines + identity + ["result: \(result.rawValue)"]).joined(separator: "\n")
        }
    }

    public let name: String
    public let entries: [Entry]
    private let traces: TraceLog
    /// Each entry's provider name and control as a trace shows them, made once rather than at every login.
    private let labels: [(provider: String, control: String)]

    /// - Parameter name: The chain's name in identities it did not make itself and in audit records.
    public init(name: String = "chain", _ entries: [Entry]) {
        self.name = name
        self.entries = entries
        self.traces = TraceLog()
        labels = entries.map { ($0.provider.name, $0.control.description) }
    }

    /// The names of the providers an identity from this chain may carry: its entries', nested chains'
    /// included.
    public var providerNames: Set<String> {
        entries.reduce(into: [name]) { names, entry in
            names.formUnion((entry.provider as? ProviderChain)?.providerNames ?? [entry.provider.name])
        }
    }

    /// The trace of the last login that ended (for `explain` and `--explain`).
    public var lastTrace: Trace? { traces.last }

    /// Asks the entry that signed `identity` in (by its provider's name), searching nested stacks.
    public func recheck(_ identity: Identity) async -> Recheck {
        for entry in entries {
            if let chain = entry.provider as? ProviderChain, chain.providerNames.contains(identity.provider) {
                return await chain.recheck(identity)
            }
            if entry.provider.name == identity.provider { return await entry.provider.recheck(identity) }
        }
        return .unverifiable
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        var decision = Decision()
        var trace = Trace()
        trace.steps.reserveCapacity(entries.count)
        // The identity so far, the entry that gave it, and whether that entry establishes identities.
        var identity: (who: Identity, index: Int, establishes: Bool)?
        var rejection: (Rejection, String?)?
        var reason: String?
        var index = 0
        // The person answers each question once per login, as PAM modules share PAM_AUTHTOK
        // (`use_first_pass`): a later entry asking the same question gets the same answer.
        var shared = request
        shared.conversation = SharingConversation(request.conversation)
        while index < entries.count {
            if Task.isCancelled { throw .cancelled }
            let entry = entries[index]
            // A cancellation thrown here ends the whole chain: no later entry runs.
            var outcome = try await entry.provider.authenticate(shared)
            // A factor vouching for someone other than the user the stack has is no confirmation.
            if case .authenticated(let who) = outcome, let current = identity, who.username != current.who.username {
                outcome = .rejected(.wrongCredentials, canonicalUsername: current.who.username)
            }
            let result = outcome.pamResult
            let action = entry.control.action(for: result)
            trace.steps.append(
                .init(
                    index: index, provider: labels[index].provider, control: labels[index].control, result: result,
                    action: action))
            let counted = decision.apply(action, result)
            if counted {
                switch outcome {
                case .authenticated(let who):
                    let establishes = entry.provider.establishesIdentity
                    if identity == nil || (establishes && identity?.establishes == false) {
                        identity = (who, index, establishes)
                    }
                case .rejected(let why, let canonical): rejection = (why, canonical)
                case .unavailable(let why): reason = why
                case .notMine, .ignored: break
                }
            }
            switch decision.next {
            case .continue: index += 1
            case .stop: index = entries.count
            case .skip(let count): index = Decision.index(after: index, skipping: count, of: entries.count)
            }
        }
        let result = decision.result
        trace.result = result
        if result == .success, let identity {
            trace.identityEntry = "\(identity.index + 1):\(labels[identity.index].provider)"
        }
        traces.record(trace)
        // The gatekeeper running this login collects the trace for its audit; an outer chain's comes last.
        ProviderChain.collector?.record(trace)
        return outcome(result, identity: identity?.who, rejection: rejection, reason: reason)
    }

    /// The account as the first entry that knows it spells it; unknown only when every entry says so.
    /// It is the system's administrator (exempt from the lockout) only when every entry that could admit
    /// the name says so: in a stack of PAM and a users file, a `root` of the file is no system account.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        var canonical: String?
        var administrator = true
        var everyEntryUnknown = true
        for entry in entries {
            if Task.isCancelled { return .cannotTell }
            switch await entry.provider.lookUpAccount(username) {
            case .known(let name, let isAdministrator):
                everyEntryUnknown = false
                canonical = canonical ?? name
                administrator = administrator && isAdministrator
            case .unknown:
                continue
            case .cannotTell:
                everyEntryUnknown = false
                administrator = false
            }
        }
        if let canonical { return .known(canonicalName: canonical, isSystemAdministrator: administrator) }
        return everyEntryUnknown ? .unknown : .cannotTell
    }

    /// Every entry is told: it may hold something for `identity`.
    public func signOut(_ identity: Identity) async {
        for entry in entries { await entry.provider.signOut(identity) }
    }

    /// The chain's answer for its final result, with the details of the entry that decided it.
    private func outcome(
        _ result: PAMResult,
        identity: Identity?,
        rejection: (Rejection, String?)?,
        reason: String?
    ) -> AuthOutcome {
        switch result {
        case .success:
            guard let identity else { return .rejected(.refusedByPolicy) }
            return .authenticated(identity)
        case .userUnknown: return .notMine
        case .authinfoUnavailable: return .unavailable(reason: reason ?? "every provider of the stack was down")
        case .ignore: return .ignored
        case .authenticationError:
            if let (why, canonical) = rejection, why.pamResult == .authenticationError {
                return .rejected(why, canonicalUsername: canonical)
            }
            return .rejected(.wrongCredentials, canonicalUsername: rejection?.1)
        case .accountExpired: return .rejected(.expiredAccount, canonicalUsername: rejection?.1)
        case .newAuthenticationTokenRequired: return .rejected(.passwordChangeRequired, canonicalUsername: rejection?.1)
        case .maximumTries: return .rejected(.tooManyTries, canonicalUsername: rejection?.1)
        case .permissionDenied: return .rejected(.refusedByPolicy, canonicalUsername: rejection?.1)
        }
    }
}

extension ProviderChain {
    /// What a stack of `controls` gives when its entries answer `answers` in turn (an entry that does
    /// not run ignores its answer): the result, and which entries ran. The rules of ``authenticate(_:)``,
    /// without the providers, for checking a stack before it is used.
    public static func dispatch(_ controls: [ChainControl], answers: [PAMResult]) -> (result: PAMResult, ran: [Int]) {
        precondition(controls.count == answers.count, "one answer per entry")
        var decision = Decision()
        var ran: [Int] = []
        var index = 0
        while index < controls.count {
            ran.append(index)
            _ = decision.apply(controls[index].action(for: answers[index]), answers[index])
            switch decision.next {
            case .continue: index += 1
            case .stop: index = controls.count
            case .skip(let count): index = Decision.index(after: index, skipping: count, of: controls.count)
            }
        }
        return (decision.result, ran)
    }
}

/// The state `_pam_dispatch_aux` keeps: an impression (undecided, positive, negative) and a status.
struct Decision {
    enum Impression { case undecided, positive, negative }
    enum Next: Equatable {
        case `continue`, stop
        case skip(Int)
    }

    private(set) var impression = Impression.undecided
    /// PAM's `PAM_MUST_FAIL_CODE` until something decides.
    private(set) var status = PAMResult.permissionDenied
    private(set) var next = Next.continue

    /// Applies one entry's action; returns whether its answer became the chain's status.
    mutating func apply(_ action: ChainControl.Action, _ result: PAMResult) -> Bool {
        next = .continue
        var counted = false
        switch action {
        case .reset:
            impression = .undecided
            status = .permissionDenied
        case .ok, .done:
            if impression == .undecided || (impression == .positive && status == .success) {
                impression = .positive
                status = result
                counted = true
            }
            if impression != .negative && action == .done { next = .stop }
        case .bad, .die:
            if impression != .negative {
                impression = .negative
                status = result == .ignore ? .permissionDenied : result
                counted = true
            }
            if action == .die { next = .stop }
        case .ignore:
            break
        case .jump(let count):
            next = .skip(count)
        }
        return counted
    }

    /// The entry after `index` once `count` entries are skipped, or `total` when that is past the end:
    /// computed without adding, so no jump, however large, can overflow.
    /// (A negative count, which no file can give, skips nothing rather than going back.)
    static func index(after index: Int, skipping count: Int, of total: Int) -> Int {
        let count = max(count, 0)
        return count >= total - index - 1 ? total : index + 1 + count
    }

    /// The chain's result: a success only with a positive impression.
    var result: PAMResult {
        status == .success && impression != .positive ? .permissionDenied : status
    }
}

extension ProviderChain {
    /// Where the trace of the login running in this task goes, for the gatekeeper's audit.
    @TaskLocal static var collector: TraceCollector?
}

/// Receives the trace of one login.
final class TraceCollector: Sendable {
    private let storage = Locked<ProviderChain.Trace?>(nil)

    var trace: ProviderChain.Trace? { storage.withLock { $0 } }

    func record(_ trace: ProviderChain.Trace) { storage.withLock { $0 = trace } }
}

/// A conversation that asks each hidden question once: the answer is kept for this login only (a
/// `Secret`, wiped when the login ends) and given again to a later entry asking the same prompt.
private final class SharingConversation: Conversation {
    private let base: any Conversation
    private let answers = Locked<[String: Secret]>([:])

    init(_ base: any Conversation) { self.base = base }

    func askUsername(_ prompt: String) async throws(AuthError) -> String {
        try await base.askUsername(prompt)
    }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        try await base.ask(prompt)
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if let known = answers.withLock({ $0[prompt] }) { return known }
        let answer = try await base.askSecret(prompt)
        answers.withLock { $0[prompt] = answer }
        return answer
    }

    func show(_ message: String, as kind: MessageKind) async {
        await base.show(message, as: kind)
    }
}

/// The last trace, shared between logins.
private final class TraceLog: Sendable {
    private let storage = Locked<ProviderChain.Trace?>(nil)

    var last: ProviderChain.Trace? { storage.withLock { $0 } }

    func record(_ trace: ProviderChain.Trace) { storage.withLock { $0 = trace } }
}
