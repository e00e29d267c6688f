import CProcessSpawn

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a file that configures security was not read.
package enum PrivateFileProblem: Error, Equatable {
    /// It could not be opened or read (`errno` text).
    case inaccessible(String)
    /// A symbolic link, not a regular file, owned by someone else, writable by group or others, or too big.
    case unsafe(String)
}

/// Reads a file that decides who gets in (a configuration, like sudoers): opened once without following
/// a link at its last component, and checked on that descriptor — a regular file, owned by root or the
/// effective user, that group and others cannot write, at most `maxBytes`.
package func readPrivateFile(_ path: String, maxBytes: Int = 1 << 20) -> Result<[UInt8], PrivateFileProblem> {
    readPrivateFileAndOwner(path, maxBytes: maxBytes).map(\.bytes)
}

/// ``readPrivateFile(_:maxBytes:)`` for a file that holds a secret (a client secret, a bind password): also
/// refused when others may read it, as ssh refuses a private key others can read.
package func readSecretFile(_ path: String, maxBytes: Int = 1 << 20) -> Result<[UInt8], PrivateFileProblem> {
    readPrivateFileAndOwner(path, maxBytes: maxBytes, secret: true).map(\.bytes)
}

/// ``readPrivateFile(_:maxBytes:)``, with the file's owner as `fstat` of the descriptor read said.
package func readPrivateFileAndOwner(_ path: String, maxBytes: Int = 1 << 20, secret: Bool = false)
    -> Result<(bytes: [UInt8], owner: UInt32), PrivateFileProblem>
{
    let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    guard descriptor >= 0 else {
        let code = errno
        return .failure(
            code == ELOOP
                ? .unsafe("is a symbolic link, which is not followed; name the file it points to")
                : .inaccessible("cannot be opened: \(errorDescription(code))"))
    }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return .failure(.inaccessible("cannot be examined")) }
    guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.unsafe("is not a regular file")) }
    guard info.st_uid == 0 || info.st_uid == geteuid() else {
        return .failure(.unsafe("is owned by uid \(info.st_uid), neither root nor the user running this program"))
    }
    guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
        return .failure(.unsafe("may be written by group or others; make it private with chmod go-w"))
    }
    if secret, let exposure = secretExposure(info, descriptor) { return .failure(.unsafe(exposure)) }
    guard info.st_size <= maxBytes else { return .failure(.unsafe("is larger than \(maxBytes) bytes")) }
    var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
    var filled = 0
    while filled < bytes.count {
        let count = bytes[filled...].withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            return .failure(.inaccessible("cannot be read: \(errorDescription())"))
        }
        if count == 0 { break }
        filled += count
    }
    guard filled <= maxBytes else { return .failure(.unsafe("grew past \(maxBytes) bytes while it was read")) }
    return .success((Array(bytes[..<filled]), info.st_uid))
}

/// What is wrong with the directories above `resolved` (an absolute path without symbolic links), or
/// `nil`: each, from `/` down, must be owned by root or the user running this program and writable by
/// neither group nor others — else someone else could put another file in the place of one that was
/// checked. The rule for plugins, helper programs and configuration files alike.
package func untrustedDirectory(above resolved: String) -> String? {
    var directories = ["/"]
    var directory = ""
    for component in resolved.split(separator: "/").dropLast() {
        directory += "/" + component
        directories.append(directory)
    }
    for directory in directories {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return "\(directory) cannot be examined" }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            return "the directory \(directory) is owned by uid \(info.st_uid)"
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return "the directory \(directory) may be written by group or others"
        }
    }
    return nil
}

/// `path` with every symbolic link resolved, and made absolute; `nil` when it cannot be.
package func resolvedPath(_ path: String) -> String? {
    guard let pointer = realpath(path, nil) else { return nil }
    defer { free(pointer) }
    return String(cString: pointer)
}

/// A directory for scratch files that no one but this user (or root) may write, up to `/`, so that
/// configuration, PAM service and plugin files put there pass ``untrustedDirectory(above:)``: `/run` for
/// root, the private runtime directory or the home directory otherwise, `/tmp` only when there is none.
/// For tests and benchmarks.
package let privateScratchBase: String = {
    let uid = getuid()
    var candidates = uid == 0 ? ["/run"] : []
    candidates.append("/run/user/\(uid)")
    if let home = getenv("HOME") { candidates.append(String(cString: home)) }
    for candidate in candidates {
        var info = stat()
        if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == uid,
            info.st_mode & (S_IWGRP | S_IWOTH) == 0
        {
            return candidate
        }
    }
    return "/tmp"
}()

/// Why a file that holds a secret (a bind password, the offline cache's verifiers), open on `descriptor` and
/// described by `info` (its `fstat`), may be read by others, or `nil`: as ssh refuses a private key, readable
/// by others, by a group other than root's, or through an access ACL beyond its mode (`setfacl -m u:NAME:r`,
/// which leaves the mode looking private). The one rule for every secret file this package reads.
func secretExposure(_ info: stat, _ descriptor: Int32) -> String? {
    if info.st_mode & S_IROTH != 0 || (info.st_mode & S_IRGRP != 0 && info.st_gid != 0) {
        return "holds a secret and may be read by others; make it private with chmod go-r"
    }
    if gk_has_access_acl(descriptor) != 0 {
        return "holds a secret and has an access ACL, which may let others read it; remove it with setfacl -b"
    }
    return nil
}
