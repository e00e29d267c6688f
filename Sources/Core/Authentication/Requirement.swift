/// What a protected action asks of the signed-in identity.
///
/// ```swift
/// let anyone: Requirement = .signedIn
/// let admins: Requirement = .member(of: "admin")
/// let custom = Requirement("a local account") { $0.provider == "pam" }
/// ```
public struct Requirement: Sendable, CustomStringConvertible {
    private enum Kind: Sendable {
        case signedIn
        case member(String)
        case custom(String, @Sendable (Identity) -> Bool)
    }

    private let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// A requirement checked by `predicate`, described by `description` in messages.
    public init(_ description: String, _ predicate: @escaping @Sendable (Identity) -> Bool) {
        kind = .custom(description, predicate)
    }

    /// Any authenticated identity.
    public static let signedIn = Requirement(.signedIn)

    /// An identity that belongs to `group`.
    public static func member(of group: String) -> Requirement {
        Requirement(.member(group))
    }

    /// How the requirement reads in messages and audit records, such as `membership of "admin"`.
    public var description: String {
        switch kind {
        case .signedIn: "a signed-in user"
        case .member(let group): "membership of \"\(group)\""
        case .custom(let description, _): description
        }
    }

    /// Whether `identity` meets the requirement.
    public func isSatisfied(by identity: Identity) -> Bool {
        switch kind {
        case .signedIn: true
        case .member(let group): identity.isMember(of: group)
        case .custom(_, let predicate): predicate(identity)
        }
    }
}
