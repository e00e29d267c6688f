public import Authentication
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// A backend that tells "its servers could not be reached" apart from every other failure: the only
/// case in which an offline cache may answer for it. A server's refusal — of a service account's bind,
/// of a search — is an answer (`unavailable` to the caller, a fault of the configuration), never offline.
public protocol ReachabilityReporting: AuthProvider {
    /// The login, as ``AuthProvider/authenticate(_:)``, with ``OnlineAnswer/unreachable(reason:)`` only
    /// when no server could be reached (connect or TLS failed, timed out, the server went away).
    func authenticateOnline(_ request: AuthRequest) async throws(AuthError) -> OnlineAnswer

    /// Everything that decides which accounts a login through this backend admits, and as whom — its
    /// servers, how it trusts them, where and how it looks accounts up, where their groups come from — and
    /// never a secret. The cache keeps one file for each scope, so that two configurations sharing a
    /// directory (a stack for admins only beside one for everyone) never admit each other's logins
    /// offline, and a configuration narrowed later starts a cache of its own.
    var offlineScope: String { get }

    /// The account check (``AuthProvider/recheck(_:)``), with ``OnlineRecheck/unreachable(reason:)`` only
    /// when no server could be reached: then an account the cache holds is vouched for by it.
    func recheckOnline(_ identity: Identity) async -> OnlineRecheck

    /// Whether an account's password is still the one cached when its stamp was `saved`, the stamp being
    /// `current` now. By default, when the two are equal; a backend whose stamps may change for other reasons
    /// (an entry's modification time, which a password policy moves at every failed bind) tells better.
    func passwordUnchanged(saved: String?, current: String?) -> Bool

    /// The account's standing on the servers now, without a login: asked when a login is cached, and again
    /// while the servers are reachable, so that a reset, a lock or a deletion there ends the cached login
    /// before the servers are next out of reach. Unreachable servers answer ``AccountStanding/cannotTell``.
    func standing(of username: String) async -> AccountStanding
}

extension ReachabilityReporting {
    /// The login as ``authenticateOnline(_:)`` answers it, no server reached being `unavailable`.
    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        switch try await authenticateOnline(request) {
        case .answered(let outcome): return outcome
        case .unreachable(let reason): return .unavailable(reason: reason)
        }
    }

    /// The same stamp.
    public func passwordUnchanged(saved: String?, current: String?) -> Bool { saved == current }

    /// The backend's own answer, never "unreachable": a backend that does not tell keeps the cache out of its
    /// account checks.
    public func recheckOnline(_ identity: Identity) async -> OnlineRecheck { .answered(await recheck(identity)) }

    /// Cannot tell: a backend that does not implement ``standing(of:)`` keeps its cached entries until
    /// their age or an online answer ends them.
    public func standing(of username: String) async -> AccountStanding { .cannotTell }
}

/// What a backend's servers say of an account now, asked with the service account's rights and without
/// its password: what keeps an offline cache true while the servers are reachable.
public enum AccountStanding: Sendable, Hashable {
    /// The account exists and may sign in. `stamp` is a value the servers change whenever its password
    /// is set, a reset included — a time such as ppolicy's `pwdChangedTime`, never anything derived from
    /// the password — or `nil` when they keep none that can be read.
    case current(stamp: String?)
    /// The account is gone, locked, disabled, expired, or its password must be changed: no cached
    /// password may sign it in.
    case withdrawn(reason: String)
    /// No server could be asked, or it would not say.
    case cannotTell
}

/// The answer of ``ReachabilityReporting/recheckOnline(_:)``.
public enum OnlineRecheck: Sendable, Hashable {
    /// A server answered (or refused to).
    case answered(Recheck)
    /// No server could be reached.
    case unreachable(reason: String)
}

/// The answer of ``ReachabilityReporting/authenticateOnline(_:)``.
public enum OnlineAnswer: Sendable, Hashable {
    /// A server answered (or refused to): its answer, `unavailable` included.
    case answered(AuthOutcome)
    /// No server could be reached.
    case unreachable(reason: String)
}

