public import Authentication
public import BlockingPools
import GatekeeperSupport
public import PasswordHashing

/// Accounts in an htpasswd-compatible users file (see ``UsersFile``), verified through libxcrypt.
///
/// The file is loaded once into an index and loaded again when it changes on disk (its inode, size,
/// modification and change times, to the nanosecond): the new version replaces the old one atomically.
/// A new version that does not parse leaves the last good one in service, and ``problem`` says why; a
/// file that disappears fails closed (``AuthOutcome/unavailable(reason:)``).
///
/// Password checks run on threads of their own, in parallel (`crypt_r` is reentrant), never on Swift's
/// cooperative pool, and at most one per processor at a time (``PasswordHash/maxHashMemoryBytes`` each):
/// later ones wait in line, and a cancelled login returns at once, its check dropped if it had not
/// started. An unknown user costs the same as a wrong password: the password is checked against a hash
/// of the file's own most common scheme and work factor, and the result thrown away.
public final class FileAuthProvider: AuthProvider {
    /// How the provider uses its file.
    public struct Configuration: Sendable {
        /// The users file.
        public var path: String
        /// Rewrite a weak (`$apr1$`, `{SHA}`) hash in the default scheme after a successful login, when
        /// the file is writable. Off by default.
        public var upgradesWeakHashes: Bool
        /// The scheme for upgraded hashes.
        public var defaultScheme: PasswordHash.Scheme
        /// The prompt for the password.
        public var passwordPrompt: String
        /// The threads the file is read and rewritten on: the process's shared pool by default. Password
        /// checks run on the process's one pool for them, a thread per processor.
        public var threads: BlockingPool = .shared

        public init(
            path: String,
            upgradesWeakHashes: Bool = false,
            defaultScheme: PasswordHash.Scheme = .yescrypt,
            passwordPrompt: String = "Password: "
        ) {
            self.path = path
            self.upgradesWeakHashes = upgradesWeakHashes
            self.defaultScheme = defaultScheme
            self.passwordPrompt = passwordPrompt
        }
    }

    public let name = "file"
    public let configuration: Configuration
    private let store: UsersFileStore
    private let snapshot: Locked<Snapshot>
    /// Checked for unknown users when the file has no hash to stand in (no entries).
    private let fallbackStandIn: PasswordHash

    private struct Snapshot {
        var file: UsersFile
        var fingerprint: UsersFileStore.Fingerprint
        var problem: String?
        /// The version on disk that failed to parse, so it is not parsed again at every login.
        var rejected: UsersFileStore.Fingerprint?
    }

    /// Loads the file.
    /// - Throws: ``UsersFileError`` when it cannot be read, is not safe to use, or does not parse.
    public init(_ configuration: Configuration) throws(UsersFileError) {
        self.configuration = configuration
        store = UsersFileStore(path: configuration.path)
        let (file, fingerprint) = try store.load()
        snapshot = Locked(Snapshot(file: file, fingerprint: fingerprint))
        do {
            fallbackStandIn = try PasswordHash.make(
                Secret(copying: "stand-in for unknown users".utf8), scheme: configuration.defaultScheme)
        } catch {
            throw UsersFileError(
                "no stand-in hash could be made in the \(configuration.defaultScheme) scheme: \(error)")
        }
    }

    /// Why the file on disk is not the one in service, if it is not (a parse error in a newer version).
    public var problem: String? { snapshot.withLock { $0.problem } }

