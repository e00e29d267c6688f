import GatekeeperSupport

extension ProviderChain {
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
}