/// Logins that keep working while a backend is unreachable, as SSSD's `cache_credentials` — without its
/// unlimited offline guessing.
///
/// Wraps a provider that reports reachability. After each online success it keeps, for that user, a
/// yescrypt verifier of the password, the identity's display name and groups, and the time, in a file
/// only root (or the running user) can read. Only when **no server can be reached** is the login checked
/// against that verifier instead, if it is younger than `maxAge`; the identity then says `offline: yes`.
/// Any other failure — a server that refuses the service account, a search it refuses — is passed on as
/// it is.
///
/// Offline attempts are counted per user *before* the verifier is checked, under one lock on the cache
/// that every process shares, so that at most `maxOfflineFailures` guesses are ever checked; the entry
/// then refuses every offline login until the next online success. A backend that says the account is
/// gone, locked or expired, or that the password is wrong, removes its entry at once: an old password
/// is never admitted after a new one was set online.
///
/// While the servers are reachable the cache is kept true as SSSD's refresh keeps its own: each entry
/// carries the backend's password stamp (``AccountStanding``) from when it was saved, and every entry
/// checked more than `refreshInterval` ago is asked about again — a few at every online login of any
/// user, all of them by ``refresh(dueOnly:limit:)`` (`gatekeeper-run --refresh-offline`). An entry whose
/// account is gone, locked or expired, or whose stamp changed (a reset), is removed.
public final class OfflineCachingProvider: AuthProvider {
    public let inner: any ReachabilityReporting
    public var name: String { inner.name }
    public let maxAge: Duration
    public let maxOfflineFailures: Int
    /// How long an entry goes unchecked while the servers are reachable.
    public let refreshInterval: Duration
    /// How many due entries an online login checks, after its own answer: a bound on what it adds.
    public static let refreshesPerLogin = 4
    private let directory: StateDirectory
    /// `offline-logins-` and the first 16 bytes of the SHA-256 of the backend's ``ReachabilityReporting/offlineScope``
    /// in hexadecimal; the lock beside it with `.lock` added.
    private let fileName: String
    private var lockName: String { fileName + ".lock" }
    /// Seconds since the epoch, what an entry's age is measured on: the system's clock but in tests.
    private let clock: @Sendable () -> Int64

    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the directory cannot be used safely.
    public convenience init(
        wrapping inner: any ReachabilityReporting,
        directory: String,
        maxAge: Duration,
        maxOfflineFailures: Int = 5,
        refreshInterval: Duration = .seconds(15 * 60)
    ) throws(AuthError) {
        try self.init(
            wrapping: inner, directory: directory, maxAge: maxAge, maxOfflineFailures: maxOfflineFailures,
            refreshInterval: refreshInterval, clock: { Int64(time(nil)) })
    }

    /// The cache, its times (seconds since the epoch) read from `clock` instead of the system's clock: for
    /// tests, which move time on rather than wait for it.
    package init(
        wrapping inner: any ReachabilityReporting,
        directory: String,
        maxAge: Duration,
        maxOfflineFailures: Int = 5,
        refreshInterval: Duration = .seconds(15 * 60),
        clock: @escaping @Sendable () -> Int64
    ) throws(AuthError) {
        self.inner = inner
        self.maxAge = maxAge
        self.maxOfflineFailures = maxOfflineFailures
        self.refreshInterval = refreshInterval
        self.clock = clock
        let digest = SHA256.hash(Array(inner.offlineScope.utf8)).prefix(16)
        self.fileName = "offline-logins-" + digest.hexadecimal
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
        let outcome: AuthOutcome
        switch try await inner.authenticateOnline(forwarded) {
        case .unreachable(let reason):
            return try await offline(request, capturing, onlineOutcome: .unavailable(reason: reason))
        case .answered(let answer):
            outcome = answer
        }
        await remember(outcome, typed: request.username, password: capturing.password)
        // A server answered (and served): entries of other accounts not checked for a while are asked
        // about now.
        switch outcome {
        case .unavailable: break
        case .authenticated(let identity): await refresh(limit: Self.refreshesPerLogin, skipping: identity.username)
        default: await refresh(limit: Self.refreshesPerLogin, skipping: request.username)
        }
        return outcome
    }

