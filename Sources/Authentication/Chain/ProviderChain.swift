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
/// - `reset` forgets what was decided so far; a jump `N` skips the next `N` entries; one that would go
///   past the end of the stack fails it ("bad jump in stack"), and the stack goes on.
/// - A substack (``Entry/substack(_:name:)``) runs in place: `done` and `die` end only it, `reset`
///   goes back to where it began, and a jump cannot leave it; `incomplete` ends everything at once.
/// - A chain in which nothing counted (every entry ignored) fails with `PAM_PERM_DENIED`, and so does
///   one that "succeeded" without any success.
///
/// The identity is the one the first counted success of an entry that *establishes* an identity gave
/// (``AuthProvider/establishesIdentity``: the password entry, not a one-time code) — as PAM's `PAM_USER`
/// is set by the first module that sets it, and the account's details then come from the user database,
/// never from a second factor. A later entry's success confirms it and must answer for the same user: a
/// success for anyone else counts as a wrong credential. Groups, display name and attributes are never
/// a factor's. Cancellation stops the chain at once: no later entry asks anything, and the login is
/// cancelled, not failed. Every login answers, with ``authenticateWithTrace(_:)``, a ``Trace`` of which
/// entry answered what, which entry gave the identity, and what decided.
public final class ProviderChain: AuthProvider {
    /// One provider and how its answer counts.
    public struct Entry: Sendable {
        public var control: ChainControl
        public var provider: any AuthProvider

        public init(_ control: ChainControl, _ provider: any AuthProvider) {
            self.control = control
            self.provider = provider
        }

        /// `entries` run in place as a substack (``ChainControl/substack``): they share the stack's
        /// decision, but a `done` or `die` among them ends only the substack, a `reset` goes back to
        /// where it began, and no jump leaves it; a jump before it skips it as one entry.
        public static func substack(_ entries: [Entry], name: String = "substack") -> Entry {
            Entry(.substack, ProviderChain(name: name, entries))
        }
    }

    /// A stack's shape as the dispatch walks it: entries and substacks, without their providers.
    public indirect enum Layout: Sendable, Hashable {
        case entry(ChainControl)
        case substack([Layout])
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
            /// How many substacks deep the entry is (0 in the stack itself).
            public var depth: Int = 0
            /// Which backend of its kind the entry is (``AuthProvider/detail``): an issuer, a server.
            public var detail: String? = nil
            /// When the entry's provider is itself a stack (not a substack, which runs in place): the
            /// steps of its own login.
            public var nested: [Step] = []
            /// The account the entry's answer named, in the entry's own spelling: the one it admitted, or
            /// the one it refused (``AuthOutcome/rejected(_:canonicalUsername:)``); `nil` when it named none.
            public var account: String? = nil

            /// Whether this entry, or an entry of a stack nested in it, refused a credential (`auth_err`,
            /// `maxtries`).
            var refusedCredential: Bool {
                result.refusesCredential || nested.contains(where: \.refusedCredential)
            }
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

        /// Whether an entry of the stack, or of a stack nested in it, refused a credential (`auth_err`,
        /// `maxtries`): a login it ended is a failed guess, whatever the stack's own answer.
        public var refusedCredential: Bool { steps.contains(where: \.refusedCredential) }

        /// Every account an entry's answer named, nested stacks' entries included (a nested stack's own step
        /// names what its entries named, so it is not counted again), with whether the entry refused the
        /// credential (`auth_err`, `maxtries`); `nil` for an entry that refused and named none (it refused
        /// the name as typed). The attempt ledger counts a guess against each refusing entry's account, and
        /// answers a login that names a locked account as locked.
        public var namings: [(account: String?, refused: Bool)] {
            func namings(_ steps: [Step]) -> [(account: String?, refused: Bool)] {
                steps.flatMap { step -> [(account: String?, refused: Bool)] in
                    guard step.nested.isEmpty else { return namings(step.nested) }
                    let refused = step.result.refusesCredential
                    return refused || step.account != nil ? [(step.account, refused)] : []
                }
            }
            return namings(steps)
        }

        /// The accounts of the entries that refused the credential (``namings``).
        public var refusals: [String?] { namings.filter(\.refused).map(\.account) }

        public var description: String {
            func lines(_ steps: [Step], indent: Int) -> [String] {
                steps.flatMap { step in
                    let line =
                        String(repeating: "  ", count: indent + step.depth)
                        + "\(step.index + 1). \(step.control) \(step.provider)"
                        + (step.detail.map { " (\($0))" } ?? "") + ": \(step.result.rawValue) -> \(step.action)"
                    return [line] + lines(step.nested, indent: indent + step.depth + 1)
                }
            }
            let identity = identityEntry.map { ["identity: \($0)"] } ?? []
            return (lines(steps, indent: 0) + identity + ["result: \(result.rawValue)"]).joined(separator: "\n")
        }
    }

