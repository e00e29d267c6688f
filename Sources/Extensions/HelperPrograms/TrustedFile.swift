import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The checks a file that runs in or for the host must pass: every directory from `/` to it owned by root
/// or the running user and writable by nobody else; the file itself a regular file with the same owners,
/// that group and others cannot write.
enum TrustedFile {
    /// What is wrong with a file: its path (escaped) and why.
    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ path: String, _ reason: String) { description = "\(TextSafety.escaped(path)): \(reason)" }
    }

    /// What is wrong with the file at `path` (absolute) and the directories above it, or `nil`; the
    /// resolved path when all is well.
    static func check(_ path: String, executable: Bool) -> Result<String, Problem> {
        guard path.hasPrefix("/") else { return .failure(Problem(path, "is not an absolute path")) }
        guard let pointer = realpath(path, nil) else {
            return .failure(Problem(path, "cannot be found: \(errorDescription())"))
        }
        let resolved = String(cString: pointer)
        free(pointer)
        if let problem = untrustedDirectory(above: resolved) { return .failure(Problem(path, problem)) }
        var info = stat()
        guard lstat(resolved, &info) == 0 else { return .failure(Problem(path, "cannot be examined")) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(Problem(path, "is not a regular file")) }
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            return .failure(
                Problem(path, "is owned by uid \(info.st_uid), neither root nor the user running this program"))
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return .failure(Problem(path, "may be written by group or others; make it private with chmod go-w"))
        }
        if executable && info.st_mode & S_IXUSR == 0 { return .failure(Problem(path, "is not executable")) }
        return .success(resolved)
    }
}
