import Authentication
public import PasswordHashing

extension UsersFile.Password {
    /// The hash kept behind a lock (`!` or `*` before it, and `+` if it had expired), if it is a usable one.
    public var lockedHash: PasswordHash? {
        guard case .locked(let text) = self else { return nil }
        return try? PasswordHash(String(text.drop { $0 == "!" || $0 == "*" || $0 == "+" }))
    }

    /// What unlocking restores: the password behind the lock, expired if it was.
    var unlocked: UsersFile.Password? {
        guard case .locked(let text) = self else { return nil }
        return try? UsersFile.password(String(text.drop { $0 == "!" || $0 == "*" }))
    }
}

/// Administration of a users file, as `gatekeeper-passwd` offers it: each change is one locked,
/// atomic ``UsersFileStore/update(create:_:)``, and fails with ``UsersFileError`` changing nothing.
extension UsersFileStore {
    /// Adds `username` with `hash`.
    /// - Parameter createFile: Start a new file if there is none.
    /// - Throws: when the user exists already, or a field cannot be written (``UsersFile/set(_:)``).
    public func addUser(
        _ username: String,
        hash: PasswordHash,
        groups: [String] = [],
        displayName: String? = nil,
        createFile: Bool = false
    ) throws(UsersFileError) {
        try update(create: createFile) { (file: inout UsersFile) throws(UsersFileError) in
            guard file[username] == nil else {
                throw UsersFileError("\(username) already exists; use set to change the password.")
            }
            try file.set(.init(username: username, password: .hash(hash), groups: groups, displayName: displayName))
        }
    }

    /// Gives `username` a new password (unlocking it), and new groups or display name when given.
    /// - Throws: when there is no such user, or a field cannot be written.
    public func setPassword(
        of username: String,
        to hash: PasswordHash,
        groups: [String]? = nil,
        displayName: String? = nil
    ) throws(UsersFileError) {
        try update { (file: inout UsersFile) throws(UsersFileError) in
            guard var entry = file[username] else { throw UsersFileError("there is no user \(username); use add.") }
            entry.password = .hash(hash)
            if let groups { entry.groups = groups }
            if let displayName { entry.displayName = displayName }
            try file.set(entry)
        }
    }

    /// Marks the password of `username` expired (`+` before its hash), as `passwd -e` does: the next login
    /// asks for a new one. Expiring an expired password changes nothing.
    /// - Throws: when there is no such user, or the account is locked.
    public func expirePassword(of username: String) throws(UsersFileError) {
        try update { (file: inout UsersFile) throws(UsersFileError) in
            guard var entry = file[username] else { throw UsersFileError("there is no user \(username).") }
            switch entry.password {
            case .expired: return
            case .locked: throw UsersFileError("\(username) is locked; unlock it first.")
            case .hash(let hash): entry.password = .expired(hash)
            }
            try file.set(entry)
        }
    }

    /// Removes `username` (every line for the name).
    /// - Throws: when there is no such user.
    public func deleteUser(_ username: String) throws(UsersFileError) {
        try update { (file: inout UsersFile) throws(UsersFileError) in
            guard file.remove(username) else { throw UsersFileError("there is no user \(username).") }
        }
    }

    /// Locks `username`: `!` before its hash, which is kept for ``unlockUser(_:)``. Locking a locked
    /// account changes nothing.
    /// - Throws: when there is no such user.
    public func lockUser(_ username: String) throws(UsersFileError) {
        try update { (file: inout UsersFile) throws(UsersFileError) in
            guard var entry = file[username] else { throw UsersFileError("there is no user \(username).") }
            if case .locked = entry.password { return }
            entry.password = .locked("!" + entry.password.text)
            try file.set(entry)
        }
    }

    /// Unlocks `username`, restoring the hash kept behind the lock. Unlocking an unlocked account
    /// changes nothing.
    /// - Throws: when there is no such user, or no usable hash is behind the lock (then use
    ///   ``setPassword(of:to:groups:displayName:)``).
    public func unlockUser(_ username: String) throws(UsersFileError) {
        try update { (file: inout UsersFile) throws(UsersFileError) in
            guard var entry = file[username] else { throw UsersFileError("there is no user \(username).") }
            guard case .locked = entry.password else { return }
            guard let restored = entry.password.unlocked else {
                throw UsersFileError("\(username) has no password to unlock; use set.")
            }
            entry.password = restored
            try file.set(entry)
        }
    }
}
