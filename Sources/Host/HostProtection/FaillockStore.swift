public import Authentication
import CUnicodeFold
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Failed logins kept in files, in pam_faillock's own tally format, so that every process of every tool
/// counts them together — and with `pam_faillock.so` and the `faillock` tool, given the same directory.
///
/// One file per account, named by it: 64-byte records (52 bytes of source, 2 reserved, a 16-bit status,
/// a 64-bit time in seconds since the epoch, in the machine's byte order), as `modules/pam_faillock`
/// of Linux-PAM writes them, with its rules (``LockoutPolicy``): each update reads, changes and rewrites
/// the file under its exclusive lock, keeping at most 1,024 records. A success empties the account's
/// file (creating it, so the account has one from then on); ``unlock(_:)`` empties it, as
/// `faillock --reset` does.
///
/// Damage is never an unlock: a trailing partial record is dropped as pam_faillock drops it; a file
/// that cannot be opened, read or trusted (a link, not a regular file, another owner, writable by
/// others) is an error, and the login is refused.
///
/// **Names that match no account** get no file of their own — so nobody can fill the disk by trying
/// names, and a name that is a password typed in the wrong field is never written down. They are
/// counted in one of 1,024 bucket files chosen by a keyed hash of the name, in the sibling directory
/// `<dir>.unknown` (where `faillock` does not look), each record tagged with the name's own keyed digest
/// where pam_faillock keeps the source, so each name has a count of its own: failures of other names never
/// lock it. A bucket keeps at most 64 records (more only for one name whose `deny` is larger); a new one
/// pushes out those no longer counting first, then the oldest of other names: at most 4 MiB in all at the
/// default `deny`. An account a backend knows is judged by its own file alone; a name no backend could
/// look up, by its records in its bucket alone (all spellings that fold alike together), so an unknown name
/// is locked after `deny` failures as an account is, and the answers do not tell which names exist. A
/// success, and ``unlock(_:)``, clear both.
public final class FaillockStore: LockoutStore {
    /// Where the tally files are.
    public let directory: String
    let tallies: StateDirectory
    let unknown: StateDirectory
    let digest: AuditDigest
    /// Where this process's attempts still being checked are noted (``AttemptsInFlight/process``).
    let inFlight: AttemptsInFlight
    /// The tally directories' identities (device and inode): one directory under two paths (a bind mount, a
    /// reload naming it anew) is one.
    let identity: (tallies: String, unknown: String)

    /// The record format, as `struct tally` of pam_faillock.
    static let recordSize = 64
    static let sourceSize = 52
    static let maxRecords = 1024
    static let bucketCount = 1024
    static let bucketRecords = 64
    static let statusValid: UInt16 = 0x1
    static let statusRemoteHost: UInt16 = 0x2
    static let statusTerminal: UInt16 = 0x4

    /// Opens (creating, mode 0700: the file names are account names) the tally directory and its sibling
    /// for names that match no account.
    /// - Parameter inFlight: Where attempts still being checked are noted: the process's own, shared by every
    ///   store of the process (a simulation of several processes in one gives each its own).
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when either cannot be used safely.
    public init(directory: String, inFlight: AttemptsInFlight = .process) throws(AuthError) {
        do {
            self.directory = directory
            self.inFlight = inFlight
            tallies = try StateDirectory(directory, creatingWith: 0o700)
            unknown = try StateDirectory(directory + ".unknown", creatingWith: 0o700)
            digest = AuditDigest(key: try Self.key(in: unknown))
            identity = (try Self.identity(of: tallies), try Self.identity(of: unknown))
        } catch {
            throw .providerUnavailable(reason: "the lockout directory cannot be used: \(error)")
        }
    }

    /// A directory's device and inode.
    static func identity(of directory: StateDirectory) throws(StateFileError) -> String {
        var info = stat()
        guard fstat(directory.descriptor, &info) == 0 else {
            throw StateFileError("\(directory.path): \(errorDescription())")
        }
        return "\(info.st_dev):\(info.st_ino)"
    }