    /// What an online answer means for the cache: a success saves the account's entry, a refusal of the
    /// password or the account removes it.
    private func remember(_ outcome: AuthOutcome, typed: String, password: Secret?) async {
        switch outcome {
        case .authenticated(let identity):
            // When the backend said yes: what decides which of two processes' answers is the newer.
            let savedAt = clock()
            let digest = password.map { writes.digest(of: $0, for: identity.username) }
            let ticket = order.take(identity.username, digest: digest)
            // A password that must be changed first is no password to sign in with offline.
            guard !identity.mustChangePassword, let password, let digest else {
                _ = try? update { $0[identity.username] = nil }
                return
            }
            // The stamp is read after the login: a reset in the moment between is the one it misses.
            let stamp: String?
            switch await inner.standing(of: identity.username) {
            case .withdrawn:
                _ = try? update { $0[identity.username] = nil }
                return
            case .current(let current): stamp = current
            case .cannotTell: stamp = nil
            }
            let (username, displayName, groups) = (identity.username, identity.displayName, identity.groups)
            if renew(
                username, ifItsVerifierIsOf: digest, savedAt: savedAt, stamp: stamp, displayName, groups,
                ticket: ticket)
            {
                return
            }
            let entry = await PasswordHash.checks.run { () -> CacheEntry? in
                guard let verifier = try? PasswordHash.make(password, scheme: .yescrypt) else { return nil }
                return CacheEntry(
                    username: username, verifier: verifier.text, savedAt: savedAt, failures: 0,
                    displayName: displayName, groups: groups.sorted(), checkedAt: savedAt, stamp: stamp)
            }
            // An account whose values make a line longer than a line may be (a display name or groups
            // of megabytes) is not cached: it would crowd others out of the file.
            let own = writes.noted(for: username)
            writes.forget(username)
            let saving = try? update { entries -> Saving in
                guard isNewest(ticket, of: username, savedAt, entries[username]) else { return .skipped }
                guard let entry = entry ?? nil, entry.line.utf8.count <= CacheEntry.maxLineBytes else {
                    entries[username] = nil
                    return .skipped
                }
                // Saved by another process in the same second: which answer is the newer cannot be told.
                if let existing = entries[username], existing.savedAt == savedAt, existing.verifier != own {
                    return .tied(with: existing.verifier)
                }
                entries[entry.username] = entry
                return .written(entry.verifier)
            }
            switch saving {
            case .written(let verifier): writes.note(verifier, of: digest, for: username)
            case .tied(let theirs): await settleTie(username, theirs, password)
            case .skipped, nil: break
            }
        case .rejected(.wrongCredentials, let canonical):
            await forget(Set([typed] + (canonical.map { [$0] } ?? [])), ifOf: password)
        case .notMine, .rejected(.locked, _), .rejected(.expiredAccount, _), .rejected(.refusedByPolicy, _),
            .rejected(.passwordChangeRequired, _):
            // The directory refused this password, or the account: what was cached for it is no longer
            // true (a password changed online makes the old one useless offline).
            let canonical: String? = if case .rejected(_, let name) = outcome { name } else { nil }
            order.take(typed)
            if let canonical { order.take(canonical) }
            _ = try? update { entries in
                entries[typed] = nil
                if let canonical { entries[canonical] = nil }
            }
        default:
            break
        }
    }

    /// A password the backend refused online: the entries of `names` are forgotten only if they are of that
    /// very password — it was changed elsewhere, and the cached one no longer opens the account. A wrong
    /// guess says nothing of the account: forgetting on it would let anyone who can try a name wipe that
    /// name's offline login before an outage. Told by the keyed digest where this process wrote the entry,
    /// else by checking the verifier (on the checks' pool); a check that cannot be made forgets. A success of
    /// this very password still being saved is superseded first: it was changed since.
    private func forget(_ names: Set<String>, ifOf password: Secret?) async {
        var digests: [String: [UInt8]] = [:]
        if let password {
            for name in names {
                let digest = writes.digest(of: password, for: name)
                digests[name] = digest
                order.supersede(name, ifItsLatestLoginIs: digest)
            }
        }
        let entries = read()
        for name in names {
            guard let entry = entries[name] else { continue }
            let stale: Bool
            if let password, let digest = digests[name] {
                if writes.verifier(of: digest, for: entry.username) == entry.verifier {
                    stale = true
                } else if writes.wrote(entry.verifier, for: entry.username) {
                    stale = false
                } else {
                    stale = await Self.verifies(entry.verifier, password) ?? true
                }
            } else {
                stale = true
            }
            guard stale else { continue }
            // The newest word on the account: a success answered before it does not put the entry back.
            order.take(name)
            _ = try? update { entries in
                if entries[name]?.verifier == entry.verifier { entries[name] = nil }
            }
        }
    }

