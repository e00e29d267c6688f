/// What a protected action asks of the signed-in identity.
///
/// ```swift
/// let anyone: Requirement = .signedIn
/// let admins: Requirement = .member(of: "admin")
/// let custom = Requirement("a local account") { $0.provider == "pam" }
/// ```
public struct Requirement: Sendable, CustomStringConvertible {
    /// How the requirement reads in messages and audit records, such as `membership of "admin"`.
    public let description: String
    private let predicate: (@Sendable (Identity) -> Bool)?

    /// A requirement checked by `predicate`, described by `description` in messages.
    public init(_ description: String, _ predicate: @escaping @Sendable (Identity) -> Bool) {
        self.description = description
        self.predicate = predicate
    }

    private init(description: String) {
        self.description = description
        self.predicate = nil
    }

    /// Any authenticated identity.
    public static let signedIn = Requirement(description: "a signed-in user")

    /// An identity that belongs to `group`.
    public static func member(of group: String) -> Requirement {
        Requirement("membership of \"\(group)\"") { $0.isMember(of: group) }
    }

    /// Whether `identity` meets the requirement.
    public func isSatisfied(by identity: Identity) -> Bool {
        guard let predicate else { return true }
        return predicate(identity)
    }
}
