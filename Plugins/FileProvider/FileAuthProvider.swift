public import Authentication
import Dispatch
import Synchronization

/// Accounts in an htpasswd-compatible users file (see ``UsersFile``), verified through libxcrypt.
///
/// The file is loaded once into an index and loaded again when it changes on disk (its inode, size,
/// modification and change times, to the nanosecond): the new version replaces the old one atomically.
/// A new version that does not parse leaves the last good one in service, and ``problem`` says why; a
/// file that disappears fails closed (``AuthOutcome/unavailable(reason:)``).
///
/// Password checks run on threads of their own, in parallel (`crypt_r` is reentrant), never on Swift's
/// cooperative pool; a cancelled login returns at once. An unknown user costs the same as a wrong
/// password: a stand-in hash in the default scheme is checked instead.
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
    private let snapshot: Mutex<Snapshot>
    private let standIn: PasswordHash

    private struct Snapshot {
        var file: UsersFile
        var fingerprint: UsersFileStore.Fingerprint
        var problem: String?
        /// The version on disk that failed to parse, so it is not parsed again at every login.
        var rejected: UsersFileStore.Fingerprint?
    }

    /// Loads the file.
    /// - Throws: ``ProviderConfigurationError/unusable(provider:reason:)`` when it cannot be read or parsed.
    public init(_ configuration: Configuration) throws(ProviderConfigurationError) {
        self.configuration = configuration
        store = UsersFileStore(path: configuration.path)
        do {
            let (file, fingerprint) = try store.load()
            snapshot = Mutex(Snapshot(file: file, fingerprint: fingerprint))
            standIn = try PasswordHash.make(
                Secret(copying: "stand-in for unknown users".utf8), scheme: configuration.defaultScheme)
        } catch let error as UsersFileError {
            throw .unusable(provider: "file", reason: error.description)
        } catch {
            throw .unusable(provider: "file", reason: "\(error)")
        }
    }

    /// Why the file on disk is not the one in service, if it is not (a parse error in a newer version).
    public var problem: String? { snapshot.withLock { $0.problem } }

    /// The warnings of the version in service (duplicate user names).
    public var warnings: [String] { snapshot.withLock { $0.file.warnings } }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // Ask whether or not the user exists, so prompts do not reveal names.
        let password = try await request.conversation.askSecret(configuration.passwordPrompt)
        let file: UsersFile
        switch try await offPool({ self.refresh() }) {
        case .success(let current): file = current
        case .failure(let error): return .unavailable(reason: error.description)
        }
        guard let entry = file[request.username] else {
            _ = try await verifyOffPool(password, standIn)
            return .unknownUser
        }
        switch entry.password {
        case .locked(let text):
            // "Locked" is told only to someone who knows the password; one check either way, so timing
            // does not tell locked accounts apart.
            let inner = try? PasswordHash(String(text.drop { $0 == "!" || $0 == "*" }))
            let matches = try await verifyOffPool(password, inner ?? standIn)
            return inner != nil && matches ? .rejected(.accountLocked(until: nil)) : .rejected(.invalidCredentials)
        case .hash(let hash):
            guard try await verifyOffPool(password, hash) else { return .rejected(.invalidCredentials) }
            if hash.scheme.isWeak && configuration.upgradesWeakHashes {
                // Hashing and writing take a while; the login does not wait for them.
                Self.work.async { self.upgrade(entry, password) }
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

    private func upgrade(_ entry: UsersFile.Entry, _ password: Secret) {
        guard let hash = try? PasswordHash.make(password, scheme: configuration.defaultScheme) else { return }
        _ = try? store.update { (file: inout UsersFile) throws(UsersFileError) in
            // Only if the entry is still the one that was verified.
            guard let current = file[entry.username], current.password == entry.password else { return }
            var upgraded = current
            upgraded.password = .hash(hash)
            file.set(upgraded)
        }
    }

    /// Checks the password on a hashing thread; returns at once when the task is cancelled.
    private func verifyOffPool(_ password: Secret, _ hash: PasswordHash) async throws(AuthError) -> Bool {
        try await offPool { hash.verify(password) }
    }

    /// Runs blocking `work` (hashing, file reading) on a thread of ``work``, never on the cooperative pool;
    /// returns at once when the task is cancelled, leaving the work to finish in the background.
    private func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(AuthError) -> T {
        let state = Mutex<(done: Bool, continuation: CheckedContinuation<T?, Never>?)>((false, nil))
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.withLock { state in
                    if state.done { return true }
                    state.continuation = continuation
                    return false
                }
                if cancelled { return continuation.resume(returning: nil) }
                Self.work.async {
                    let value = work()
                    state.withLock { $0.continuation.take() }?.resume(returning: value)
                }
            }
        } onCancel: {
            state.withLock { state in
                state.done = true
                return state.continuation.take()
            }?.resume(returning: nil)
        }
        guard let result else { throw .cancelled }
        return result
    }

    /// Where password checks and file reads run: a concurrent queue of ordinary threads, apart from the
    /// cooperative pool.
    private static let work = DispatchQueue(label: "gatekeeper.file", attributes: .concurrent)
}
