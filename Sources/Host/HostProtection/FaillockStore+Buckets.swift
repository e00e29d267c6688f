package import Authentication
import CUnicodeFold
package import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Names no account matches, folded and counted in buckets of their own; the records of a tally file.
extension FaillockStore {
    /// What a name is counted under in the buckets: Unicode's NFKC case fold of it (libunistring's), so
    /// that a backend matching names loosely — case, fullwidth and mathematical letters, ligatures, as an
    /// NFKC-and-casefold comparison does — still gets `deny` guesses per account, not per spelling.
    /// Without libunistring nothing is counted (the lockout fails closed) rather than counted per spelling.
    package static func folded(_ account: LockoutAccount) throws(StateFileError) -> String {
        var why: UnsafePointer<CChar>?
        guard gatekeeper_unistring_load(&why) == 0 else {
            throw StateFileError("names cannot be folded: \(why.map { String(cString: $0) } ?? "libunistring")")
        }
        var length = 0
        let bytes = Array(account.key.utf8)
        guard let folded = bytes.withUnsafeBufferPointer({ gk_fold($0.baseAddress, $0.count, &length) }) else {
            return account.bucketKey
        }
        defer { free(folded) }
        return String(decoding: UnsafeBufferPointer(start: folded, count: length), as: UTF8.self)
    }

    /// What a folded name's records in its bucket carry where pam_faillock keeps a record's source: its
    /// keyed digest (no name, no source), so each name in a bucket has its own count.
    package func bucketTag(of folded: String) -> [UInt8] {
        let digest = Array(digest.digest(of: folded).utf8.prefix(Self.sourceSize))
        return digest + [UInt8](repeating: 0, count: Self.sourceSize - digest.count)
    }

    /// A bucket's records once one name's changed: the name's own, marked as its own (valid or not, no source
    /// flags), and as many of the others as fit in ``bucketRecords`` beside them — those no longer counting
    /// (invalid) dropped first, then the oldest. Only a spray of new names into this very bucket (which the
    /// keyed hash hides) can push out another name's failures, never bring them about.
    static func bucket(others: [Record], own: [Record], tag: [UInt8]) -> [Record] {
        let mine = own.map { record in
            var record = record
            record.source = tag
            record.status &= statusValid
            return record
        }
        let room = max(bucketRecords - mine.count, 0)
        let kept = others.enumerated()
            .sorted {
                ($0.element.status & statusValid, $0.element.time) > ($1.element.status & statusValid, $1.element.time)
            }
            .prefix(room).sorted { $0.offset < $1.offset }.map(\.element)
        return kept + mine
    }

    /// The file in `<dir>.unknown` that a folded name is counted in.
    package func bucketName(of folded: String) -> String {
        let hash = digest.digest(of: folded).utf8.suffix(8)
        let index = Int(String(decoding: hash, as: UTF8.self), radix: 16)! % Self.bucketCount
        return "bucket-\(String(index, radix: 16))"
    }

    func openBucket(of account: String, create: Bool) throws(StateFileError) -> Int32 {
        let name = bucketName(of: account)
        do {
            return try unknown.openFile(name, creatingWith: create ? 0o600 : nil)
        } catch  where error.isMissing {
            return -1
        }
    }

    static func validTimes(_ records: [Record]) -> [Int64] {
        records.filter { $0.status & statusValid != 0 }.map { Int64(clamping: $0.time) }
    }

    static func now() -> Int64 { Int64(time(nil)) }

    /// pam_faillock gives each tally file to its account; such a file is accepted too.
    static func owners(_ account: String) -> Set<UInt32> {
        SystemAccounts.uid(of: account).map { [$0] } ?? []
    }

    /// One 64-byte record.
    struct Record: Equatable {
        var source: [UInt8]
        var reserved: UInt16 = 0
        var status: UInt16
        var time: UInt64

        init(source: LoginSource, time: UInt64) {
            let (text, flag): (String, UInt16) =
                switch source {
                case .remoteHost(let host): (host, FaillockStore.statusRemoteHost)
                case .terminal(let terminal): (terminal, FaillockStore.statusTerminal)
                case .service(let service): (service, 0)
                }
            // As strncpy: at most 52 bytes, not necessarily terminated.
            let bytes = Array(text.utf8.prefix(FaillockStore.sourceSize))
            self.source = bytes + [UInt8](repeating: 0, count: FaillockStore.sourceSize - bytes.count)
            self.status = FaillockStore.statusValid | flag
            self.time = time
        }

        init(_ bytes: ArraySlice<UInt8>) {
            let base = bytes.startIndex
            source = Array(bytes[base..<base + FaillockStore.sourceSize])
            reserved = Self.integer(bytes, at: base + 52, size: 2)
            status = Self.integer(bytes, at: base + 54, size: 2)
            time = Self.integer(bytes, at: base + 56, size: 8)
        }

        var bytes: [UInt8] {
            source + Self.encode(reserved) + Self.encode(status) + Self.encode(time)
        }

        /// The attempt in flight it would be, in `tally`.
        func inFlight(tally: String) -> AttemptsInFlight.Entry {
            AttemptsInFlight.Entry(tally: tally, time: Int64(clamping: time), tag: reserved)
        }

        /// The source as text, for display.
        var sourceText: String {
            String(decoding: source.prefix(while: { $0 != 0 }), as: UTF8.self)
        }

        private static func integer<T: FixedWidthInteger>(_ bytes: ArraySlice<UInt8>, at offset: Int, size: Int) -> T {
            var value = T.zero
            withUnsafeMutableBytes(of: &value) { raw in
                for index in 0..<size { raw[index] = bytes[offset + index] }
            }
            return value
        }

        private static func encode<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            withUnsafeBytes(of: value) { Array($0) }
        }
    }
}
