public import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Changes pam_oath's users file for enrolment: adds and deletes entries, written whole (a new file,
/// synced, renamed over the old one) under the lock liboath takes — an open-file-description write lock
/// (`F_OFD_SETLKW`) on the file itself, checked to still be the file in place once held — so a login
/// updating the file at the same time is never lost. No lock file is left beside it (liboath 2.6.7 as
/// patched by Debian refuses to update a users file while a `FILE.lock` exists).
public struct OATHUsersFileStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// What kind of code an entry makes.
    public enum Kind: Sendable, Hashable {
        case totp(step: Int)
        case hotp
    }

    /// A new entry's secret: 20 random bytes from the kernel (160 bits, RFC 4226's recommendation).
    public static func newSecret() -> Secret {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<20).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Secret(wiping: &bytes)
    }

    /// Adds `username` with `secret`; refuses a user already there.
    public func add(_ username: String, kind: Kind, digits: Int, secret: Secret, createFile: Bool) throws(OATHFileError)
    {
        guard (6...8).contains(digits) else { throw OATHFileError("codes have 6, 7 or 8 digits") }
        let type: String
        switch kind {
        case .totp(let step):
            guard step == 30 || step == 60 else { throw OATHFileError("pam_oath's steps are 30 or 60 seconds") }
            type = "HOTP/T\(step)/\(digits)"
        case .hotp: type = "HOTP/E/\(digits)"
        }
        try update(create: createFile) { (lines: inout [[UInt8]]) throws(OATHFileError) in
            guard
                !OATHUsersFile.parse(Array(lines.joined(separator: [0x0A]))).contains(where: { $0.username == username }
                )
            else { throw OATHFileError("\(TextSafety.escaped(username)) has an entry already; delete it first") }
            var line = Array("\(type)\t\(username)\t-\t".utf8)
            secret.withUnsafeBytes { line += Array($0.hexadecimal.utf8) }
            lines.append(line)
        }
    }

    /// Deletes `username`'s entries.
    public func delete(_ username: String) throws(OATHFileError) {
        try update(create: false) { (lines: inout [[UInt8]]) throws(OATHFileError) in
            let before = lines.count
            lines.removeAll { line in OATHUsersFile.parse(line).first?.username == username }
            guard lines.count < before else { throw OATHFileError("\(TextSafety.escaped(username)) has no entry") }
        }
    }

    /// The entries, without their secrets.
    public func list() throws(OATHFileError) -> [OATHUsersFile.Entry] {
        switch readPrivateFile(path) {
        case .success(let bytes): return OATHUsersFile.parse(bytes)
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)): throw OATHFileError("\(path) \(why)")
        }
    }

    private func update(create: Bool, _ change: (inout [[UInt8]]) throws(OATHFileError) -> Void) throws(OATHFileError) {
        if create, access(path, F_OK) != 0 {
            let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard made >= 0 || errno == EEXIST else {
                throw OATHFileError("\(path) cannot be created: \(errorDescription())")
            }
            if made >= 0 { close(made) }
        }
        // Lock the file in place, as liboath does, retrying if it was replaced meanwhile.
        var file: Int32 = -1
        for _ in 0..<5 {
            file = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
            guard file >= 0 else { throw OATHFileError("\(path) cannot be opened: \(errorDescription())") }
            try Self.lock(file)
            var held = stat()
            var current = stat()
            if fstat(file, &held) == 0, lstat(path, &current) == 0, held.st_ino == current.st_ino { break }
            close(file)
            file = -1
        }
        guard file >= 0 else { throw OATHFileError("\(path) kept being replaced while it was locked") }
        defer { close(file) }
        var bytes: [UInt8]
        switch readPrivateFile(path) {
        case .success(let read): bytes = read
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)): throw OATHFileError("\(path) \(why)")
        }
        var lines = bytes.split(separator: 0x0A).map(Array.init)
        defer {
            for index in lines.indices { lines[index].withUnsafeMutableBytes { Secret.wipe($0) } }
            bytes.withUnsafeMutableBytes { Secret.wipe($0) }
        }
        try change(&lines)
        var output: [UInt8] = lines.flatMap { line -> [UInt8] in line + [0x0A] }
        defer { output.withUnsafeMutableBytes { Secret.wipe($0) } }
        let temporary = path + ".new.\(getpid())"
        unlink(temporary)
        let fresh = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fresh >= 0 else { throw OATHFileError("\(temporary) cannot be created: \(errorDescription())") }
        let written = writeAll(fresh, output) && fsync(fresh) == 0
        close(fresh)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OATHFileError("\(path) cannot be written: \(errorDescription())")
        }
    }

    /// Linux's `F_OFD_SETLKW` (which Glibc's Swift module leaves out): liboath's kind of lock.
    private static let openFileDescriptionLockWait: Int32 = 38

    private static func lock(_ file: Int32) throws(OATHFileError) {
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        while fcntl(file, Self.openFileDescriptionLockWait, &request) != 0 {
            guard errno == EINTR else { throw OATHFileError("cannot be locked: \(errorDescription())") }
        }
    }
}

/// The users file cannot be changed as asked.
public struct OATHFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
