import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The subordinate uids of `/etc/subuid` (`shadow`'s `newuidmap` hands them to their owner's user
/// namespaces): a process running as one of them is its owner's, and counts against its owner's share of
/// the daemon, so that a user with 17 ranges holds one share, not 17.
///
/// The file is read again only when it changed (its device, inode, size and time of change, from `fstat`
/// of the descriptor read). A file that cannot be read, or a line that does not parse, maps nothing: a uid
/// then counts as itself, as it did before the ranges were handed out.
final class SubordinateIDs: Sendable {
    /// One range: `count` uids from `first`, owned by `owner`.
    struct Range: Equatable, Sendable {
        let first: UInt32
        let count: UInt32
        let owner: UInt32
    }

    let path: String
    private let cache = Locked<(stamp: [Int64], ranges: [Range])?>(nil)

    init(path: String = "/etc/subuid") { self.path = path }

    /// The uid `uid` counts as: the owner of the range holding it, else itself.
    func owner(of uid: UInt32) -> UInt32 {
        for range in ranges() where uid >= range.first && UInt64(uid) < UInt64(range.first) + UInt64(range.count) {
            return range.owner
        }
        return uid
    }

    private func ranges() -> [Range] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var info = stat()
        // Root's file only, and a regular one of a sane size: anyone else's ranges are nobody's.
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == 0,
            info.st_mode & (S_IWGRP | S_IWOTH) == 0, info.st_size <= 1 << 20
        else { return [] }
        let stamp = [
            Int64(info.st_dev), Int64(info.st_ino), Int64(info.st_size), Int64(info.st_ctim.tv_sec),
            Int64(info.st_ctim.tv_nsec), Int64(info.st_mtim.tv_nsec),
        ]
        if let cached = cache.withLock({ $0 }), cached.stamp == stamp { return cached.ranges }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count <= 0 {
                if count < 0 && errno == EINTR { continue }
                break
            }
            filled += count
        }
        let ranges = Self.parse(bytes[..<filled], uidOf: SystemAccounts.uid(of:))
        cache.withLock { $0 = (stamp, ranges) }
        return ranges
    }

    /// The ranges of `subuid(5)` lines `owner:first:count`, the owner a name (looked up with `uidOf`) or a
    /// uid; lines that do not parse are left out.
    static func parse(_ text: some Collection<UInt8>, uidOf: (String) -> UInt32?) -> [Range] {
        var ranges: [Range] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty, let first = number(fields[1]), let count = number(fields[2]),
                count > 0
            else { continue }
            let name = String(decoding: fields[0], as: UTF8.self)
            guard let owner = number(fields[0]) ?? uidOf(name) else { continue }
            ranges.append(Range(first: first, count: count, owner: owner))
        }
        return ranges
    }

    /// A decimal number of at most 10 digits that fits a uid.
    private static func number(_ bytes: some Collection<UInt8>) -> UInt32? {
        guard !bytes.isEmpty, bytes.count <= 10, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt32(exactly: bytes.reduce(UInt64(0)) { $0 * 10 + UInt64($1 - 0x30) })
    }
}