    /// The secret that spreads unknown names over buckets: 32 random bytes, made once.
    static func key(in directory: StateDirectory) throws(StateFileError) -> [UInt8] {
        let file = try directory.openFile("key", creatingWith: 0o600)
        defer { close(file) }
        try StateDirectory.lock(file)
        let bytes = try StateDirectory.readAll(file, limit: 64)
        if bytes.count == 32 { return bytes }
        guard bytes.isEmpty else { throw StateFileError("\(directory.path)/key: is damaged; remove it") }
        let key = randomBytes(32)
        try StateDirectory.overwrite(file, with: key)
        return key
    }

    public func status(of account: LockoutAccount, policy: LockoutPolicy) throws(AuthError) -> LockoutStatus {
        // A failure this login might make must be countable: with the directory unwritable (a read-only
        // or full file system), the login is refused rather than left to unlimited guessing.
        guard faccessat(tallies.descriptor, ".", W_OK, AT_EACCESS) == 0,
            faccessat(unknown.descriptor, ".", W_OK, AT_EACCESS) == 0
        else {
            throw .providerUnavailable(
                reason: "the lockout directory \(directory) cannot be written: \(errorDescription())")
        }
        let tally = try tallyName(of: account)
        return try withTally(of: account, create: false) { (records, now) throws(StateFileError) in
            guard let records else { return .open(failures: 0) }
            return Self.status(settledRecords(records, tally: tally, now: now), now, policy, account)
        }
    }

    public func beginAttempt(_ account: LockoutAccount, source: LoginSource, policy: LockoutPolicy)
        throws(AuthError) -> LockoutAttempt
    {
        var random = SystemRandomNumberGenerator()
        // Never 0, which is what pam_faillock writes there: a ticket names only the record it wrote.
        let tag = UInt16.random(in: 1 ... .max, using: &random)
        let tally = try tallyName(of: account)
        var entered: AttemptsInFlight.Entry?
        do throws(AuthError) {
            return try withTally(of: account, create: true) {
                (records: inout [Record]?, now: Int64) throws(StateFileError) -> LockoutAttempt in
                let before = Self.status(records ?? [], now, policy, account)
                if before.isLocked {
                    let settled = Self.status(
                        settledRecords(records ?? [], tally: tally, now: now), now, policy, account)
                    return settled.isLocked ? .refused(settled) : .waiting(before)
                }
                var record = Record(source: source, time: UInt64(bitPattern: now))
                record.reserved = tag
                let status = append(record, to: &records, now: now, policy: policy, account: account)
                // Entered before the record is written, under the file's lock: no attempt of this process reads
                // it as a settled failure meanwhile.
                let checked = AttemptsInFlight.Entry(tally: tally, time: now, tag: tag)
                inFlight.enter(checked, now: now)
                entered = checked
                return .counted(LockoutTicket(account: account, time: now, tag: tag), status: status)
            }
        } catch {
            if let entered { inFlight.leave(entered) }
            throw error
        }
    }

    public func withdraw(_ ticket: LockoutTicket) throws(AuthError) {
        let tally = try tallyName(of: ticket.account)
        try withTally(of: ticket.account, create: false) { (records: inout [Record]?, _: Int64) in
            records?.removeAll {
                $0.reserved == ticket.tag && $0.time == UInt64(bitPattern: ticket.time)
                    && $0.status & Self.statusValid != 0
            }
        }
        inFlight.leave(AttemptsInFlight.Entry(tally: tally, time: ticket.time, tag: ticket.tag))
    }

    public func settled(_ ticket: LockoutTicket) {
        guard let tally = try? tallyName(of: ticket.account) else { return }
        inFlight.leave(AttemptsInFlight.Entry(tally: tally, time: ticket.time, tag: ticket.tag))
    }

    /// `records` without those of attempts this process is still checking.
    func settledRecords(_ records: [Record], tally: String, now: Int64) -> [Record] {
        let checking = inFlight.entries(of: tally, now: now)
        guard !checking.isEmpty else { return records }
        return records.filter { !checking.contains($0.inFlight(tally: tally)) }
    }

