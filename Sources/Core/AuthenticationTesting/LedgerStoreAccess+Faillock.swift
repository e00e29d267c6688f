public import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension LedgerStoreAccess {
    /// A store that keeps pam_faillock's files in `directory` (names that match no account in
    /// `directory.unknown`, each record tagged), such as the host-protection module's `FaillockStore`: `open`
    /// opens one more, as a new process does; `unknownTally` names the file and tag a name no look-up
    /// recognised is counted under. The model reads the files themselves, not through the store.
    public static func faillockFiles(
        directory: String,
        open: @escaping @Sendable () throws -> any LockoutStore,
        unknownTally: @escaping @Sendable (String) -> (file: String, tag: [UInt8])
    ) -> LedgerStoreAccess {
        LedgerStoreAccess(
            open: open,
            unknownTally: { name in
                let (file, tag) = unknownTally(name)
                return .unknown(file: file, tag: tag)
            },
            failures: { tally in
                switch tally {
                case .account(let name): validRecords(in: directory + "/" + name)
                case .unknown(let file, let tag): validRecords(in: directory + ".unknown/" + file, tagged: tag)
                }
            })
    }

    /// The valid records of a tally file in pam_faillock's format — 64 bytes each, the source in the first
    /// 52, the status a 16-bit word at byte 54 whose bit 0 is set while the failure counts — with `tag` as
    /// their source, when given. A file that is not there holds none.
    static func validRecords(in path: String, tagged tag: [UInt8]? = nil) -> Int {
        let file = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard file >= 0 else { return 0 }
        defer { close(file) }
        guard let bytes = try? StateDirectory.readAll(file, limit: 1024 * 64) else { return -1 }
        return stride(from: 0, to: bytes.count - 63, by: 64).count { offset in
            bytes[offset + 54] & 1 != 0 && tag.map { bytes[offset..<offset + 52].elementsEqual($0) } ?? true
        }
    }
}
