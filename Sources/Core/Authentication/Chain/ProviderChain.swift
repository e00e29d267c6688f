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

    public let name: String
    public let entries: [Entry]
    /// The entries of the stack and of its substacks, in the order the dispatch meets them.
    let modules: [Entry]
    /// Each module's provider name and control as a trace shows them, made once rather than at every login.
    let labels: [(provider: String, control: String, detail: String?)]
    let steps: [Dispatch.Step]

    /// - Parameters:
    ///   - name: The chain's name in identities it did not make itself and in audit records.
    ///   - entries: The stack's entries, in order, each a provider with its control.
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
    static let vetoes: Set<AuthError.Code> = [
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
    func walk(
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
    func outcome(
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
