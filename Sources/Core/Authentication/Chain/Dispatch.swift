import GatekeeperSupport

/// A state of ``ProviderChain/explore(_:values:start:limit:step:ended:)``'s walk: where the dispatch
/// stands, and the caller's marks.
struct ExploredState<Mark: Hashable>: Hashable {
    var dispatch: Dispatch
    var mark: Mark
}

/// The walk `_pam_dispatch_aux` makes over a stack: an impression (undecided, positive, negative) and
/// a status, saved where each substack begins; `done` and `die` skip to the end of the current
/// (sub)stack, a jump skips entries of its own level (a substack counts as one), and one that cannot
/// be made fails the stack.
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