    /// Saves the entry of a login whose password is the one its verifier was made of, in this process, by
    /// `writes`: its times, stamp and identity renewed, its failures cleared, as a new entry of the same
    /// password would have them, without hashing the password again. `false` when there is no such entry —
    /// this process did not write it, another process or login wrote another since, or the password is
    /// not the one it was made of — and nothing was changed.
    private func renew(
        _ username: String, ifItsVerifierIsOf digest: [UInt8], savedAt: Int64, stamp: String?,
        _ displayName: String?, _ groups: Set<String>, ticket: UInt64
    ) -> Bool {
        guard let verifier = writes.verifier(of: digest, for: username) else { return false }
        let renewed = try? update { entries -> Bool in
            // A newer answer for the account came first: it stands, and nothing is left to do.
            guard isNewest(ticket, of: username, savedAt, entries[username]) else { return true }
            guard var entry = entries[username], entry.verifier == verifier else { return false }
            entry.savedAt = savedAt
            entry.checkedAt = savedAt
            entry.failures = 0
            entry.stamp = stamp
            entry.adoptsStamp = false
            entry.displayName = displayName
            entry.groups = groups.sorted()
            guard entry.line.utf8.count <= CacheEntry.maxLineBytes else {
                entries[username] = nil
                return true
            }
            entries[username] = entry
            return true
        }
        return renewed ?? false
    }

    /// Whether the verifier `text` is of `password`, checked on the checks' pool; `nil` when it cannot be
    /// checked (a damaged verifier, libxcrypt missing, the task cancelled).
    private static func verifies(_ text: String, _ password: Secret) async -> Bool? {
        let verifier = try? PasswordHash(text)
        let checked = await PasswordHash.checks.run { () -> Bool? in
            guard let verifier, verifier.libraryProblem == nil else { return nil }
            return verifier.verify(password)
        }
        return checked ?? nil
    }

    /// What saving a success came to.
    private enum Saving {
        case written(String)
        /// Another process saved the account in the same second, with this verifier.
        case tied(with: String)
        case skipped
    }

    /// Another process saved `username`'s entry in the same second as this login's answer, so which of the two
    /// is the newer cannot be told: its entry stands if it is of this login's password too, and is forgotten
    /// otherwise (the password changed in that second; neither is trusted offline until the next online
    /// login). Checked on the checks' pool; a check that cannot be made forgets.
    private func settleTie(_ username: String, _ theirs: String, _ password: Secret) async {
        guard await Self.verifies(theirs, password) != true else { return }
        _ = try? update { entries in
            if entries[username]?.verifier == theirs { entries[username] = nil }
        }
    }

    /// Whether a success answered with `ticket`, saved at `savedAt`, is still the newest word on its account:
    /// no answer for it came after (in this process: a later login's success, or a refusal that removed
    /// it), and no other process saved it later (an entry saved in the future, the clock set back, does not
    /// count). An older login whose password was changed since must not put it back over the new one.
    private func isNewest(_ ticket: UInt64, of username: String, _ savedAt: Int64, _ existing: CacheEntry?) -> Bool {
        guard order.isLatest(ticket, for: username) else { return false }
        guard let existing, existing.savedAt > savedAt, existing.savedAt <= clock() else { return true }
        return false
    }

    /// Where the cache is kept.
    public var directoryPath: String { directory.path }

    /// The file of this backend's scope in ``directoryPath``.
    public var filePath: String { directory.path + "/" + fileName }

    /// The offline caches among `provider`'s backends: itself, or the entries of a stack, nested stacks
    /// included — what `gatekeeper-run --refresh-offline` refreshes.
    public static func caches(in provider: any AuthProvider) -> [OfflineCachingProvider] {
        if let cache = provider as? OfflineCachingProvider { return [cache] }
        guard let stack = provider as? ProviderChain else { return [] }
        return stack.entries.flatMap { caches(in: $0.provider) }
    }

    /// What one ``refresh(dueOnly:limit:)`` did.
    public struct RefreshReport: Sendable, Hashable {
        /// Entries the backend confirmed (their check time moved on).
        public var confirmed = 0
        /// Entries removed: the account gone, locked, expired, or its password set since it was saved.
        public var removed = 0
        /// Entries left as they were because the backend could not tell (its servers out of reach).
        public var unchecked = 0

        public init(confirmed: Int = 0, removed: Int = 0, unchecked: Int = 0) {
            self.confirmed = confirmed
            self.removed = removed
            self.unchecked = unchecked
        }
    }