    public let name: String
    public let entries: [Entry]
    /// The entries of the stack and of its substacks, in the order the dispatch meets them.
    private let modules: [Entry]
    /// Each module's provider name and control as a trace shows them, made once rather than at every login.
    private let labels: [(provider: String, control: String, detail: String?)]
    private let steps: [Dispatch.Step]

    /// - Parameter name: The chain's name in identities it did not make itself and in audit records.
    public init(name: String = "chain", _ entries: [Entry]) {
        self.name = name
        self.entries = entries
        var modules: [Entry] = []
        var steps: [Dispatch.Step] = []
        func flatten(_ entries: [Entry], level: Int) {
            for entry in entries {
                guard entry.control.isSubstack else {
                    steps.append(.init(level: level, control: entry.control, module: modules.count))
                    modules.append(entry)
                    continue
                }
                steps.append(.init(level: level, control: nil, module: modules.count))
                // A substack control on a provider that is no chain: a substack of that one provider.
                let inner = (entry.provider as? ProviderChain)?.entries ?? [Entry(.required, entry.provider)]
                flatten(inner, level: level + 1)
            }
        }
        flatten(entries, level: 0)
        self.modules = modules
        self.steps = steps
        labels = modules.map { ($0.provider.name, $0.control.description, $0.provider.detail) }
    }

    /// The stack's shape, substacks included.
    public var layout: [Layout] {
        entries.map { entry in
            guard entry.control.isSubstack else { return .entry(entry.control) }
            return (entry.provider as? ProviderChain).map { .substack($0.layout) } ?? .substack([.entry(.required)])
        }
    }

    /// Its backends, in order: its entries that are not stacks themselves, and those of nested stacks — two
    /// entries of one kind (two users files) being two backends.
    public var backends: [any AuthProvider] {
        entries.flatMap { entry in (entry.provider as? ProviderChain)?.backends ?? [entry.provider] }
    }

    /// The names of the providers an identity from this chain may carry: its entries', nested chains'
    /// included.
    public var providerNames: Set<String> {
        entries.reduce(into: [name]) { names, entry in
            names.formUnion((entry.provider as? ProviderChain)?.providerNames ?? [entry.provider.name])
        }
    }

    /// Asks the entry that signed `identity` in (by its provider's name), searching nested stacks — and
    /// every other entry that keeps passwords (``AuthProvider/changesPasswords``: an account of its own,
    /// that can be locked or expire), any of which refuses a remembered login for an account it has
    /// locked, expired, not activated, or whose password must be changed first. An entry that does not
    /// know the account says nothing against it.
    public func recheck(_ identity: Identity) async -> Recheck {
        var answer = Recheck.unverifiable
        var asked = false
        for entry in entries {
            let owns =
                (entry.provider as? ProviderChain)?.providerNames.contains(identity.provider)
                ?? (entry.provider.name == identity.provider)
            if owns && !asked {
                asked = true
                answer = await entry.provider.recheck(identity)
                if case .valid = answer { continue }
                return answer
            }
            guard entry.provider.changesPasswords else { continue }
            if case .refused(let why) = await entry.provider.recheck(identity), Self.vetoes.contains(why.code) {
                return .refused(why)
            }
        }
        return answer
    }

