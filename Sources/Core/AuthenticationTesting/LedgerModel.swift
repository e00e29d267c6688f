import Authentication
import GatekeeperSupport

/// Where a ``LedgerScenario``'s choices come from: a seeded generator (a test's thousands of sequences),
/// or a fuzzer's bytes, one byte a choice (a run out of bytes chooses 0 from then on).
public struct ChoiceSource: Sendable {
    private var state: UInt64
    private let bytes: [UInt8]?
    private var offset = 0

    /// Choices from SplitMix64 seeded with `seed`: the same seed makes the same scenario.
    public init(seed: UInt64) {
        state = seed
        bytes = nil
    }

    /// Choices read from `bytes`.
    public init(bytes: [UInt8]) {
        state = 0
        self.bytes = bytes
    }

    /// A number in `0..<count`.
    public mutating func next(_ count: Int) -> Int {
        precondition(count > 0)
        guard let bytes else {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((mixed ^ (mixed >> 31)) % UInt64(count))
        }
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return Int(bytes[offset]) % count
    }

    /// One of `elements`.
    public mutating func pick<T>(_ elements: [T]) -> T { elements[next(elements.count)] }

    /// `true` about once in `count` times.
    public mutating func oneIn(_ count: Int) -> Bool { next(count) == 0 }
}

/// A random sequence of logins, password changes and remembered logins by several processes on one tally,
/// against a stack of 1–3 entries that spell names differently, with every way a login can end: refused,
/// unavailable before or after the password reached the backend, timed out, cancelled or killed at every
/// prompt (re-asked and change prompts included) and during the check. ``check(_:)`` runs it through real
/// gatekeepers and compares every tally, after every step, with a small reference model of the attempt
/// ledger's rule (docs/host-protection.md):
///
/// - a credential never presented to a backend counts nothing (a prompt shown is not a presentation);
/// - once presented, the attempt counts against the account the typed name was counted under, whatever
///   follows — a refusal, a time-out, "unavailable", a cancel or a kill — unless the answer proves the
///   credential right (the stack admits, or finds the password right but expired);
/// - each entry that refused the credential counts it against its own account, as that entry spells it;
/// - a success clears the account it admitted; a locked account is refused before anything is presented.
public struct LedgerScenario: Sendable, CustomStringConvertible {
    /// How an entry compares a typed name with its accounts.
    public enum Matching: String, Sendable, CaseIterable {
        case exact
        /// `ALICE` is `alice`.
        case caseFolding
        /// Fullwidth `ａｌｉｃｅ` and `ALICE` are `alice`, as an NFKC case fold.
        case nfkc
    }

    public enum Control: String, Sendable, CaseIterable {
        case required, requisite, sufficient
    }

    /// One entry of the stack: its accounts (its own spelling → its password), which of them have expired
    /// passwords, and whether it can look names up before a login (a helper program cannot).
    public struct Entry: Sendable {
        public var control: Control
        public var matching: Matching
        public var accounts: [String: String]
        public var expired: Set<String>
        public var looksUp: Bool

        /// The account a typed name is, as this entry spells it.
        func account(_ typed: String) -> String? {
            accounts.keys.sorted().first { LedgerScenario.fold(typed, matching) == LedgerScenario.fold($0, matching) }
        }
    }

    /// What goes wrong during a step, if anything.
    public enum Disruption: Sendable, Hashable, CustomStringConvertible {
        case none
        /// Ctrl-C at the user name prompt of attempt `n` (from 1).
        case cancelAtUsername(Int)
        /// Ctrl-C, or a kill, at the password prompt of attempt `n`: before the password is given.
        case cancelAtPassword(Int)
        case killAtPassword(Int)
        /// Entry `n` answers `unavailable` without asking anything (its server is down).
        case unavailableBefore(Int)
        /// Entry `n` answers `unavailable` after it has the password (a crash, a refused client, ...).
        case unavailableAfter(Int)
        /// Entry `n` does not answer within its time limit after it has the password.
        case timeoutAfter(Int)
        /// Ctrl-C, or a kill, while entry `n` checks the password.
        case cancelDuringCheck(Int)
        case killDuringCheck(Int)
        /// Ctrl-C, or a kill, at a password change's prompt for the current password, or the new one.
        case cancelAtCurrent, killAtCurrent, cancelAtNew, killAtNew

        public var description: String {
            switch self {
            case .none: "none"
            case .cancelAtUsername(let n): "cancel at username #\(n)"
            case .cancelAtPassword(let n): "cancel at password #\(n)"
            case .killAtPassword(let n): "kill at password #\(n)"
            case .unavailableBefore(let n): "entry \(n + 1) unavailable before presentation"
            case .unavailableAfter(let n): "entry \(n + 1) unavailable after presentation"
            case .timeoutAfter(let n): "entry \(n + 1) timed out after presentation"
            case .cancelDuringCheck(let n): "cancel during entry \(n + 1)'s check"
            case .killDuringCheck(let n): "kill during entry \(n + 1)'s check"
            case .cancelAtCurrent: "cancel at current password"
            case .killAtCurrent: "kill at current password"
            case .cancelAtNew: "cancel at new password"
            case .killAtNew: "kill at new password"
            }
        }

        var kills: Bool {
            switch self {
            case .killAtPassword, .killDuringCheck, .killAtCurrent, .killAtNew: true
            default: false
            }
        }
    }

