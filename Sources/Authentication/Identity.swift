/// Who signed in: what a provider knows about an authenticated user.
///
/// A value type backed by one shared, copy-on-write storage object, so handing an identity to every
/// protected action costs one reference count, not one per field.
public struct Identity: Hashable, Sendable {
    private var storage: Storage

    public init(
        username: String,
        displayName: String? = nil,
        groups: Set<String> = [],
        provider: String,
        attributes: [String: String] = [:]
    ) {
        storage = Storage(
            username: username,
            displayName: displayName ?? username,
            groups: groups,
            provider: provider,
            attributes: attributes
        )
    }

    /// The user name the person signed in with.
    public var username: String {
        get { storage.username }
        set { uniqueStorage().username = newValue }
    }

    /// A name to show people; the user name when the backend has none.
    public var displayName: String {
        get { storage.displayName }
        set { uniqueStorage().displayName = newValue }
    }

    /// The groups the user belongs to, as the backend reports them.
    public var groups: Set<String> {
        get { storage.groups }
        set { uniqueStorage().groups = newValue }
    }

    /// The name of the provider that authenticated the user (for example `"mock"` or `"pam"`).
    public var provider: String {
        get { storage.provider }
        set { uniqueStorage().provider = newValue }
    }

    /// Further facts from the backend, such as `uid`, `gid`, `home` or `shell`. Never secrets.
    public var attributes: [String: String] {
        get { storage.attributes }
        set { uniqueStorage().attributes = newValue }
    }

    /// Whether the user belongs to `group`.
    public func isMember(of group: String) -> Bool { storage.groups.contains(group) }

    /// The attribute that marks a password found right but expired (``mustChangePassword``).
    public static let passwordExpiredAttribute = "password_expired"

    /// Whether the password was right but has expired, and must be changed before the login admits
    /// anyone: set by a provider answering a login that may change it
    /// (``AuthRequest/mayChangeExpiredPassword``), kept by a stack whichever entry's identity it keeps, and
    /// acted on by the ``Gatekeeper`` once the whole stack has admitted the person, as `login` calls
    /// `pam_chauthtok` only after `pam_authenticate` and `pam_acct_mgmt`.
    public var mustChangePassword: Bool {
        get { storage.attributes[Self.passwordExpiredAttribute] == "yes" }
        set { uniqueStorage().attributes[Self.passwordExpiredAttribute] = newValue ? "yes" : nil }
    }

    public static func == (lhs: Identity, rhs: Identity) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// `@unchecked Sendable`: mutated only through `uniqueStorage()`, that is, when no other value shares it.
    private final class Storage: @unchecked Sendable {
        var username: String
        var displayName: String
        var groups: Set<String>
        var provider: String
        var attributes: [String: String]

        init(username: String, displayName: String, groups: Set<String>, provider: String, attributes: [String: String])
        {
            self.username = username
            self.displayName = displayName
            self.groups = groups
            self.provider = provider
            self.attributes = attributes
        }

        struct Fields: Hashable {
            var username: String
            var displayName: String
            var groups: Set<String>
            var provider: String
            var attributes: [String: String]
        }

        var fields: Fields {
            Fields(
                username: username, displayName: displayName, groups: groups, provider: provider, attributes: attributes
            )
        }

        func copy() -> Storage {
            Storage(
                username: username, displayName: displayName, groups: groups, provider: provider, attributes: attributes
            )
        }
    }
}

extension Identity: CustomStringConvertible {
    public var description: String {
        let groupList = groups.sorted().joined(separator: ",")
        return "\(username) (\(displayName)) via \(provider), groups: [\(groupList)]"
    }
}