    /// What an entry other than the one that signed a person in may say against a remembered login.
    private static let vetoes: Set<AuthError.Code> = [
        .accountLocked, .accountExpired, .passwordChangeRequired, .accountNotActivated,
    ]

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        try await authenticateWithTrace(request).outcome
    }

    /// The login, and its trace: which entry answered what, which one gave the identity, and what decided.
    public func authenticateWithTrace(_ request: AuthRequest) async throws(AuthError) -> Traced<AuthOutcome> {
        // The identity so far, the entry that gave it, and whether that entry establishes identities.
        var identity: (who: Identity, index: Int, establishes: Bool)?
        var rejection: (Rejection, String?)?
        var reason: String?
        // Any entry whose password was right but expired: the identity kept, whichever it is, says so.
        var mustChangePassword = false
        // The person answers each question once per login, as PAM modules share PAM_AUTHTOK
        // (`use_first_pass`): a later entry asking the same question gets the same answer.
        var shared = request
        shared.conversation = SharingConversation(request.conversation)
        var outcome = AuthOutcome.ignored
        var trace = try await walk { (index, entry) async throws(AuthError) -> (PAMResult, Trace?, String?) in
            let answer = try await entry.provider.authenticateWithTrace(shared)
            outcome = answer.outcome.normalized
            // A factor vouching for someone other than the user the stack has is no confirmation.
            if case .authenticated(let who) = outcome, let current = identity,
                !Username.same(who.username, current.who.username)
            {
                outcome = .rejected(.wrongCredentials, canonicalUsername: current.who.username)
            }
            // Any entry that found its password right but expired, whatever its control made of the success
            // (a jump over `pam_deny` counts nothing): the admitted identity says so.
            if case .authenticated(let who) = outcome, who.mustChangePassword { mustChangePassword = true }
            let account: String? =
                switch outcome {
                case .authenticated(let who): who.username
                case .rejected(_, let canonical): canonical
                default: nil
                }
            return (outcome.pamResult, answer.trace, account)
        } counted: { index, entry in
            switch outcome {
            case .authenticated(let who):
                let establishes = entry.provider.establishesIdentity
                if identity == nil || (establishes && identity?.establishes == false) {
                    identity = (who, index, establishes)
                }
            case .rejected(let why, let canonical): rejection = (why, canonical)
            case .unavailable(let why), .failed(_, let why): reason = why
            case .notMine, .ignored: break
            }
        }
        if trace.result == .success, let identity {
            trace.identityEntry = "\(identity.index + 1):\(labels[identity.index].provider)"
        }
        var admitted = identity?.who
        if mustChangePassword { admitted?.mustChangePassword = true }
        let decided = self.outcome(trace.result, identity: admitted, rejection: rejection, reason: reason)
        return Traced(decided, trace: trace)
    }

    /// Whether any entry keeps passwords it can change.
    public var changesPasswords: Bool { modules.contains { $0.provider.changesPasswords } }

    /// One pass of a password change through the stack, with the controls and rules of a login, as
    /// libpam dispatches each pass of `pam_chauthtok` over the service's stack: an entry that keeps no
    /// password answers `ignore` and so does not count. The refusal reported is the one of the entry
    /// whose answer decided.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        try await changePasswordWithTrace(request).outcome
    }

    /// One pass of a password change, and its trace.
    public func changePasswordWithTrace(_ request: PasswordChangeRequest) async throws(AuthError)
        -> Traced<PasswordChangeOutcome>
    {
        var shared = request
        shared.conversation = SharingConversation(request.conversation)
        var outcome = PasswordChangeOutcome.ignored
        var decided: PasswordChangeOutcome?
        let trace = try await walk { (_, entry) async throws(AuthError) -> (PAMResult, Trace?, String?) in
            let answer = try await entry.provider.changePasswordWithTrace(shared)
            outcome = answer.outcome
            return (outcome.pamResult, answer.trace, nil)
        } counted: { _, _ in
            decided = outcome
        }
        if let decided, decided.pamResult == trace.result { return Traced(decided, trace: trace) }
        return Traced(
            PasswordChangeOutcome(pamResult: trace.result, reason: "the stack answered \(trace.result.rawValue)"),
            trace: trace)
    }

    /// Walks the stack as `_pam_dispatch_aux` does: `answer` runs an entry and gives its PAM result (and,
    /// when the entry is itself a stack, that stack's trace, and the account its answer named); `counted` is told of each entry whose answer
    /// became the stack's status. Cancellation ends the walk at once: no later entry runs.
    private func walk(
        _ answer: (Int, Entry) async throws(AuthError) -> (PAMResult, Trace?, String?),
        counted: (Int, Entry) -> Void
    ) async throws(AuthError) -> Trace {
        var dispatch = Dispatch(steps)
        var trace = Trace()
        trace.steps.reserveCapacity(modules.count)
        while let index = dispatch.next() {
            if Task.isCancelled { throw .cancelled }
            let entry = modules[index]
            let (result, nested, account) = try await answer(index, entry)
            let depth = dispatch.depth
            let (action, isCounted) = dispatch.apply(result)
            trace.steps.append(
                .init(
                    index: index, provider: labels[index].provider, control: labels[index].control, result: result,
                    action: action, depth: depth, detail: labels[index].detail, nested: nested?.steps ?? [],
                    account: account))
            if isCounted { counted(index, entry) }
        }
        trace.result = dispatch.result
        return trace
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
        case .authenticationError:
            if let (why, canonical) = rejection, why.pamResult == .authenticationError {
                return .rejected(why, canonicalUsername: canonical)
            }
            return .rejected(.wrongCredentials, canonicalUsername: rejection?.1)
        case .authinfoUnavailable:
            return .unavailable(reason: reason ?? "every provider of the stack was down")
        default:
            // The refusal of the entry that decided, as it gave it (an account not activated, not only
            // "refused by policy").
            if let (why, canonical) = rejection, why.pamResult == result {
                return .rejected(why, canonicalUsername: canonical)
            }
            return AuthOutcome(
                pamResult: result, reason: reason ?? "the stack answered \(result.rawValue)",
                canonicalUsername: rejection?.1)
        }
    }
}