    public enum Step: Sendable, CustomStringConvertible {
        /// An interactive login with up to two attempts: a typed name and a password for each.
        case login(process: Int, attempts: [(typed: String, password: String)], Disruption)
        /// `processes` identical logins at once, each by its own process, each with one attempt.
        case burst(processes: Int, typed: String, password: String)
        /// A sign-in with the right password of `account`, then a password change with `current`.
        case change(process: Int, account: String, entry: Int, current: String, Disruption)
        /// A fresh process that remembers a login of `account`, and a login typed as `typed`.
        case remembered(account: String, typed: String)

        public var description: String {
            switch self {
            case .login(let process, let attempts, let disruption):
                let tries = attempts.map { "\($0.typed)/\($0.password)" }.joined(separator: ", ")
                return "p\(process) login [\(tries)] \(disruption)"
            case .burst(let processes, let typed, let password):
                return "burst of \(processes) \(typed)/\(password)"
            case .change(let process, let account, _, let current, let disruption):
                return "p\(process) change \(account) current=\(current) \(disruption)"
            case .remembered(let account, let typed):
                return "remembered \(account), typed \(typed)"
            }
        }
    }

    public var deny: Int
    public var entries: [Entry]
    public var steps: [Step]

    public var description: String {
        let stack = entries.enumerated().map { index, entry in
            "  \(index + 1). \(entry.control) \(entry.matching)\(entry.looksUp ? "" : " (no look-up)") "
                + entry.accounts.keys.sorted().map { entry.expired.contains($0) ? "\($0)(expired)" : $0 }
                .joined(separator: ",")
        }
        return (["deny=\(deny)"] + stack + steps.map { "  - \($0)" }).joined(separator: "\n")
    }

    /// The names the accounts have, and the spellings a person types (the last matches no account).
    static let accountNames = ["alice", "Alice", "bob"]
    static let spellings = ["alice", "Alice", "ALICE", "ａｌｉｃｅ", "bob", "BOB", "carol"]

    /// A name under `matching`.
    static func fold(_ name: String, _ matching: Matching) -> String {
        switch matching {
        case .exact: return name
        case .caseFolding: return name.lowercased()
        case .nfkc:
            let scalars = name.unicodeScalars.map { scalar in
                (0xFF01...0xFF5E).contains(scalar.value) ? Unicode.Scalar(scalar.value - 0xFEE0)! : scalar
            }
            return String(String.UnicodeScalarView(scalars)).lowercased()
        }
    }

    /// The password entry `index` keeps for `account`: each entry's differ, so a password tells which
    /// entry it is right for.
    static func password(entry index: Int, _ account: String) -> String { "e\(index)-\(account)" }

    /// A random scenario.
    public init(_ choices: inout ChoiceSource) {
        deny = 2 + choices.next(3)
        var entries: [Entry] = []
        for index in 0..<(1 + choices.next(3)) {
            let matching = choices.pick(Matching.allCases)
            var accounts: [String: String] = [:]
            for name in Self.accountNames where choices.next(3) != 0 {
                // One account per spelling the entry cannot tell apart.
                guard !accounts.keys.contains(where: { Self.fold($0, matching) == Self.fold(name, matching) }) else {
                    continue
                }
                accounts[name] = Self.password(entry: index, name)
            }
            let expired = Set(accounts.keys.filter { _ in choices.oneIn(6) })
            entries.append(
                Entry(
                    control: choices.pick(Control.allCases), matching: matching, accounts: accounts, expired: expired,
                    looksUp: !choices.oneIn(4)))
        }
        self.entries = entries
        func password(for typed: String) -> String {
            // Mostly a password right for one of the entries' accounts this name could be, else a wrong one.
            let candidates = entries.enumerated().compactMap { index, entry in
                entry.account(typed).map { Self.password(entry: index, $0) }
            }
            return candidates.isEmpty || choices.oneIn(2) ? "wrong" : choices.pick(candidates)
        }
        var steps: [Step] = []
        for _ in 0..<(3 + choices.next(6)) {
            switch choices.next(10) {
            case 0:
                steps.append(
                    .burst(processes: 2 + choices.next(7), typed: choices.pick(Self.spellings), password: "wrong"))
            case 1:
                let account = choices.pick(Self.accountNames)
                steps.append(.remembered(account: account, typed: choices.pick(Self.spellings)))
            case 2, 3:
                let holders = entries.indices.filter { entries[$0].accounts[choices.pick(Self.accountNames)] != nil }
                guard let entry = holders.first else { continue }
                let account = choices.pick(entries[entry].accounts.keys.sorted())
                let current = choices.oneIn(2) ? Self.password(entry: entry, account) : "wrong"
                let disruption = choices.pick(
                    [
                        .none, .none, .cancelAtCurrent, .killAtCurrent, .cancelAtNew, .killAtNew,
                        .unavailableAfter(choices.next(entries.count)), .cancelDuringCheck(choices.next(entries.count)),
                    ] as [Disruption])
                steps.append(
                    .change(
                        process: choices.next(3), account: account, entry: entry, current: current, disruption))
            default:
                let attempts = (0..<(1 + choices.next(2))).map { _ in
                    let typed = choices.pick(Self.spellings)
                    return (typed, password(for: typed))
                }
                let entry = choices.next(entries.count)
                let attempt = 1 + choices.next(attempts.count)
                let disruption = choices.pick(
                    [
                        .none, .none, .none, .cancelAtUsername(attempt), .cancelAtPassword(attempt),
                        .killAtPassword(attempt), .unavailableBefore(entry), .unavailableAfter(entry),
                        .timeoutAfter(entry), .cancelDuringCheck(entry), .killDuringCheck(entry), .cancelAtNew,
                        .killAtNew,
                    ] as [Disruption])
                steps.append(.login(process: choices.next(3), attempts: attempts, disruption))
            }
        }
        self.steps = steps
    }
}
