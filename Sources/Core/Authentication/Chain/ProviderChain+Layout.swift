import GatekeeperSupport

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