    /// Those of `records` that are attempts this process is still checking.
    func recordsInFlight(_ records: [Record], tally: String, now: Int64) -> [Record] {
        let checking = inFlight.entries(of: tally, now: now)
        guard !checking.isEmpty else { return [] }
        return records.filter { checking.contains($0.inFlight(tally: tally)) }
    }

    /// Which tally an account is counted in: its own file, or its folded name's records in a bucket — in
    /// this directory, whatever path named it.
    func tallyName(of account: LockoutAccount) throws(AuthError) -> String {
        if account.known && StateDirectory.isPlainName(account.key) && !account.key.hasPrefix(".") {
            return identity.tallies + "=" + account.key
        }
        do {
            return try identity.unknown + "~" + Self.folded(account)
        } catch {
            throw .providerUnavailable(reason: "the failed logins cannot be read or counted: \(error)")
        }
    }

    public func recordFailure(of account: LockoutAccount, source: LoginSource, policy: LockoutPolicy)
        throws(AuthError) -> LockoutStatus
    {
        try withTally(of: account, create: true) {
            (records: inout [Record]?, now: Int64) throws(StateFileError) -> LockoutStatus in
            append(
                Record(source: source, time: UInt64(bitPattern: now)), to: &records, now: now, policy: policy,
                account: account)
        }
    }

    /// Adds a failure as pam_faillock's `write_tally` does: records outside the interval, or all after an
    /// unlock by time, become invalid, and the oldest invalid one is reused. Returns the status after it.
    func append(
        _ record: Record,
        to records: inout [Record]?,
        now: Int64,
        policy: LockoutPolicy,
        account: LockoutAccount
    ) -> LockoutStatus {
        var list = records ?? []
        let before = Self.status(list, now, policy, account)
        let window = LockoutPolicy.count(policy.interval, .seconds(1))
        for index in list.indices
        where before == .unlockedByTime || now &- Int64(clamping: list[index].time) >= window {
            list[index].status &= ~Self.statusValid
        }
        if let oldest = list.indices.min(by: { list[$0].time < list[$1].time }),
            list[oldest].status & Self.statusValid == 0
        {
            list[oldest] = record
        } else {
            list.append(record)
        }
        // A name in a bucket keeps at least `deny` records, or a larger `deny` could never lock it.
        let cap = account.known ? Self.maxRecords : min(max(policy.deny, 1), Self.maxRecords)
        if list.count > cap { list.removeFirst(list.count - cap) }
        records = list
        return Self.status(list, now, policy, account)
    }

    static func status(_ records: [Record], _ now: Int64, _ policy: LockoutPolicy, _ account: LockoutAccount)
        -> LockoutStatus
    {
        policy.status(
            failures: validTimes(records), now: now, unit: .seconds(1), isAdministrator: account.isSystemAdministrator)
    }

    /// Empties the account's file (creating it), and the records the name has in its bucket from logins no
    /// look-up could name — but for those of this process's attempts still being checked, which hold their
    /// slots and stay counted if they prove wrong (pam_faillock would count them once checked, after this).
    public func recordSuccess(of account: String) throws(AuthError) {
        try clear(account, keepingInFlight: true, settling: nil)
    }

    /// A success whose own attempt is `ticket`: settled and cleared with the rest, under the tally's lock.
    public func recordSuccess(of account: String, settling ticket: LockoutTicket?) throws(AuthError) {
        try clear(account, keepingInFlight: true, settling: ticket)
    }

    /// Empties `account`'s file, as `faillock --reset` does.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the file cannot be written, or when the
    ///   name cannot be a file name (its failures are counted with names that match no account).
    public func unlock(_ account: String) throws(AuthError) {
        guard StateDirectory.isPlainName(account), !account.hasPrefix(".") else {
            throw .providerUnavailable(
                reason:
                    "\(TextSafety.escaped(account)) cannot name a tally file; its failures are counted with names that match no account"
            )
        }
        // Failures counted for the name while no look-up could recognise it go too; an administrator's unlock
        // forgets every record, those of attempts in flight included.
        try clear(account, keepingInFlight: false, settling: nil)
    }

