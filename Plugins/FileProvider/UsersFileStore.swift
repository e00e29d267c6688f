import Authentication

#if canImport(Glibc)
    import Glibc
#endif

/// Reads and writes a users file safely.
///
/// Reading refuses what an attacker could have planted: a path that is not a regular file, or a file
/// that group or others may write. Writing takes an exclusive lock (on `FILE.lock` beside it), reads the
/// current file, applies the change, writes a temporary file in the same directory, `fsync`s it, renames
/// it over the original and `fsync`s the directory, keeping the original's mode and owner: a crash at
/// any moment leaves the old file or the new one, and concurrent writers never lose each other's changes.
public struct UsersFileStore: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// What identifies one version of the file on disk: a rewrite in the same second still changes it.
    struct Fingerprint: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: timespec.Pair
        var changed: timespec.Pair
    }

    /// The file's fingerprint, after checking that it is safe to read.
    func fingerprint() throws(UsersFileError) -> Fingerprint {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw UsersFileError("\(path) cannot be read: \(String(cString: strerror(errno))).")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UsersFileError("\(path) is not a regular file; name the users file itself.")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw UsersFileError(
                "\(path) may be written by group or others; make it private with: chmod go-w \(path)"
            )
        }
        return Fingerprint(
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modified: .init(info.st_mtim),
            changed: .init(info.st_ctim)
        )
    }

    /// Reads and parses the file, with the fingerprint of the version read.
    func load() throws(UsersFileError) -> (UsersFile, Fingerprint) {
        let before = try fingerprint()
        let bytes = try readAll()
        // A file replaced while it was read is read again by the next caller.
        return (try UsersFile(parsing: bytes), before)
    }

    /// Reads and parses the file.
    public func read() throws(UsersFileError) -> UsersFile {
        try load().0
    }

    private func readAll() throws(UsersFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw UsersFileError("\(path) cannot be opened: \(String(cString: strerror(errno))).")
        }
        defer { close(descriptor) }
        // Read into a buffer of the file's size (a large file is not copied as it grows), then past it
        // in case the file grew meanwhile.
        var info = stat()
        let expected = fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
        var bytes = [UInt8](repeating: 0, count: expected + 1)
        var filled = 0
        while true {
            if filled == bytes.count { bytes += [UInt8](repeating: 0, count: max(bytes.count, 4096)) }
            let count = bytes[filled...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw UsersFileError("\(path) cannot be read: \(String(cString: strerror(errno))).")
            }
            if count == 0 {
                bytes.removeSubrange(filled...)
                return bytes
            }
            filled += count
        }
    }

    /// Applies `change` to the current file under an exclusive lock and replaces the file atomically.
    /// - Parameter create: Start from an empty file if there is none.
    /// - Throws: ``UsersFileError`` from reading, parsing or writing, or what `change` throws; the file
    ///   is then left as it was.
    public func update<Result>(
        create: Bool = false,
        _ change: (inout UsersFile) throws(UsersFileError) -> Result
    ) throws(UsersFileError) -> Result {
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw UsersFileError("\(path).lock cannot be opened: \(String(cString: strerror(errno))).")
        }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw UsersFileError("\(path) cannot be locked: \(String(cString: strerror(errno))).")
            }
        }
        defer { flock(lock, LOCK_UN) }

        var file: UsersFile
        var mode: mode_t = 0o600
        var owner: (uid_t, gid_t)?
        var info = stat()
        if stat(path, &info) == 0 {
            file = try read()
            mode = info.st_mode & 0o7777
            owner = (info.st_uid, info.st_gid)
        } else if errno == ENOENT && create {
            file = UsersFile()
        } else {
            throw UsersFileError("\(path) cannot be read: \(String(cString: strerror(errno))).")
        }
        let result = try change(&file)
        try replace(with: file.serialized(), mode: mode, owner: owner)
        return result
    }

    private func replace(with bytes: [UInt8], mode: mode_t, owner: (uid_t, gid_t)?) throws(UsersFileError) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let temporary = mkstemp(&template)
        guard temporary >= 0 else {
            throw UsersFileError("cannot create a temporary file beside \(path): \(String(cString: strerror(errno))).")
        }
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer {
            close(temporary)
            if !renamed { unlink(temporaryPath) }
        }
        func failure(_ what: String) -> UsersFileError {
            UsersFileError("cannot write \(path) (\(what)): \(String(cString: strerror(errno))).")
        }
        guard fchmod(temporary, mode) == 0 else { throw failure("mode") }
        if let (uid, gid) = owner, fchown(temporary, uid, gid) != 0, geteuid() == 0 { throw failure("owner") }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(temporary, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw failure("write")
            }
            offset += written
        }
        guard fsync(temporary) == 0 else { throw failure("fsync") }
        guard rename(temporaryPath, path) == 0 else { throw failure("rename") }
        renamed = true
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }
}

extension timespec {
    /// Seconds and nanoseconds, comparable.
    struct Pair: Hashable {
        var seconds: Int
        var nanoseconds: Int

        init(_ time: timespec) {
            seconds = time.tv_sec
            nanoseconds = time.tv_nsec
        }
    }
}
