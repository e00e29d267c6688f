#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a state directory or one of its files was not used.
package struct StateFileError: Error, Equatable, CustomStringConvertible {
    package let description: String
    /// The file does not exist (only for opens that do not create).
    package let isMissing: Bool
    /// The file holds secrets and others may read it (only for opens that ask for a secret file).
    package let isExposed: Bool

    package init(_ description: String, isMissing: Bool = false, isExposed: Bool = false) {
        self.description = description
        self.isMissing = isMissing
        self.isExposed = isExposed
    }
}

/// A directory where a tool keeps state that decides who gets in (failed logins, remembered logins),
/// opened once and used through its descriptor, so it cannot be swapped while in use.
///
/// Every directory on its path must be owned by root or the effective user and be writable by nobody
/// else, unless it is sticky (as `/tmp` is); links are not followed. Files are opened relative to the
/// descriptor without following links, and must be regular files owned by root, the effective user or
/// an owner the caller allows, writable by no other user.
package final class StateDirectory: Sendable {
    package let path: String
    package let descriptor: Int32

    /// Opens `path` (each directory as an `O_PATH` descriptor: searching it is enough), creating what is
    /// missing of it: the last directory with `mode`, those above it `0755` (searchable, written by their
    /// owner alone), so that a private directory never makes its parent private too — `/run/gatekeeper`,
    /// made by a tool for its `cache`, also holds gatekeeperd's socket, which every user must reach.
    /// `mode` `nil` creates nothing: a missing directory is an error whose ``StateFileError/isMissing`` is set
    /// (a reader of the state has nothing to read, and leaves no directory behind).
    package init(_ path: String, creatingWith mode: UInt32?) throws(StateFileError) {
        guard path.hasPrefix("/") else { throw StateFileError("\(path): not an absolute path") }
        let components = path.split(separator: "/").map(String.init)
        guard !components.contains("..") else { throw StateFileError("\(path): contains ..") }
        var current = open("/", openPathOnly | O_DIRECTORY | O_CLOEXEC)
        guard current >= 0 else { throw StateFileError("/: cannot be opened: \(errorDescription())") }
        var walked = ""
        for (index, component) in components.enumerated() where component != "." {
            walked += "/" + component
            let isLast = index == components.count - 1
            var next = openat(current, component, openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT {
                guard let mode else {
                    close(current)
                    throw StateFileError("\(walked): does not exist", isMissing: true)
                }
                if mkdirat(current, component, isLast ? mode : 0o755) != 0 && errno != EEXIST {
                    let code = errno
                    close(current)
                    throw StateFileError("\(walked): cannot be created: \(errorDescription(code))")
                }
                next = openat(current, component, openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let code = errno
            close(current)
            guard next >= 0 else {
                throw StateFileError(
                    code == ELOOP || code == ENOTDIR
                        ? "\(walked): is a symbolic link or not a directory"
                        : "\(walked): cannot be opened: \(errorDescription(code))")
            }
            current = next
            var info = stat()
            guard fstat(current, &info) == 0 else {
                close(current)
                throw StateFileError("\(walked): cannot be examined")
            }
            let sticky = info.st_mode & S_ISVTX != 0 && !isLast
            guard info.st_uid == 0 || info.st_uid == geteuid() else {
                close(current)
                throw StateFileError("\(walked): is owned by uid \(info.st_uid), neither root nor this user")
            }
            guard sticky || info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
                close(current)
                throw StateFileError("\(walked): may be written by group or others; make it private with chmod go-w")
            }
        }
        self.path = path
        self.descriptor = current
    }

    deinit { close(descriptor) }

    /// Opens `name` in the directory for reading and writing.
    /// - Parameters:
    ///   - creatingWith: Creates the file with this mode when it is missing; `nil` to fail instead.
    ///   - owners: Owners accepted besides root and the effective user.
    ///   - secret: The file holds secrets (password verifiers): refused, ``StateFileError/isExposed``, when
    ///     others or a group other than root's may read it.
    package func openFile(
        _ name: String, creatingWith mode: UInt32?, owners: Set<UInt32> = [], secret: Bool = false
    ) throws(StateFileError) -> Int32 {
        guard Self.isPlainName(name) else { throw StateFileError("not a plain file name") }
        var flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
        if mode != nil { flags |= O_CREAT }
        let file = openat(descriptor, name, flags, mode ?? 0)
        guard file >= 0 else {
            let code = errno
            throw StateFileError(
                code == ELOOP ? "\(path)/\(name): is a symbolic link" : "\(path)/\(name): \(errorDescription(code))",
                isMissing: code == ENOENT)
        }
        var info = stat()
        guard fstat(file, &info) == 0 else {
            close(file)
            throw StateFileError("\(path)/\(name): cannot be examined")
        }
        let problem: String? =
            if info.st_mode & S_IFMT != S_IFREG {
                "is not a regular file"
            } else if info.st_uid != 0 && info.st_uid != geteuid() && !owners.contains(info.st_uid) {
                "is owned by uid \(info.st_uid)"
            } else if info.st_mode & S_IWOTH != 0 || (info.st_mode & S_IWGRP != 0 && info.st_gid != 0) {
                "may be written by others"
            } else {
                nil
            }
        if let problem {
            close(file)
            throw StateFileError("\(path)/\(name): \(problem)")
        }
        // As a bind password's file and ssh's private keys: not by others, nor by a group other than root's.
        if secret, let exposure = secretExposure(info, file) {
            close(file)
            throw StateFileError("\(path)/\(name): \(exposure)", isExposed: true)
        }
        return file
    }

    /// Takes `file`'s exclusive lock, waiting at most `timeout`; a lock held longer (by a hung or hostile
    /// process) is an error, never a wait without end. A wait on behalf of a task ends when the task is
    /// cancelled (the thread it holds, a one-shot tool's only one, is free again at once) — unless
    /// `whateverTheTask`: a record that must be written once its event happened (an audit record of a login a
    /// client cancelled by going away) waits its `timeout` out.
    package static func lock(_ file: Int32, timeout: Duration = .seconds(5), whateverTheTask: Bool = false)
        throws(StateFileError)
    {
        var waited = Duration.zero
        while flock(file, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw StateFileError("cannot be locked: \(errorDescription())")
            }
            guard waited < timeout else { throw StateFileError("is locked by another process for too long") }
            guard whateverTheTask || !Task.isCancelled else {
                throw StateFileError("was not locked: the login was cancelled")
            }
            usleep(2_000)
            waited += .milliseconds(2)
        }
    }

    /// All of `file`'s bytes, at most `limit`.
    package static func readAll(_ file: Int32, limit: Int) throws(StateFileError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        guard lseek(file, 0, SEEK_SET) == 0 else { throw StateFileError("cannot be read: \(errorDescription())") }
        while bytes.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress, min($0.count, limit - bytes.count)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StateFileError("cannot be read: \(errorDescription())")
            }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// Replaces `file`'s contents with `bytes`, in place (as pam_faillock does, under its lock).
    package static func overwrite(_ file: Int32, with bytes: [UInt8]) throws(StateFileError) {
        guard lseek(file, 0, SEEK_SET) == 0, writeAll(file, bytes), ftruncate(file, off_t(bytes.count)) == 0 else {
            throw StateFileError("cannot be written: \(errorDescription())")
        }
    }

    /// Writes `name` whole or not at all: a temporary file, renamed over the old one — synced first when
    /// `durable` (state that must survive a crash; a cache need not, as a torn file reads as damaged).
    package func replace(_ name: String, with bytes: [UInt8], mode: UInt32 = 0o600, durable: Bool = true)
        throws(StateFileError)
    {
        guard Self.isPlainName(name) else { throw StateFileError("not a plain file name") }
        var random = SystemRandomNumberGenerator()
        let temporary = ".\(name).\(UInt32.random(in: .min ... .max, using: &random)).tmp"
        let file = openat(descriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard file >= 0 else { throw StateFileError("\(path)/\(name): cannot be written: \(errorDescription())") }
        let written = writeAll(file, bytes) && (!durable || fsync(file) == 0)
        close(file)
        guard written, renameat(descriptor, temporary, descriptor, name) == 0 else {
            let code = errno
            unlinkat(descriptor, temporary, 0)
            throw StateFileError("\(path)/\(name): cannot be written: \(errorDescription(code))")
        }
    }

    /// Removes `name`, if it is there.
    package func remove(_ name: String) {
        guard Self.isPlainName(name) else { return }
        unlinkat(descriptor, name, 0)
    }

    /// The names in the directory, without `.` and `..`.
    package func names() -> [String] {
        let copy = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let stream = fdopendir(copy) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A name that stays inside the directory: not empty, no `/`, not `.` or `..`, at most 255 bytes.
    package static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains(0) && name.utf8.count <= 255
    }
}

/// Linux's `O_PATH` (which Glibc's Swift module leaves out): a descriptor that names a directory to search
/// and examine, without the right to read it.
private let openPathOnly: Int32 = 0o10_000_000