extension ProviderChain {
    /// What a stack shaped as `layout` gives when its entries (substacks' included, in order) answer
    /// `answers` in turn (an entry that does not run ignores its answer): the result, and which entries
    /// ran. The rules of ``authenticate(_:)``, without the providers, for checking a stack before it is used.
    public static func dispatch(_ layout: [Layout], answers: [PAMResult]) -> (result: PAMResult, ran: [Int]) {
        var dispatch = Dispatch(Dispatch.flattened(layout))
        var ran: [Int] = []
        while let index = dispatch.next() {
            precondition(index < answers.count, "one answer per entry")
            ran.append(index)
            _ = dispatch.apply(answers[index])
        }
        return (dispatch.result, ran)
    }

    /// Every way `layout` can end when its entries may answer any of `values`, found by walking each
    /// distinct state of the dispatch once — not each combination of answers — so a stack of a thousand
    /// entries is explored whole, in time that grows with its entries and the states they lead to. The
    /// walk keeps `Mark`s of the caller's own (what ran, say), moved on by `step` at each answer; `ended`
    /// hears each distinct end — the stack's result, the marks, and the answers that led there (entry
    /// index, answer) — and stops the walk by returning `false`.
    /// - Returns: `false` when the walk stopped at `limit` distinct states before it had seen every end.
    package static func explore<Mark: Hashable>(
        _ layout: [Layout],
        values: [PAMResult],
        start: Mark,
        limit: Int = 1_000_000,
        step: (Mark, _ entry: Int, _ answer: PAMResult) -> Mark,
        ended: (PAMResult, Mark, _ answers: () -> [(entry: Int, answer: PAMResult)]) -> Bool
    ) -> Bool {
        typealias State = ExploredState<Mark>
        var first = Dispatch(Dispatch.flattened(layout))
        var parent: [State: (from: State, entry: Int, answer: PAMResult)?] = [:]
        var pending: [State] = []
        func answers(to state: State) -> [(entry: Int, answer: PAMResult)] {
            var path: [(entry: Int, answer: PAMResult)] = []
            var current = state
            while let link = parent[current] ?? nil {
                path.append((link.entry, link.answer))
                current = link.from
            }
            return path.reversed()
        }
        _ = first.next()
        let start = State(dispatch: first, mark: start)
        parent[start] = .some(nil)
        pending.append(start)
        while let state = pending.popLast() {
            var dispatch = state.dispatch
            guard let index = dispatch.next() else {
                if !ended(dispatch.result, state.mark, { answers(to: state) }) { return true }
                continue
            }
            for value in values {
                var next = dispatch
                _ = next.apply(value)
                _ = next.next()
                let successor = State(dispatch: next, mark: step(state.mark, index, value))
                guard parent[successor] == nil else { continue }
                guard parent.count < limit else { return false }
                parent[successor] = .some((state, index, value))
                pending.append(successor)
            }
        }
        return true
    }

