public import Authentication
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// Where the cache is, and its refresh: every entry asked about again while the backend is reachable.
extension OfflineCachingProvider {
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

    /// Checks the entries while the backend's servers answer, whether or not anyone logs in, so that a
    /// withdrawal in the directory reaches the cache within ``refreshInterval`` of the entry's last check on a
    /// connected host (SSSD's `refresh_expired_interval`): every quarter of the interval, the entries checked
    /// more than three quarters of it ago, oldest first, one search at a time — each entry is asked about once
    /// an interval, at most, and the load is that spread over it. What a host that stays up runs (gatekeeperd);
    /// returns when its task is cancelled.
    public func checkInBackground() async {
        let interval = max(refreshInterval.components.seconds, 4)
        while !Task.isCancelled {
            await refresh(dueOnly: true, limit: .max, skipping: nil, olderThan: interval * 3 / 4)
            try? await Task.sleep(for: .seconds(interval / 4))
        }
    }

    /// - Parameter olderThan: Seconds since an entry's last check that make it due (``refreshInterval``'s by
    ///   default).
    @discardableResult
    func refresh(dueOnly: Bool = true, limit: Int, skipping: String?, olderThan: Int64? = nil) async -> RefreshReport {
        let now = clock()
        let interval = olderThan ?? refreshInterval.components.seconds
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
            let standing = await inner.standingWithGroups(of: entry.username)
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
                    case .current(let stamp, let groups)
                    where entry.adoptsStamp || inner.passwordUnchanged(saved: entry.stamp, current: stamp):
                        // The groups as the directory has them now: one it took the account out of admits it no
                        // more (`--group`), offline either.
                        if let groups {
                            entries[asked.username]?.groups = groups.sorted()
                            if let line = entries[asked.username]?.line, line.utf8.count > CacheEntry.maxLineBytes {
                                entries[asked.username] = nil
                                report.removed += 1
                                continue
                            }
                        }
                        entries[asked.username]?.stamp = stamp
                        entries[asked.username]?.adoptsStamp = false
                        entries[asked.username]?.checkedAt = max(entry.checkedAt, now)
                        report.confirmed += 1
                    default:
                        entries[asked.username] = nil
                        // The newest word on the account: a login begun before it does not put the entry back.
                        order.take(asked.username)
                        report.removed += 1
                    }
                }
            }
        } catch {
            return RefreshReport(unchecked: due.count)
        }
        return report
    }
}
