public import Authentication
public import ProviderPlugins

/// What `--check-config` says about a stack: the stack as resolved, and the stacks an admin would not
/// want, found by running the stack's rules on every combination of answers (up to six entries; more
/// are sampled).
public struct StackCheck: Sendable {
    /// One line per entry: the control in full and the provider with its options.
    public let resolved: [String]
    public let warnings: [String]

    public init(_ configuration: StackConfiguration, registry: ProviderRegistry) {
        let entries = configuration.entries
        resolved = entries.enumerated().map { index, entry in
            let options = entry.options.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            let control =
                entry.control.keyword.map {
                    "\($0) \(ChainControl(actions: entry.control.actions, default: entry.control.defaultAction))"
                }
                ?? entry.control.description
            return "\(index + 1). \(control) \(([entry.provider] + options).joined(separator: " "))"
        }
        let controls = entries.map(\.control)
        let checks = entries.map { (try? registry.resolve($0.provider))??.checksCredentials ?? true }
        let mandatory = entries.map { $0.control.keyword == "required" || $0.control.keyword == "requisite" }
        var canSucceed = false
        var succeedsWithoutRequired: [PAMResult]?
        var succeedsUnchecked: [PAMResult]?
        let values = PAMResult.allCases
        func consider(_ answers: [PAMResult]) {
            let (result, ran) = ProviderChain.dispatch(controls, answers: answers)
            guard result == .success else { return }
            canSucceed = true
            if mandatory.contains(true), succeedsWithoutRequired == nil, !ran.contains(where: { mandatory[$0] }) {
                succeedsWithoutRequired = answers
            }
            // A success that no credential check took part in: every entry that ran and answered
            // success asks nothing.
            let checked = ran.contains { checks[$0] && answers[$0] == .success }
            if succeedsUnchecked == nil, !checked { succeedsUnchecked = answers }
        }
        if entries.count <= 6 {
            var answers = [PAMResult](repeating: .success, count: entries.count)
            func enumerate(_ position: Int) {
                guard position < answers.count else { return consider(answers) }
                for value in values {
                    answers[position] = value
                    enumerate(position + 1)
                }
            }
            enumerate(0)
        } else {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<200_000 {
                consider(entries.map { _ in values.randomElement(using: &generator)! })
            }
        }
        var warnings: [String] = []
        if entries.isEmpty {
            warnings.append("the stack is empty: every login fails")
        } else if !canSucceed {
            warnings.append("no combination of answers makes this stack succeed: every login fails")
        }
        if let answers = succeedsWithoutRequired {
            warnings.append(
                "the stack can succeed before any required or requisite entry runs, e.g. when the entries answer "
                    + answers.map(\.rawValue).joined(separator: ", "))
        }
        if let answers = succeedsUnchecked {
            warnings.append(
                "the stack can succeed without any entry that checks a password or code, e.g. when the entries answer "
                    + answers.map(\.rawValue).joined(separator: ", "))
        }
        self.warnings = warnings
    }
}