    /// The warnings of the version in service (duplicate user names).
    public var warnings: [String] { snapshot.withLock { $0.file.warnings } }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        try await unlessUnusable({ .unavailable(reason: $0) }) { () async throws(AuthError) in
            try await checkLogin(request)
        }
    }

    private func checkLogin(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // The file, and the hash the password would be checked against, before anything is asked: a file that
        // cannot be read, or a hash whose library is missing, can check no password, and one never asked for
        // is never counted as a guess (the attempt ledger counts what is handed over).
        let file: UsersFile
        switch try await offPool({ self.refresh() }) {
        case .success(let current): file = current
        case .failure(let error): return .unavailable(reason: error.description)
        }
        let checkedAgainst: PasswordHash? =
            switch file[request.username]?.password {
            case nil: standIn(for: file)
            case .locked: file[request.username]?.password.lockedHash
            case .expired(let hash), .hash(let hash): hash
            }
        if let problem = checkedAgainst?.libraryProblem { return .unavailable(reason: problem) }
        // Ask whether or not the user exists, so prompts do not reveal names.
        let password = try await request.conversation.askSecret(configuration.passwordPrompt)
        guard let entry = file[request.username] else {
            _ = try await verifyOffPool(password, standIn(for: file))
            return .notMine
        }
        switch entry.password {
        case .locked:
            // "Locked" is told only to someone who knows the password; one check either way, so timing
            // does not tell locked accounts apart.
            let inner = entry.password.lockedHash
            let matches = try await verifyOffPool(password, inner ?? standIn(for: file))
            return inner != nil && matches ? .rejected(.locked(until: nil)) : .rejected(.wrongCredentials)
        case .expired(let hash):
            guard try await verifyOffPool(password, hash) else { return .rejected(.wrongCredentials) }
            guard request.mayChangeExpiredPassword else { return .rejected(.passwordChangeRequired) }
            // Right, but to be changed before anyone is admitted: once the whole stack has said yes.
            var identity = Identity(
                username: entry.username, displayName: entry.displayName, groups: Set(entry.groups), provider: name)
            identity.mustChangePassword = true
            return .authenticated(identity)
        case .hash(let hash):
            guard try await verifyOffPool(password, hash) else { return .rejected(.wrongCredentials) }
            if hash.scheme.isWeak && configuration.upgradesWeakHashes {
                // Hashing and writing take a while; the login does not wait for them. The new hash is made
                // where every check is, one per processor; the file is written on the provider's threads.
                PasswordHash.checks.submit {
                    guard let hash = try? PasswordHash.make(password, scheme: self.configuration.defaultScheme)
                    else { return }
                    self.configuration.threads.submit { self.upgrade(entry, to: hash) }
                }
            }
            return .authenticated(
                Identity(
                    username: entry.username,
                    displayName: entry.displayName,
                    groups: Set(entry.groups),
                    provider: name,
                    attributes: hash.scheme.isWeak ? ["hash": "\(hash.scheme.rawValue) (weak)"] : [:]
                )
            )
        }
    }

    /// The file's own line for `username`: names match byte for byte, so the canonical name is the typed
    /// one when the line exists.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        guard case .success(let file)? = try? await offPool({ self.refresh() }) else { return .cannotTell }
        guard let entry = file[username] else { return .unknown }
        return .known(canonicalName: entry.username)
    }

    /// The account as the file has it now: gone, locked, or valid with its current groups.
    public func recheck(_ identity: Identity) async -> Recheck {
        let current: Result<UsersFile, UsersFileError>
        do throws(AuthError) {
            current = try await offPool({ self.refresh() })
        } catch {
            return .unavailable(reason: error.description)
        }
        switch current {
        case .failure(let error): return .unavailable(reason: error.description)
        case .success(let file):
            guard let entry = file[identity.username] else { return .refused(.userNotFound) }
            if case .expired = entry.password { return .refused(.passwordChangeRequired) }
            guard case .hash(let hash) = entry.password else { return .refused(.accountLocked(until: nil)) }
            return .valid(
                Identity(
                    username: entry.username, displayName: entry.displayName, groups: Set(entry.groups),
                    provider: name,
                    attributes: hash.scheme.isWeak ? ["hash": "\(hash.scheme.rawValue) (weak)"] : [:]))
        }
    }

    public var changesPasswords: Bool { true }

    /// Changes the password of an entry of the file, as `passwd` changes one: the current password,
    /// checked in the preliminary pass; then the new one twice, checked by libpwquality
    /// (``PasswordQuality``), hashed in the entry's scheme with its work factor
    /// (``PasswordHash/make(_:like:otherwise:)``), and written in one locked, atomic update of the file
    /// (a new file renamed over the old) — only if the entry is still the one whose password was
    /// checked. Once the write has begun it is finished, even if the change is cancelled meanwhile, so
    /// the answer always says what the file holds. A locked entry may not change its password.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        try await unlessUnusable({ .unavailable(reason: $0) }) { () async throws(AuthError) in
            try await checkChange(request)
        }
    }

    private func checkChange(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        let file: UsersFile
        switch try await offPool({ self.refresh() }) {
        case .success(let current): file = current
        case .failure(let error): return .unavailable(reason: error.description)
        }
        // The change a login needs concerns only an entry whose password has expired.
        if request.expiredOnly {
            guard case .expired? = file[request.username]?.password else { return .ignored }
        }
        // Asked, and checked, whether or not the entry exists or may change: the answer tells nothing
        // to someone who does not know the password.
        let current = try await request.conversation.askSecret(PasswordPrompt.current)
        guard let entry = file[request.username] else {
            _ = try await verifyOffPool(current, standIn(for: file))
            return .notMine
        }
        let hash: PasswordHash
        switch entry.password {
        case .hash(let known), .expired(let known): hash = known
        case .locked:
            let inner = entry.password.lockedHash
            let matches = try await verifyOffPool(current, inner ?? standIn(for: file))
            return inner != nil && matches ? .rejected(.refusedByPolicy) : .rejected(.wrongCurrentPassword)
        }
        guard try await verifyOffPool(current, hash) else { return .rejected(.wrongCurrentPassword) }
        guard request.pass == .update else { return .changed }
        return try await replace(entry, hash, current: current, conversation: request.conversation)
    }

    /// The new password twice, checked and hashed like `hash`, written over `entry` (and only over it,
    /// as it was read): the update of a change, and the change an expired password needs at a login.
    private func replace(
        _ entry: UsersFile.Entry, _ hash: PasswordHash, current: Secret, conversation: any Conversation
    ) async throws(AuthError) -> PasswordChangeOutcome {
        let new: Secret
        switch try await PasswordPrompt.askNewPassword(conversation) {
        case .success(let password): new = password
        case .failure(let refusal): return .rejected(refusal)
        }
        let username = entry.username
        let scheme = configuration.defaultScheme
        // bcrypt would use only the first 72 bytes: refused, as gatekeeper-passwd add and set refuse it.
        if hash.scheme == .bcrypt && new.count > PasswordHash.bcryptMaxPasswordBytes {
            return .rejected(
                .unacceptable(
                    "it is longer than the \(PasswordHash.bcryptMaxPasswordBytes) bytes this entry's bcrypt hash uses"))
        }
        let made = try await hashOffPool { () -> Result<PasswordHash, PasswordChangeRefusal> in
            if let problem = PasswordQuality.problem(with: new, old: current, username: username) {
                return .failure(.unacceptable(problem))
            }
            do {
                return .success(try PasswordHash.make(new, like: hash, otherwise: scheme))
            } catch {
                return .failure(.unacceptable("no hash could be made: \(error)"))
            }
        }
        let newHash: PasswordHash
        switch made {
        case .success(let made): newHash = made
        case .failure(let refusal): return .rejected(refusal)
        }
        if Task.isCancelled { throw .cancelled }
        let written = await configuration.threads.runToTheEnd { () -> Result<Void, UsersFileError> in
            do throws(UsersFileError) {
                try self.store.update { (file: inout UsersFile) throws(UsersFileError) in
                    guard var changed = file[username], changed.password == entry.password else {
                        throw UsersFileError("the entry of \(username) was changed meanwhile")
                    }
                    changed.password = .hash(newHash)
                    try file.set(changed)
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = written { return .unavailable(reason: error.description) }
        return .changed
    }

    /// What an unknown user's password is checked against: a hash as costly as the file's own.
    private func standIn(for file: UsersFile) -> PasswordHash {
        file.representativeHash ?? fallbackStandIn
    }

    /// The version of the file to use now, loading a changed file first. Blocking file work: call it off
    /// the cooperative pool.
    private func refresh() -> Result<UsersFile, UsersFileError> {
        let fingerprint: UsersFileStore.Fingerprint
        do {
            fingerprint = try store.fingerprint()
        } catch {
            // Deleted, replaced by a directory, or made writable by others: fail closed.
            return .failure(error)
        }
        let unchanged = snapshot.withLock { snapshot in
            snapshot.fingerprint == fingerprint || snapshot.rejected == fingerprint ? snapshot.file : nil
        }
        if let unchanged { return .success(unchanged) }
        do {
            let (file, loaded) = try store.load()
            snapshot.withLock { $0 = Snapshot(file: file, fingerprint: loaded) }
            return .success(file)
        } catch {
            // Keep the last good version in service, and say why the new one is not.
            return .success(
                snapshot.withLock { snapshot in
                    snapshot.problem = "\(configuration.path): \(error.description); the previous version stays in use."
                    snapshot.rejected = fingerprint
                    return snapshot.file
                }
            )
        }
    }

    private func upgrade(_ entry: UsersFile.Entry, to hash: PasswordHash) {
        _ = try? store.update { (file: inout UsersFile) throws(UsersFileError) in
            // Only if the entry is still the one that was verified.
            guard let current = file[entry.username], current.password == entry.password else { return }
            var upgraded = current
            upgraded.password = .hash(hash)
            try file.set(upgraded)
        }
    }

    /// Checks the password on a hashing thread; returns at once when the task is cancelled.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the hash's library cannot be loaded (the
    ///   caller's outcome is then `unavailable`, never a wrong password).
    private func verifyOffPool(_ password: Secret, _ hash: PasswordHash) async throws(AuthError) -> Bool {
        guard
            let matches = await PasswordHash.checks.run({ () -> Bool? in
                hash.libraryProblem == nil ? hash.verify(password) : nil
            })
        else { throw .cancelled }
        guard let matches else {
            throw .providerUnavailable(reason: hash.libraryProblem ?? "the hash cannot be checked")
        }
        return matches
    }

    /// `body`'s outcome, or `unavailable` when it found the backend unusable (a hash it cannot check).
    private func unlessUnusable<Outcome>(
        _ unavailable: (String) -> Outcome, _ body: () async throws(AuthError) -> Outcome
    ) async throws(AuthError) -> Outcome {
        do throws(AuthError) {
            return try await body()
        } catch  where error.code == .providerUnavailable {
            return unavailable(error.reason ?? error.description)
        }
    }

    /// Runs blocking hashing work on a hashing thread; returns at once when the task is cancelled.
    private func hashOffPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(AuthError) -> T {
        guard let result = await PasswordHash.checks.run(work) else { throw .cancelled }
        return result
    }

    /// Runs blocking file work (reading, parsing, upgrading a weak hash) on the provider's threads, apart from
    /// the checks, so a reload never waits behind a queue of them; returns at once when the task is
    /// cancelled.
    private func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(AuthError) -> T {
        guard let result = await configuration.threads.run(work) else { throw .cancelled }
        return result
    }
}
