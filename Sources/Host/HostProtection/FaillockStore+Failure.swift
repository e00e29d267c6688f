public import Authentication
import CUnicodeFold
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension FaillockStore {
    /// One recorded failure, as `faillock` lists it.
    public struct Failure: Sendable, Hashable {
        /// Seconds since the epoch.
        public var time: Int64
        /// `RHOST`, `TTY` or `SVC`, as `faillock` prints it.
        public var type: String
        public var source: String
        public var valid: Bool
    }

    /// The failures recorded in `account`'s own file (none when it has none).
    public func failures(of account: String) throws(AuthError) -> [Failure] {
        guard StateDirectory.isPlainName(account), !account.hasPrefix(".") else { return [] }
        do {
            let file = try tallies.openFile(account, creatingWith: nil, owners: Self.owners(account))
            defer { close(file) }
            try StateDirectory.lock(file)
            let bytes = try StateDirectory.readAll(file, limit: Self.maxRecords * Self.recordSize)
            return stride(from: 0, to: bytes.count - Self.recordSize + 1, by: Self.recordSize).map {
                let record = Record(bytes[$0..<$0 + Self.recordSize])
                return Failure(
                    time: Int64(clamping: record.time),
                    type: record.status & Self.statusRemoteHost != 0
                        ? "RHOST" : record.status & Self.statusTerminal != 0 ? "TTY" : "SVC",
                    source: TextSafety.escaped(record.sourceText), valid: record.status & Self.statusValid != 0)
            }
        } catch  where error.isMissing {
            return []
        } catch {
            throw .providerUnavailable(reason: "the failed logins cannot be read: \(error)")
        }
    }
}
