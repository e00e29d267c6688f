public import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension LedgerStoreAccess {
    /// A store that keeps pam_faillock's files in `directory` (names that match no account in
    /// `directory.unknown`), such as the host-protection module's `FaillockStore`: `open` opens one more, as
    /// a new process does; `unknownTally` names the file a name no look-up recognised is counted in. The
    /// model reads the files themselves, not through the store.
    public static func faillockFiles(
        directory: String,
        open: @escaping @Sendable () throws -> any LockoutStore,
        unknownTally: @escaping @Sendable (String) -> String
    ) -> LedgerStoreAccess {
        LedgerStoreAccess(
            open: open, unknownTally: unknownTally,
            failures: { tally in
                switch tally {
                case .account(let name): validRecords(in: directory + "/" + name)
                case .unknown(let file): validRecords(in: directory + ".unknown/" + file)
                }
            })
    }

    /// The valid records of a tally file in pam_faillock's format: 64 bytes each, the status a 16-bit word
    /// at byte 54 whose bit 0 is set while the failure counts. A file that is not there holds none.
    static func validRecords(in path: String) -> Int {
        let file = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard file >= 0 else { return 0 }
        defer { close(file) }
        guard let bytes = try? StateDirectory.readAll(file, limit: 1024 * 64) else { return -1 }
        return stride(from: 0, to: bytes.count - 63, by: 64).count { offset in bytes[offset + 54] & 1 != 0 }
    }
}