    /// The jumps of `layout` that go past the end of their stack or substack, by entry (in order, from 0)
    /// and the number of entries that follow it there. libpam loads such a stack and fails the login
    /// ("bad jump in stack") when the jump is taken; so does a chain.
    public static func jumpsPastTheEnd(_ layout: [Layout]) -> [(entry: Int, jump: Int, following: Int)] {
        var found: [(entry: Int, jump: Int, following: Int)] = []
        var index = 0
        func walk(_ layout: [Layout]) {
            for (position, element) in layout.enumerated() {
                switch element {
                case .substack(let inner): walk(inner)
                case .entry(let control):
                    let following = layout.count - position - 1
                    let jumps = (Array(control.actions.values) + [control.defaultAction]).compactMap {
                        if case .jump(let count) = $0 { count } else { nil }
                    }
                    if let far = jumps.max(), far > following { found.append((index, far, following)) }
                    index += 1
                }
            }
        }
        walk(layout)
        return found
    }
}

/// The walk `_pam_dispatch_aux` makes over a stack: an impression (undecided, positive, negative) and
/// a status, saved where each substack begins; `done` and `die` skip to the end of the current
/// (sub)stack, a jump skips entries of its own level (a substack counts as one), and one that cannot
/// be made fails the stack.
/// A state of ``ProviderChain/explore(_:values:start:limit:step:ended:)``'s walk: where the dispatch
/// stands, and the caller's marks.
struct ExploredState<Mark: Hashable>: Hashable {
    var dispatch: Dispatch
    var mark: Mark
}

struct Dispatch: Hashable {
    enum Impression { case undecided, positive, negative }

    /// Two walks of one stack are alike when they stand at the same place with the same impression,
    /// status and saved states (the steps are the stack's, the same for both).
    static func == (a: Dispatch, b: Dispatch) -> Bool {
        a.position == b.position && a.previousLevel == b.previousLevel && a.impression == b.impression
            && a.status == b.status && a.incomplete == b.incomplete && a.saved.elementsEqual(b.saved, by: ==)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(position)
        hasher.combine(previousLevel)
        hasher.combine(impression)
        hasher.combine(status)
        hasher.combine(incomplete)
        for (impression, status) in saved {
            hasher.combine(impression)
            hasher.combine(status)
        }
    }