    /// Asks the backend about cached entries, those checked longest ago first — only those checked more
    /// than ``refreshInterval`` ago when `dueOnly` — and at most `limit` of them. An entry whose account
    /// is withdrawn, or whose stamp is not the one it was saved with, is removed; a confirmed one is marked
    /// checked; one the backend cannot tell about stays as it is, due, and the others are asked all the
    /// same. Entries saved anew while it asked (another login) are left as that login left them.
    ///
    /// An entry saved while the backend could not give a stamp is confirmed only by a check that finds
    /// none either: a stamp found later may be a reset's. Only entries written before entries had
    /// stamps adopt the first one found.
    @discardableResult
    public func refresh(dueOnly: Bool = true, limit: Int = .max) async -> RefreshReport {
        await refresh(dueOnly: dueOnly, limit: limit, skipping: nil)
    }

    @discardableResult
    private func refresh(dueOnly: Bool = true, limit: Int, skipping: String?) async -> RefreshReport {
        let now = clock()
        let interval = refreshInterval.components.seconds
        let due = read().values
            .filter { entry in
                guard entry.username != skipping else { return false }
                guard dueOnly else { return true }
                let (age, overflow) = now.subtractingReportingOverflow(entry.checkedAt)
                return overflow || age < 0 || age >= interval
            }
            .sorted { ($0.checkedAt, $0.username) < ($1.checkedAt, $1.username) }
            .prefix(max(0, limit))
        var report = RefreshReport()
        var answers: [(entry: CacheEntry, standing: AccountStanding)] = []
        for entry in due {
            let standing = await inner.standing(of: entry.username)
            if standing != .cannotTell { answers.append((entry, standing)) }
        }
        report.unchecked = due.count - answers.count
        guard !answers.isEmpty else { return report }
        do {
            try update { entries in
                for (asked, standing) in answers {
                    // Saved anew since it was read: that login's stamp stands.
                    guard let entry = entries[asked.username], entry.verifier == asked.verifier else { continue }
                    switch standing {
                    case .current(let stamp)
                    where entry.adoptsStamp || inner.passwordUnchanged(saved: entry.stamp, current: stamp):
                        entries[asked.username]?.stamp = stamp
                        entries[asked.username]?.adoptsStamp = false
                        entries[asked.username]?.checkedAt = max(entry.checkedAt, now)
                        report.confirmed += 1
                    default:
                        entries[asked.username] = nil
                        report.removed += 1
                    }
                }
            }
        } catch {
            return RefreshReport(unchecked: due.count)
        }
        return report
    }

    /// No server could be reached: the cache decides, if it may. The attempt is counted before the
    /// verifier is checked, under the cache's lock, so parallel guesses cannot pass the limit.
    private func offline(_ request: AuthRequest, _ capturing: CapturingConversation, onlineOutcome: AuthOutcome)
        async throws(AuthError) -> AuthOutcome
    {
        // An entry saved later than now, or so long ago that its age cannot be counted, is not used.
        guard usable(read()[request.username]) != nil else { return onlineOutcome }
        let password: Secret
        if let asked = capturing.password {
            password = asked
        } else {
            password = try await request.conversation.askSecret("Password: ")
        }
        // Counted first; a count that cannot be written refuses the login.
        var reserved: CacheEntry?
        var exhausted = false
        do {
            try update { entries in
                guard var entry = entries[request.username] else { return }
                guard entry.failures < maxOfflineFailures else {
                    exhausted = true
                    return
                }
                entry.failures += 1
                entries[request.username] = entry
                reserved = entry
            }
        } catch {
            return onlineOutcome
        }
        if exhausted { return .rejected(.locked(until: nil)) }
        guard let entry = reserved, let verifier = try? PasswordHash(entry.verifier) else { return onlineOutcome }
        /// Nothing was checked (cancelled, or libxcrypt cannot be loaded): the count is taken back.
        func takeBack() {
            _ = try? update { entries in
                if entries[request.username]?.verifier == entry.verifier,
                    let failures = entries[request.username]?.failures, failures > 0
                {
                    entries[request.username]?.failures = failures - 1
                }
            }
        }
        guard
            let checked = await PasswordHash.checks.run({ () -> Bool? in
                verifier.libraryProblem == nil ? verifier.verify(password) : nil
            })
        else {
            takeBack()
            throw .cancelled
        }
        guard let matches = checked else {
            takeBack()
            return onlineOutcome
        }
        guard matches else { return .rejected(.wrongCredentials) }
        _ = try? update { entries in
            if entries[request.username]?.verifier == entry.verifier { entries[request.username]?.failures = 0 }
        }
        return .authenticated(offlineIdentity(entry))
    }

