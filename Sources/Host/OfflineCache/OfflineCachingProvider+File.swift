import Authentication
import GatekeeperSupport
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// The cache's file: its entries, read and written whole, and the offline checks counted in it.
extension OfflineCachingProvider {

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

    func read() -> [String: CacheEntry] {
        // A file others may read is not used: its verifiers may have been copied, and a write replaces it
        // with a private one of new entries only.
        guard let file = try? directory.openFile(fileName, creatingWith: nil, secret: true) else { return [:] }
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
    func update<Result>(_ change: (inout [String: CacheEntry]) -> Result) throws(StateFileError) -> Result {
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

        /// A ticket for a login whose password goes to the backend now: its answer, whenever it comes, is placed
        /// by it (``take(_:digest:begun:)``).
        func begin() -> UInt64 {
            state.withLock { state in
                state.last += 1
                return state.last
            }
        }

        /// The ticket of a success on `username` of a login begun with `begun` (``begin()``), recorded as the
        /// account's latest answer unless an answer that came first was of a login begun later, or is a refusal
        /// that came after this login began: then it is not the latest, and its success is not saved. (A slow
        /// answer of the old password, begun before a reset, never overwrites the new password's.)
        func take(_ username: String, digest: [UInt8]?, begun: UInt64) -> UInt64 {
            state.withLock { state in
                guard begun > state.forgottenUpTo else { return begun }
                if let latest = state.latest[username], latest.ticket > begun { return begun }
                if state.latest.count >= Writes.limit && state.latest[username] == nil {
                    state.latest.removeAll()
                    state.forgottenUpTo = state.last
                    return begun
                }
                state.latest[username] = (begun, digest)
                return begun
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