    /// One line of the flattened stack: an entry (with its index among the entries), or where a
    /// substack begins (`control` nil).
    struct Step {
        var level: Int
        var control: ChainControl?
        var module: Int
    }

    private let steps: [Step]
    private var position = 0
    private var previousLevel = 0
    private var impression = Impression.undecided
    /// PAM's `PAM_MUST_FAIL_CODE` until something decides.
    private var status = PAMResult.permissionDenied
    /// The impression and status where the substack of each level began.
    private var saved: [(Impression, PAMResult)]
    private var incomplete = false

    init(_ steps: [Step]) {
        self.steps = steps
        saved = Array(repeating: (.undecided, .permissionDenied), count: (steps.map(\.level).max() ?? 0) + 1)
    }

    static func flattened(_ layout: [ProviderChain.Layout]) -> [Step] {
        var steps: [Step] = []
        var modules = 0
        func flatten(_ layout: [ProviderChain.Layout], level: Int) {
            for element in layout {
                switch element {
                case .entry(let control):
                    steps.append(.init(level: level, control: control, module: modules))
                    modules += 1
                case .substack(let inner):
                    steps.append(.init(level: level, control: nil, module: modules))
                    flatten(inner, level: level + 1)
                }
            }
        }
        flatten(layout, level: 0)
        return steps
    }

    /// How many substacks deep the entry ``next()`` gave is.
    var depth: Int { position < steps.count ? steps[position].level : 0 }

    /// The entry to run next, by its index among the entries; `nil` once the stack is decided.
    mutating func next() -> Int? {
        while position < steps.count {
            let step = steps[position]
            if previousLevel < step.level { saved[step.level] = (impression, status) }
            guard step.control == nil else { return step.module }
            previousLevel = step.level
            position += 1
        }
        return nil
    }

    /// Applies the answer of the entry ``next()`` gave: its action, and whether its answer became the
    /// stack's status.
    mutating func apply(_ result: PAMResult) -> (ChainControl.Action, counted: Bool) {
        let step = steps[position]
        let level = step.level
        let action = step.control!.action(for: result)
        defer {
            previousLevel = level
            position += 1
        }
        // A module that waits for the application ends the stack at once with its code.
        if result == .incomplete {
            incomplete = true
            position = steps.count
            return (action, false)
        }
        var counted = false
        switch action {
        case .reset:
            (impression, status) = saved[level]
        case .ok, .done:
            if impression == .undecided || (impression == .positive && status == .success) {
                impression = .positive
                status = result
                counted = true
            }
            if impression == .positive && action == .done { skipToTheEnd(of: level) }
        case .bad, .die:
            if impression != .negative {
                impression = .negative
                status = result == .ignore ? .permissionDenied : result
                counted = true
            }
            if action == .die { skipToTheEnd(of: level) }
        case .ignore:
            break
        case .jump(let count):
            // Counted down, never added, so no jump, however large, can overflow.
            var remaining = max(count, 0)
            while remaining > 0, position + 1 < steps.count, steps[position + 1].level >= level {
                repeat { position += 1 } while position + 1 < steps.count && steps[position + 1].level > level
                remaining -= 1
            }
            if remaining > 0 {
                // "bad jump in stack": it cannot succeed.
                impression = .negative
                status = .permissionDenied
            }
        }
        return (action, counted)
    }

    private mutating func skipToTheEnd(of level: Int) {
        while position + 1 < steps.count && steps[position + 1].level >= level { position += 1 }
    }

    /// The stack's result: a success only with a positive impression.
    var result: PAMResult {
        if incomplete { return .incomplete }
        return status == .success && impression != .positive ? .permissionDenied : status
    }
}

/// A conversation that asks each hidden question once: the answer is kept for this login only (a
/// `Secret`, wiped when the login ends) and given again to a later entry asking the same prompt.
final class SharingConversation: Conversation {
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
    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }
    func pause(_ prompt: String) async throws(AuthError) { try await base.pause(prompt) }
}
