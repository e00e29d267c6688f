import Authentication
public import ProviderPlugins

/// What `--check-config` says about a stack: the stack as resolved, and the stacks an admin would not
/// want, found by running the stack's rules on every combination of answers (up to six entries) or, past
/// that, on every distinct state the walk over the stack can reach; past-the-end jumps are named.
public struct StackCheck: Sendable {
    /// The configuration normalised (``StackConfiguration/normalizedLines(annotated:settings:)``): a file
    /// that parses as the same stack, each entry with its number and the bracket its keyword stands for.
    public let resolved: [String]
    public let warnings: [String]

    /// - Parameter settings: The setting lines as the host normalises them
    ///   (``StackSettings/lines``); without them, as written.
    public init(_ configuration: StackConfiguration, settings: [String]? = nil, registry: ProviderRegistry) {
        let entries = configuration.providerEntries
        resolved = configuration.normalizedLines(annotated: true, settings: settings)
        let layout = configuration.layout
        let checks = entries.map {
            !$0.isMissing && (try? registry.resolve($0.provider))??.checksCredentials ?? true
        }
        let mandatory = entries.map { $0.control.keyword == "required" || $0.control.keyword == "requisite" }
        var canSucceed = false
        var succeedsWithoutRequired: [PAMResult]?
        var succeedsUnchecked: [PAMResult]?
        // Codes no control names behave alike (each takes its entry's default), so one of them stands
        // for all; `success` and `ignore` are special to the dispatch and always tried.
        let named = Set(layout.flatMap(Self.controls).flatMap(\.actions.keys)).union([.success, .ignore])
        let values =
            PAMResult.allCases.filter(named.contains)
            + PAMResult.allCases.filter { !named.contains($0) && $0 != .incomplete }.prefix(1)
        func consider(_ answers: [PAMResult]) {
            let (result, ran) = ProviderChain.dispatch(layout, answers: answers)
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
        let combinations = entries.indices.reduce(1.0) { product, _ in product * Double(values.count) }
        if combinations <= 600_000 {
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
            // Too many combinations to try each: every distinct state of the walk instead, which finds
            // every way the stack can end (a thousand entries in well under a second). The marks: whether
            // a required or requisite entry ran, whether an entry that checks a credential answered
            // success. Entries a path never ran answer the first value in the examples printed.
            struct Mark: Hashable {
                var ranMandatory = false
                var checked = false
            }
            func example(_ path: [(entry: Int, answer: PAMResult)]) -> [PAMResult] {
                var answers = [PAMResult](repeating: values[0], count: entries.count)
                for (entry, answer) in path { answers[entry] = answer }
                return answers
            }
            let complete = ProviderChain.explore(
                layout, values: values, start: Mark(),
                step: { mark, entry, answer in
                    Mark(
                        ranMandatory: mark.ranMandatory || mandatory[entry],
                        checked: mark.checked || (checks[entry] && answer == .success))
                },
                ended: { result, mark, path in
                    guard result == .success else { return true }
                    canSucceed = true
                    if mandatory.contains(true), succeedsWithoutRequired == nil, !mark.ranMandatory {
                        succeedsWithoutRequired = example(path())
                    }
                    if succeedsUnchecked == nil, !mark.checked { succeedsUnchecked = example(path()) }
                    return true
                })
            if !complete {
                // A stack whose walk has more states than that (substacks that reset, deep): sampled.
                var generator = SystemRandomNumberGenerator()
                for _ in 0..<200_000 {
                    consider(entries.map { _ in values.randomElement(using: &generator)! })
                }
            }
        }
        var warnings: [String] = []
        for entry in entries where entry.isMissing {
            warnings.append(
                "\(entry.location): -\(entry.provider) is not installed here: the entry answers module_unknown at "
                    + "every login, as libpam's entry for a missing module does")
        }
        for (index, jump, following) in ProviderChain.jumpsPastTheEnd(layout) {
            let entry = entries[index]
            warnings.append(
                "\(entry.location): entry \(index + 1) jumps \(jump) past the end of its "
                    + (entry.depth == 0 ? "stack" : "substack")
                    + " (\(following) entries follow): as libpam, the login fails when that jump is taken")
        }
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

    private static func controls(_ layout: ProviderChain.Layout) -> [ChainControl] {
        switch layout {
        case .entry(let control): [control]
        case .substack(let inner): inner.flatMap(controls)
        }
    }
}
