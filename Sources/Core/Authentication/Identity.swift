import GatekeeperSupport

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
            groups: .known(groups),
            provider: provider,
            attributes: attributes
        )
    }

    /// An identity whose groups are looked up when first read (``groups``, ``isMember(of:)``, `==`,
    /// ``description``), once, by `lookUpGroups`, on the reading thread: for a provider whose groups cost
    /// a name-service lookup, asked by a login that reads none (``AuthRequest/readsGroups``).
    public init(
        username: String,
        displayName: String? = nil,
        provider: String,
        attributes: [String: String] = [:],
        groupsLookedUpBy lookUpGroups: @escaping @Sendable () -> Set<String>
    ) {
        storage = Storage(
            username: username,
            displayName: displayName ?? username,
            groups: .pending(lookUpGroups),
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

    /// Whether ``groups`` are known without a lookup (they were given, or read once already).
    public var groupsAreKnown: Bool { storage.groupsAreKnown }

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

    /// The groups, or how to look them up on first read.
    private enum Groups {
        case known(Set<String>)
        case pending(@Sendable () -> Set<String>)
    }

    /// `@unchecked Sendable`: mutated only through `uniqueStorage()`, that is, when no other value shares
    /// it — but for the groups' first lookup, which is locked.
    private final class Storage: @unchecked Sendable {
        var username: String
        var displayName: String
        private let groupSource: Locked<Groups>
        var provider: String
        var attributes: [String: String]

        init(username: String, displayName: String, groups: Groups, provider: String, attributes: [String: String]) {
            self.username = username
            self.displayName = displayName
            self.groupSource = Locked(groups)
            self.provider = provider
            self.attributes = attributes
        }

        /// Looked up once, under the lock, so that two readers at once make one lookup.
        var groups: Set<String> {
            get {
                groupSource.withLock { source in
                    switch source {
                    case .known(let groups): return groups
                    case .pending(let lookUp):
                        let groups = lookUp()
                        source = .known(groups)
                        return groups
                    }
                }
            }
            set { groupSource.withLock { $0 = .known(newValue) } }
        }

        var groupsAreKnown: Bool {
            groupSource.withLock { source in
                if case .known = source { return true }
                return false
            }
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
                username: username, displayName: displayName, groups: groupSource.withLock { $0 }, provider: provider,
                attributes: attributes)
        }
    }
}

extension Identity: CustomStringConvertible {
    public var description: String {
        let groupList = groups.sorted().joined(separator: ",")
        return "\(username) (\(displayName)) via \(provider), groups: [\(groupList)]"
    }
}
