public import Authentication
import FileProvider
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Logins that keep working while a backend is unreachable, as SSSD's `cache_credentials` — without its
/// unlimited offline guessing.
///
/// Wraps any provider. After each online success it keeps, for that user, a yescrypt verifier of the
/// password, the identity's display name and groups, and the time, in a file only root (or the running
/// user) can read. When the backend answers `unavailable`, the login is checked against that verifier
/// instead, if it is younger than `maxAge`; the identity then says `offline: yes`. Offline failures are
/// counted per user, and after `maxOfflineFailures` the entry refuses every offline login until the next
/// online success. A backend that says the account is gone, locked or expired removes its entry at once.
public final class OfflineCachingProvider: AuthProvider {
    public let inner: any AuthProvider
    public var name: String { inner.name }
    public let maxAge: Duration
    public let maxOfflineFailures: Int
    private let directory: StateDirectory
    private let fileName = "offline-logins"
    static let hashing = ThreadPool(name: "gatekeeper.offline", maxThreads: 2, maxIdle: 1)

    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the directory cannot be used safely.
    public init(wrapping inner: any AuthProvider, directory: String, maxAge: Duration, maxOfflineFailures: Int = 5)
        throws(AuthError)
    {
        self.inner = inner
        self.maxAge = maxAge
        self.maxOfflineFailures = maxOfflineFailures
        do {
            self.directory = try StateDirectory(directory, creatingWith: 0o700)
        } catch {
            throw .providerUnavailable(reason: "the offline cache cannot be used: \(error)")
        }
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        let capturing = CapturingConversation(request.conversation)
        var forwarded = request
        forwarded.conversation = capturing
        let outcome = try await inner.authenticate(forwarded)
        switch outcome {
        case .authenticated(let identity):
            if let password = capturing.password {
                let (username, displayName, groups) = (identity.username, identity.displayName, identity.groups)
                let entry = await Self.hashing.run { () -> CacheEntry? in
                    guard let verifier = try? PasswordHash.make(password, scheme: .yescrypt) else { return nil }
                    return CacheEntry(
                        username: username, verifier: verifier.text, savedAt: Int64(time(nil)), failures: 0,
                        displayName: displayName, groups: groups.sorted())
                }
                if let entry = entry ?? nil { update { $0[entry.username] = entry } }
            }
            return outcome
        case .notMine, .rejected(.locked, _), .rejected(.expiredAccount, _), .rejected(.refusedByPolicy, _):
            update { $0[request.username] = nil }
            return outcome
        case .unavailable:
            return try await offline(request, capturing, onlineOutcome: outcome)
        default:
            return outcome
        }
    }

    /// The backend could not answer: the cache decides, if it may.
    private func offline(_ request: AuthRequest, _ capturing: CapturingConversation, onlineOutcome: AuthOutcome)
        async throws(AuthError) -> AuthOutcome
    {
        guard let entry = read()[request.username] else { return onlineOutcome }
        guard Duration.seconds(Int64(time(nil)) - entry.savedAt) < maxAge, entry.savedAt <= Int64(time(nil)) else {
            return onlineOutcome
        }
        guard entry.failures < maxOfflineFailures else { return .rejected(.locked(until: nil)) }
        let password: Secret
        if let asked = capturing.password {
            password = asked
        } else {
            password = try await request.conversation.askSecret("Password: ")
        }
        guard let verifier = try? PasswordHash(entry.verifier) else { return onlineOutcome }
        guard let matches = await Self.hashing.run({ verifier.verify(password) }) else { throw .cancelled }
        guard matches else {
            update { entries in entries[request.username]?.failures += 1 }
            return .rejected(.wrongCredentials)
        }
        update { entries in entries[request.username]?.failures = 0 }
        return .authenticated(
            Identity(
                username: entry.username, displayName: entry.displayName, groups: Set(entry.groups),
                provider: inner.name, attributes: ["offline": "yes"]))
    }

    public func signOut(_ identity: Identity) async {
        await inner.signOut(identity)
    }

    public func recheck(_ identity: Identity) async -> Recheck {
        await inner.recheck(identity)
    }

    // MARK: The file

    struct CacheEntry {
        var username: String
        var verifier: String
        var savedAt: Int64
        var failures: Int
        var displayName: String?
        var groups: [String]

        /// One line of tab-separated fields; fields never hold a tab or line break (validated names,
        /// escaped display names and groups).
        var line: String {
            [username, verifier, String(savedAt), String(failures), displayName ?? "", groups.joined(separator: ",")]
                .map { $0.replacing("\t", with: " ").replacing("\n", with: " ") }.joined(separator: "\t")
        }

        init(username: String, verifier: String, savedAt: Int64, failures: Int, displayName: String?, groups: [String])
        {
            self.username = username
            self.verifier = verifier
            self.savedAt = savedAt
            self.failures = failures
            self.displayName = displayName
            self.groups = groups
        }

        init?(line: Substring) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6, let savedAt = Int64(fields[2]), let failures = Int(fields[3]), failures >= 0 else {
                return nil
            }
            self.init(
                username: fields[0], verifier: fields[1], savedAt: savedAt, failures: failures,
                displayName: fields[4].isEmpty ? nil : fields[4],
                groups: fields[5].isEmpty ? [] : fields[5].split(separator: ",").map(String.init))
        }
    }

    private let lock = Locked(())

    private func read() -> [String: CacheEntry] {
        guard let file = try? directory.openFile(fileName, creatingWith: nil) else { return [:] }
        defer { close(file) }
        guard let bytes = try? StateDirectory.readAll(file, limit: 16 << 20) else { return [:] }
        var entries: [String: CacheEntry] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if let entry = CacheEntry(line: line) { entries[entry.username] = entry }
        }
        return entries
    }

    /// Changes the entries and writes the file whole (in this process one change at a time; across
    /// processes the last writer wins, which can only drop a count or an entry, never admit anyone).
    private func update(_ change: (inout [String: CacheEntry]) -> Void) {
        lock.withLock { _ in
            var entries = read()
            change(&entries)
            let text = entries.values.sorted { $0.username < $1.username }.map { $0.line + "\n" }.joined()
            try? directory.replace(fileName, with: Array(text.utf8))
        }
    }
}

/// Passes every question on, keeping the first hidden answer (the password) for the cache.
final class CapturingConversation: Conversation, Sendable {
    let base: any Conversation
    private let captured = Locked<Secret?>(nil)

    init(_ base: any Conversation) { self.base = base }

    var password: Secret? { captured.withLock { $0 } }

    func ask(_ prompt: String) async throws(AuthError) -> String { try await base.ask(prompt) }
    func askUsername(_ prompt: String) async throws(AuthError) -> String { try await base.askUsername(prompt) }
    func show(_ message: String, as kind: MessageKind) async { await base.show(message, as: kind) }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        captured.withLock { if $0 == nil { $0 = secret } }
        return secret
    }
}
