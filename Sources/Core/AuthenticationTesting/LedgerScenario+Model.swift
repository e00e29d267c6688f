import Authentication
import GatekeeperSupport

/// The reference model: the rule, over tallies, in as few lines as it takes.
struct Model {
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
