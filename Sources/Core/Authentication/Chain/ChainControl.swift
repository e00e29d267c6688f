/// How a ``ProviderChain`` acts on one entry's answer: Linux-PAM's controls, with the meaning
/// `libpam/pam_dispatch.c` and `pam.conf(5)` give them.
///
/// The keywords are shorthands for action lists:
///
/// | keyword | actions |
/// |---|---|
/// | `required` | `[success=ok new_authtok_reqd=ok ignore=ignore default=bad]` |
/// | `requisite` | `[success=ok new_authtok_reqd=ok ignore=ignore default=die]` |
/// | `sufficient` | `[success=done new_authtok_reqd=done default=ignore]` |
/// | `optional` | `[success=ok new_authtok_reqd=ok default=ignore]` |
///
/// In the bracket form, a value with no action of its own takes `default`'s, and `bad` when there is
/// no `default`.
public struct ChainControl: Sendable, Hashable, CustomStringConvertible {
    /// What to do with an answer.
    public enum Action: Sendable, Hashable, CustomStringConvertible {
        /// As if the entry were not there.
        case ignore
        /// A failure; the chain goes on, and the first failure is the one reported.
        case bad
        /// A failure that ends the chain at once.
        case die
        /// A success, unless a failure came before.
        case ok
        /// A success that ends the chain, unless a failure came before.
        case done
        /// Forgets everything decided so far and goes on.
        case reset
        /// Skips the next `n` entries (`n` ≥ 1).
        case jump(Int)

        public var description: String {
            switch self {
            case .ignore: "ignore"
            case .bad: "bad"
            case .die: "die"
            case .ok: "ok"
            case .done: "done"
            case .reset: "reset"
            case .jump(let count): String(count)
            }
        }
    }

    /// The action for each value given; the others take ``defaultAction``.
    public let actions: [PAMResult: Action]
    public let defaultAction: Action
    /// The keyword this control was written as, if it was one.
    public let keyword: String?

    public init(actions: [PAMResult: Action], default defaultAction: Action = .bad) {
        self.actions = actions
        self.defaultAction = defaultAction
        self.keyword = nil
    }

    private init(keyword: String, actions: [PAMResult: Action], default defaultAction: Action) {
        self.actions = actions
        self.defaultAction = defaultAction
        self.keyword = keyword
    }

    /// `substack FILE` in a configuration, ``ProviderChain/Entry/substack(_:name:)`` in code: the entries of
    /// another stack, run in place as libpam runs a substack — sharing this stack's decision, except that
    /// `done` and `die` end only the substack, `reset` goes back to where the substack began, and a
    /// jump cannot leave it. A substack has no actions of its own.
    public static let substack = ChainControl(keyword: "substack", actions: [:], default: .ignore)

    /// Whether this is ``substack``.
    public var isSubstack: Bool { keyword == "substack" }

    /// The action for `result`.
    public func action(for result: PAMResult) -> Action {
        actions[result] ?? defaultAction
    }

    public static let required = ChainControl(
        keyword: "required", actions: [.success: .ok, .newAuthenticationTokenRequired: .ok, .ignore: .ignore],
        default: .bad)
    public static let requisite = ChainControl(
        keyword: "requisite", actions: [.success: .ok, .newAuthenticationTokenRequired: .ok, .ignore: .ignore],
        default: .die)
    public static let sufficient = ChainControl(
        keyword: "sufficient", actions: [.success: .done, .newAuthenticationTokenRequired: .done], default: .ignore)
    public static let optional = ChainControl(
        keyword: "optional", actions: [.success: .ok, .newAuthenticationTokenRequired: .ok], default: .ignore)

    /// The control as it would be written in a configuration: a keyword, or the bracket form with the
    /// codes in the order of their numbers.
    public var description: String {
        if let keyword { return keyword }
        let pairs = actions.sorted { $0.key.code < $1.key.code }.map { "\($0.key.rawValue)=\($0.value)" }
        return "[" + (pairs + ["default=\(defaultAction)"]).joined(separator: " ") + "]"
    }
}