    /// The backend's answer; while it cannot tell (its servers unreachable), a cached account is known by
    /// the spelling it was cached under.
    public func lookUpAccount(_ username: String) async -> AccountLookup {
        let answer = await inner.lookUpAccount(username)
        guard answer == .cannotTell, let entry = read()[username] else { return answer }
        return .known(canonicalName: entry.username)
    }

    public func signOut(_ identity: Identity) async {
        await inner.signOut(identity)
    }

    /// The backend's answer; while no server can be reached, the cache's: an account it holds, saved less
    /// than `maxAge` ago, is valid (`offline: yes`) — as SSSD's account phase answers from its cache — and
    /// any other is `unavailable`. Entries whose accounts the backend withdrew are gone from the cache at its
    /// checks; offline failures do not count here (they refuse passwords, and the account phase asks none).
    public func recheck(_ identity: Identity) async -> Recheck {
        switch await inner.recheckOnline(identity) {
        case .answered(let answer): return answer
        case .unreachable(let reason):
            guard let entry = usable(read()[identity.username]) else { return .unavailable(reason: reason) }
            return .valid(offlineIdentity(entry))
        }
    }

    /// `entry`, if it may serve now: saved no later than now, and less than `maxAge` ago.
    private func usable(_ entry: CacheEntry?) -> CacheEntry? {
        guard let entry else { return nil }
        let (age, overflow) = clock().subtractingReportingOverflow(entry.savedAt)
        guard !overflow, age >= 0, Duration.seconds(age) < maxAge else { return nil }
        return entry
    }

    /// The identity an offline login of `entry` signs in.
    private func offlineIdentity(_ entry: CacheEntry) -> Identity {
        Identity(
            username: entry.username, displayName: entry.displayName, groups: Set(entry.groups), provider: inner.name,
            attributes: ["offline": "yes"])
    }

    public var changesPasswords: Bool { inner.changesPasswords }

