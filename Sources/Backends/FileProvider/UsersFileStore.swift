import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Reads and writes a users file safely.
///
/// The file is opened once, without following a symbolic link at its last component (`O_NOFOLLOW`:
/// a link there is refused, naming its target is the fix), and every check is taken from `fstat` of
/// that descriptor: it must be a regular file, owned by root or by the user running the program, that
/// group and others cannot write. Nobody can swap the file between the check and the read.
///
/// Writing takes an exclusive lock on `FILE.lock` beside it (created without following links, and
/// refused unless it is a regular file owned by root or the running user), reads the current file
/// through the same checks, applies the change, writes a temporary file in the same directory, `fsync`s
/// it, renames it over the original and `fsync`s the directory, keeping the mode and owner read from
/// the descriptor: a crash at any moment leaves the old file or the new one, and concurrent writers
/// never lose each other's changes.
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

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = .init(info.st_mtim)
            changed = .init(info.st_ctim)
        }
    }

    /// The fingerprint of what is at the path now (not following a link), after the same checks as a
    /// read: for telling whether the version in service is still current. Nothing is read through it.
    func fingerprint() throws(UsersFileError) -> Fingerprint {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw failure("cannot be read") }
        try check(info)
        return Fingerprint(info)
    }

    /// Reads and parses the file, with the fingerprint of the version read (from the same descriptor).
    func load() throws(UsersFileError) -> (UsersFile, Fingerprint) {
        let (descriptor, info) = try openChecked()
        defer { close(descriptor) }
        let bytes = try readAll(descriptor, expected: Int(info.st_size))
        return (try UsersFile(parsing: bytes), Fingerprint(info))
    }

    /// Reads and parses the file.
    public func read() throws(UsersFileError) -> UsersFile {
        try load().0
    }

    /// Opens the file for reading and checks it through its descriptor.
    private func openChecked() throws(UsersFileError) -> (Int32, stat) {
        // O_NONBLOCK: a FIFO planted at the path must not hang the open; it is refused below.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw failure("cannot be opened") }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let error = failure("cannot be examined")
            close(descriptor)
            throw error
        }
        do {
            try check(info)
        } catch {
            close(descriptor)
            throw error
        }
        return (descriptor, info)
    }

    /// The rules a users file must meet, on what `fstat` or `lstat` said of it.
    private func check(_ info: stat) throws(UsersFileError) {
        guard info.st_mode & S_IFMT != S_IFLNK else { throw symbolicLink() }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw UsersFileError(.unsafe, "\(path) is not a regular file; name the users file itself.")
        }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            throw UsersFileError(
                .unsafe,
                "\(path) is owned by uid \(info.st_uid), neither root nor the user running this program (uid "
                    + "\(geteuid())); it is refused, as its owner could rewrite it: chown it to one of them."
            )
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw UsersFileError(
                .unsafe,
                "\(path) may be written by group or others; make it private with: chmod go-w \(path)"
            )
        }
        guard info.st_size <= Self.maxFileBytes else {
            throw UsersFileError(.unsafe, "\(path) is larger than \(Self.maxFileBytes >> 20) MiB; it is not read.")
        }
    }

    /// The largest users file read (a million users take about 90 MB): a larger one is refused before any
    /// of it is read, so a file cannot make the reader allocate without bound.
    public static let maxFileBytes = 1 << 30

    private func symbolicLink() -> UsersFileError {
        UsersFileError(
            .unsafe,
            "\(path) is a symbolic link, which is not followed (it could be pointed elsewhere at any moment); "
                + "name the file it points to."
        )
    }

    /// A message for the error in `errno`: a link at the path (ELOOP under O_NOFOLLOW) is named as such.
    private func failure(_ what: String) -> UsersFileError {
        let code = errno
        if code == ELOOP { return symbolicLink() }
        return UsersFileError(.inaccessible, "\(path) \(what): \(errorDescription(code)).")
    }

    private func readAll(_ descriptor: Int32, expected: Int) throws(UsersFileError) -> [UInt8] {
        // Read into a buffer of the file's size (a large file is not copied as it grows), then past it
        // in case the file grew meanwhile.
        var bytes = [UInt8](repeating: 0, count: max(expected, 0) + 1)
        var filled = 0
        while true {
            if filled == bytes.count {
                // The file grew while it was read: not past the limit.
                guard filled <= Self.maxFileBytes else {
                    throw UsersFileError(.unsafe, "\(path) grew past \(Self.maxFileBytes >> 20) MiB while it was read.")
                }
                bytes += [UInt8](repeating: 0, count: min(max(bytes.count, 4096), Self.maxFileBytes + 1 - filled))
            }
            let count = bytes[filled...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("cannot be read")
            }
            if count == 0 {
                bytes.removeSubrange(filled...)
                return bytes
            }
            filled += count
        }
    }

    /// Opens and checks the lock file, creating it if needed, never through a link.
    private func openLock() throws(UsersFileError) -> Int32 {
        let lockPath = path + ".lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o600)
        guard lock >= 0 else {
            let code = errno
            let reason = code == ELOOP ? "it is a symbolic link" : errorDescription(code)
            throw UsersFileError(.inaccessible, "\(lockPath) cannot be opened: \(reason).")
        }
        var info = stat()
        guard fstat(lock, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == 0 || info.st_uid == geteuid()
        else {
            close(lock)
            throw UsersFileError(
                .unsafe,
                "\(lockPath) is not a regular file owned by root or the user running this program; remove it.")
        }
        return lock
    }

    /// The file is rewritten by renaming a new one over it, which its writer owns: only its owner (or root,
    /// which gives the new file the old owner) may change it, or a root-owned file in a directory the
    /// invoker may write would become the invoker's.
    private func checkChanger(_ info: stat) throws(UsersFileError) {
        guard geteuid() == 0 || info.st_uid == geteuid() else {
            throw UsersFileError(
                .unsafe,
                "\(path) is owned by uid \(info.st_uid); only its owner or root may change it (uid \(geteuid()) may not)."
            )
        }
    }

    /// Whether a change could be made now — the lock file can be made, and the file (unless `create` and it
    /// is not there yet) passes every check and may be changed by this user — changing nothing: a tool asks
    /// this before it asks for any password, so nobody types three passwords to hear the file is refused.
    public func checkChangeable(create: Bool = false) throws(UsersFileError) {
        close(try openLock())
        var probe = stat()
        if lstat(path, &probe) != 0 && errno == ENOENT {
            guard create else { throw failure("cannot be read") }
            return
        }
        let (descriptor, info) = try openChecked()
        close(descriptor)
        try checkChanger(info)
    }

    /// Applies `change` to the current file under an exclusive lock and replaces the file atomically.
    /// - Parameter create: Start from an empty file if there is none.
    /// - Throws: ``UsersFileError`` from reading, parsing or writing, or what `change` throws; the file
    ///   is then left as it was.
    public func update<Result>(
        create: Bool = false,
        _ change: (inout UsersFile) throws(UsersFileError) -> Result
    ) throws(UsersFileError) -> Result {
        let lock = try openLock()
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw UsersFileError(.inaccessible, "\(path) cannot be locked: \(errorDescription()).")
            }
        }
        defer { flock(lock, LOCK_UN) }

        var file: UsersFile
        var mode: mode_t = 0o600
        var owner: (uid_t, gid_t)?
        var probe = stat()
        if lstat(path, &probe) != 0 && errno == ENOENT {
            guard create else { throw failure("cannot be read") }
            file = UsersFile()
        } else {
            // Content, mode and owner all come from one descriptor.
            let (descriptor, info) = try openChecked()
            defer { close(descriptor) }
            try checkChanger(info)
            file = try UsersFile(parsing: try readAll(descriptor, expected: Int(info.st_size)))
            mode = info.st_mode & 0o7777
            owner = (info.st_uid, info.st_gid)
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
            throw UsersFileError(.inaccessible, "cannot create a temporary file beside \(path): \(errorDescription()).")
        }
        let temporaryPath = string(fromCBuffer: template)
        var renamed = false
        defer {
            close(temporary)
            if !renamed { unlink(temporaryPath) }
        }
        func failure(_ what: String) -> UsersFileError {
            UsersFileError(.inaccessible, "cannot write \(path) (\(what)): \(errorDescription()).")
        }
        guard fchmod(temporary, mode) == 0 else { throw failure("mode") }
        // Root gives the new file the old owner and group; the owner keeps its own uid, and its group where
        // it may (a group it is not in cannot be given).
        if let (uid, gid) = owner, fchown(temporary, uid, gid) != 0, geteuid() == 0 || uid != geteuid() {
            throw failure("owner")
        }
        guard writeAll(temporary, bytes) else { throw failure("write") }
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