    /// Empties the name's records in its bucket and the account's own file (creating it, so the account has
    /// one from then on), keeping those of attempts in flight when asked. `ticket`, the success's own attempt,
    /// is settled under the lock of the tally it was counted in, so nobody sees it as a failure meanwhile.
    func clear(_ account: String, keepingInFlight: Bool, settling ticket: LockoutTicket?) throws(AuthError) {
        let entry = try ticket.map { ticket throws(AuthError) in
            AttemptsInFlight.Entry(tally: try tallyName(of: ticket.account), time: ticket.time, tag: ticket.tag)
        }
        func empty(_ records: inout [Record]?, tally: String, now: Int64) {
            if let entry, entry.tally == tally { inFlight.leave(entry) }
            guard let list = records, !list.isEmpty else { return }
            records = keepingInFlight ? recordsInFlight(list, tally: tally, now: now) : []
        }
        let bucket = LockoutAccount(account, known: false)
        let bucketTally = try tallyName(of: bucket)
        try withTally(of: bucket, create: false) { (records: inout [Record]?, now: Int64) in
            empty(&records, tally: bucketTally, now: now)
        }
        if StateDirectory.isPlainName(account), !account.hasPrefix(".") {
            let own = LockoutAccount(account)
            let ownTally = try tallyName(of: own)
            do throws(AuthError) {
                try withTally(of: own, create: true) { (records: inout [Record]?, now: Int64) in
                    empty(&records, tally: ownTally, now: now)
                }
            } catch {
                throw .providerUnavailable(reason: "the failed logins of an account cannot be reset: \(error)")
            }
        }
        if let entry { inFlight.leave(entry) }
    }

    /// The failures recorded for `account` (`nil` when it has no file and no bucket file): the name's own
    /// file when it has one — or, when `create` is set, when a backend knows it — else its bucket.
    /// `body` may change them; they are written back under the same lock.
    func withTally<T>(
        of account: LockoutAccount,
        create: Bool,
        _ body: (inout [Record]?, Int64) throws(StateFileError) -> T
    ) throws(AuthError) -> T {
        do {
            let name = account.key
            var file: Int32 = -1
            // An account a backend knows: its own file alone (none yet: no failures), never the names that
            // match no account. A name no look-up recognised: its records in its bucket, whatever files exist —
            // every spelling a loose backend matches to one account folds to one count, and a file made for the
            // account by a success or another entry's refusal never starts a second one.
            var tag: [UInt8]?
            if account.known && StateDirectory.isPlainName(name) && !name.hasPrefix(".") {
                // pam_faillock gives the file to the account, so its uid may own it.
                let owners = Self.owners(name)
                do {
                    file = try tallies.openFile(name, creatingWith: create ? 0o600 : nil, owners: owners)
                } catch  where error.isMissing {
                    file = -1
                }
            } else {
                // Each record in the bucket tagged with the name's own keyed digest, so that no other name's
                // failures ever count against it.
                let folded = try Self.folded(account)
                file = try openBucket(of: folded, create: create)
                tag = bucketTag(of: folded)
            }
            guard file >= 0 else {
                var none: [Record]? = nil
                return try body(&none, Self.now())
            }
            defer { close(file) }
            try StateDirectory.lock(file)
            let bytes = try StateDirectory.readAll(file, limit: Self.maxRecords * Self.recordSize)
            let all = stride(from: 0, to: bytes.count - Self.recordSize + 1, by: Self.recordSize).map {
                Record(bytes[$0..<$0 + Self.recordSize])
            }
            var records: [Record]? = tag.map { tag in all.filter { $0.source == tag } } ?? all
            let original = records
            let result = try body(&records, Self.now())
            if let changed = records, changed != original {
                var written = changed
                if let tag { written = Self.bucket(others: all.filter { $0.source != tag }, own: changed, tag: tag) }
                try StateDirectory.overwrite(file, with: written.flatMap(\.bytes))
            }
            return result
        } catch {
            throw .providerUnavailable(reason: "the failed logins cannot be read or counted: \(error)")
        }
    }
}