    /// The backend's change; once it has changed a password, the cached verifier of the old one is
    /// forgotten, so the old password cannot sign in offline. If the cache cannot be written the change
    /// still stands, and the entry is refused at its next offline use only by its age: said in the reason.
    public func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        let outcome = try await inner.changePassword(request)
        guard request.pass == .update, outcome == .changed else { return outcome }
        do {
            try update { entries in
                entries[request.username] = nil
                for (key, entry) in entries where Username.same(entry.username, request.username) { entries[key] = nil }
            }
        } catch {
            return .failed(
                .systemError,
                reason: "the password was changed, but the offline cache could not forget the old one: \(error)")
        }
        return outcome
    }

    // MARK: The file

    struct CacheEntry {
        var username: String
        var verifier: String
        var savedAt: Int64
        var failures: Int
        var displayName: String?
        var groups: [String]
        /// When the backend last confirmed the account (seconds since the epoch): saved, or refreshed.
        var checkedAt: Int64
        /// The backend's password stamp when the entry was saved (``AccountStanding/current(stamp:)``).
        var stamp: String?
        /// Whether the entry was written before entries had stamps: its first check adopts the backend's.
        var adoptsStamp = false

        /// The longest line an entry may have; a longer one is neither written nor read.
        static let maxLineBytes = 16_384

        /// One line of tab-separated fields; fields never hold a tab or line break (validated names, escaped
        /// display names), and each group name and the stamp are kept whole: `%`, `,`, tab and line breaks
        /// percent-encoded. The stamp is written as `-` when there is none, `?` when it is to be adopted,
        /// and `=`-prefixed otherwise.
        var line: String {
            [username, verifier, String(savedAt), String(failures), displayName ?? ""]
                .map { $0.replacing("\t", with: " ").replacing("\n", with: " ") }.joined(separator: "\t")
                + "\t" + groups.map(Self.encode).joined(separator: ",")
                + "\t" + String(checkedAt) + "\t"
                + (adoptsStamp ? "?" : stamp.map { "=" + Self.encode($0) } ?? "-")
        }

        /// A group name with the bytes the line gives a meaning to (`%`, `,`, tab, CR, LF) as `%XX`.
        static func encode(_ group: String) -> String {
            var bytes: [UInt8] = []
            for byte in group.utf8 {
                if byte == UInt8(ascii: "%") || byte == UInt8(ascii: ",") || byte == 0x09 || byte == 0x0A
                    || byte == 0x0D
                {
                    let hex = Array("0123456789ABCDEF".utf8)
                    bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                } else {
                    bytes.append(byte)
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// The groups of a line's last field, as ``encode(_:)`` wrote them; `nil` for a damaged one.
        static func decodeGroups(_ field: String) -> [String]? {
            guard !field.isEmpty else { return [] }
            var groups: [String] = []
            for piece in field.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                var bytes: [UInt8] = []
                var index = piece.startIndex
                while index < piece.endIndex {
                    guard piece[index] == UInt8(ascii: "%") else {
                        bytes.append(piece[index])
                        index = piece.index(after: index)
                        continue
                    }
                    let digits = piece[index...].dropFirst().prefix(2)
                    guard digits.count == 2, let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16)
                    else {
                        return nil
                    }
                    bytes.append(value)
                    index = piece.index(index, offsetBy: 3)
                }
                groups.append(String(decoding: bytes, as: UTF8.self))
            }
            return groups
        }

        init(
            username: String, verifier: String, savedAt: Int64, failures: Int, displayName: String?, groups: [String],
            checkedAt: Int64, stamp: String?
        ) {
            self.username = username
            self.verifier = verifier
            self.savedAt = savedAt
            self.failures = failures
            self.displayName = displayName
            self.groups = groups
            self.checkedAt = checkedAt
            self.stamp = stamp
        }

        /// A line as ``line`` writes it; one of six fields (written before entries had a check time and a
        /// stamp) counts as checked when saved, with no stamp: its first check adopts the backend's.
        init?(line: Substring) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6 || fields.count == 8, let savedAt = Int64(fields[2]), let failures = Int(fields[3]),
                failures >= 0, let groups = Self.decodeGroups(fields[5])
            else {
                return nil
            }
            var checkedAt = savedAt
            var stamp: String?
            var adoptsStamp = fields.count == 6
            if fields.count == 8 {
                guard let time = Int64(fields[6]) else { return nil }
                checkedAt = time
                adoptsStamp = fields[7] == "?"
                if fields[7] != "-" && !adoptsStamp {
                    // One encoded value: `decodeGroups` finds no raw comma in it.
                    let encoded = String(fields[7].dropFirst())
                    guard fields[7].hasPrefix("="), let decoded = Self.decodeGroups(encoded), decoded.count <= 1
                    else { return nil }
                    stamp = decoded.first ?? ""
                }
            }
            self.init(
                username: fields[0], verifier: fields[1], savedAt: savedAt, failures: failures,
                displayName: fields[4].isEmpty ? nil : fields[4], groups: groups, checkedAt: checkedAt, stamp: stamp)
            self.adoptsStamp = adoptsStamp
        }
    }

    /// In this process one change at a time; across processes, the lock file.
    private let lock = Locked(())

    private func read() -> [String: CacheEntry] {
        guard let file = try? directory.openFile(fileName, creatingWith: nil) else { return [:] }
        defer { close(file) }
        guard let bytes = try? StateDirectory.readAll(file, limit: 16 << 20) else { return [:] }
        var entries: [String: CacheEntry] = [:]
        // Whole lines only: a line cut short (the file past the read's limit, or damaged) is no entry, even
        // where its fields would parse (a group name cut to a shorter one).
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        lines.removeLast()
        for line in lines where line.count <= CacheEntry.maxLineBytes {
            if let entry = CacheEntry(line: Substring(String(decoding: line, as: UTF8.self))) {
                entries[entry.username] = entry
            }
        }
        return entries
    }

    /// Changes the entries and writes the file whole, holding the cache's lock (shared by every process)
    /// across the read, the change and the write, so that no count is lost to another writer.
    /// - Throws: ``StateFileError`` when the lock cannot be taken or the file cannot be written; nothing is
    ///   then changed.
    @discardableResult
    private func update<Result>(_ change: (inout [String: CacheEntry]) -> Result) throws(StateFileError) -> Result {
        try lock.withLock { _ throws(StateFileError) in
            let held = try directory.openFile(lockName, creatingWith: 0o600)
            defer { close(held) }
            try StateDirectory.lock(held)
            var entries = read()
            let original = entries.mapValues(\.line)
            let result = change(&entries)
            guard entries.mapValues(\.line) != original else { return result }
            let text = entries.values.sorted { $0.username < $1.username }.map { $0.line + "\n" }.joined()
            try directory.replace(fileName, with: Array(text.utf8))
            return result
        }
    }

    /// The order in which online answers came, per account: each answer takes a ticket, and only the newest
    /// answer's success writes (``isNewest(_:of:_:_:)``).
    private let order = LoginOrder()

    final class LoginOrder: Sendable {
        /// The last ticket; each account's latest (its ticket and, for a success, its password's digest); and
        /// the last ticket when the record last started over.
        private let state = Locked<
            (last: UInt64, latest: [String: (ticket: UInt64, digest: [UInt8]?)], forgottenUpTo: UInt64)
        >((0, [:], 0))

        /// A ticket for a new answer on `username` (`digest`: the password of a success).
        @discardableResult
        func take(_ username: String, digest: [UInt8]? = nil) -> UInt64 {
            state.withLock { state in
                state.last += 1
                // Beyond as many accounts the record starts over (many names answered at once, unknown ones
                // included): what was in flight then is no longer known to be the newest.
                if state.latest.count >= Writes.limit && state.latest[username] == nil {
                    state.latest.removeAll()
                    state.forgottenUpTo = state.last - 1
                }
                state.latest[username] = (state.last, digest)
                return state.last
            }
        }

        /// A newer answer on `username` when its latest is a success of the password whose digest is `digest`:
        /// that password was refused since.
        func supersede(_ username: String, ifItsLatestLoginIs digest: [UInt8]) {
            state.withLock { state in
                guard let latest = state.latest[username]?.digest, latest == digest else { return }
                state.last += 1
                state.latest[username] = (state.last, nil)
            }
        }

        /// Whether `ticket` is the newest answer on `username`; a ticket taken before the record started over
        /// is not (its saving is skipped: the account's next login saves it).
        func isLatest(_ ticket: UInt64, for username: String) -> Bool {
            state.withLock { state in
                guard let latest = state.latest[username] else { return ticket > state.forgottenUpTo }
                return latest.ticket == ticket
            }
        }
    }

    /// The verifiers this process wrote, each with a keyed digest of the password it was made of: what
    /// lets an online login of an unchanged password renew its entry instead of hashing the password again
    /// (yescrypt's cost, on every login's path, is what an offline cache is otherwise slowest at).
    ///
    /// The digest is HMAC-SHA-256 under a key made of 32 random bytes drawn when the cache is made and the
    /// account's name, so equal passwords of two accounts have unequal digests; key and digests live in this
    /// process's memory only, never in a file, a log or an error. A reader of the process's memory could
    /// test guesses against a digest faster than against a verifier — and could read the passwords
    /// themselves as they arrive: gatekeeperd is not dumpable.
    private let writes = Writes()

    final class Writes: Sendable {
        private let key = randomBytes(32)
        private let written = Locked<[String: (verifier: String, digest: [UInt8])]>([:])
        /// Beyond as many accounts the notes start over (each account's next login hashes again).
        static let limit = 4096

        func digest(of password: Secret, for username: String) -> [UInt8] {
            let key = SHA256.hash(self.key + Array(username.utf8))
            return password.withUnsafeBytes { SHA256.authenticationCode($0, key: key) }
        }

        /// The verifier written for `username` of the password whose digest is `digest`, if any.
        func verifier(of digest: [UInt8], for username: String) -> String? {
            written.withLock { written in
                guard let note = written[username], note.digest.count == digest.count else { return nil }
                // Compared in constant time: how much of a digest matched is nobody's business.
                let difference = zip(note.digest, digest).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
                return difference == 0 ? note.verifier : nil
            }
        }

        /// The verifier this process wrote last for `username`, if it has a note of it.
        func noted(for username: String) -> String? {
            written.withLock { $0[username]?.verifier }
        }

        /// Whether the note for `username` is of `verifier` (whatever password it was made of).
        func wrote(_ verifier: String, for username: String) -> Bool {
            written.withLock { $0[username]?.verifier == verifier }
        }

        func note(_ verifier: String, of digest: [UInt8], for username: String) {
            written.withLock { written in
                if written.count >= Self.limit && written[username] == nil { written.removeAll() }
                written[username] = (verifier, digest)
            }
        }

        func forget(_ username: String) {
            _ = written.withLock { $0.removeValue(forKey: username) }
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
    var messagesWaitForAQuestion: Bool { base.messagesWaitForAQuestion }
    func pause(_ prompt: String) async throws(AuthError) { try await base.pause(prompt) }

    /// The first password asked, unless a new one is set during the login (an expired password changed
    /// at the prompt): then the new one, the one that signs in from now on.
    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        captured.withLock { if $0 == nil || prompt == PasswordPrompt.new { $0 = secret } }
        return secret
    }
}
