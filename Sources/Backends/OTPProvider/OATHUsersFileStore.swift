public import Authentication
import COathLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Changes pam_oath's users file for enrolment: adds and deletes entries, written whole (a new file,
/// synced, renamed over the old one) under the locks liboath takes, so a login updating the file at the
/// same time is never lost: `FILE.lock`, created exclusively and removed afterwards, as Debian 12's
/// liboath 2.6.7 does (it refuses to update while that file exists), and an open-file-description write
/// lock on the file itself, checked to still be the file in place, as later liboath versions do.
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
        var bytes = randomBytes(20)
        return Secret(wiping: &bytes)
    }

    /// Adds `username` with `secret`; refuses a user already there. SHA-256 and SHA-512 make this package's
    /// extension entries (time-based only), which pam_oath skips.
    public func add(
        _ username: String,
        kind: Kind,
        digits: Int,
        algorithm: OneTimeCode.Algorithm = .sha1,
        secret: Secret,
        createFile: Bool
    ) throws(OATHFileError) {
        try Self.validateName(username)
        guard (6...8).contains(digits) else { throw OATHFileError("codes have 6, 7 or 8 digits", refusal: true) }
        var type: String
        switch kind {
        case .totp(let step):
            guard step == 30 || step == 60 else {
                throw OATHFileError("pam_oath's steps are 30 or 60 seconds", refusal: true)
            }
            type = "HOTP/T\(step)/\(digits)"
        case .hotp:
            guard algorithm == .sha1 else { throw OATHFileError("counter-based entries are SHA-1 only", refusal: true) }
            type = "HOTP/E/\(digits)"
        }
        switch algorithm {
        case .sha1: break
        case .sha256: type += "/SHA256"
        case .sha512: type += "/SHA512"
        }
        try update(create: createFile) { (lines: inout [[UInt8]]) throws(OATHFileError) in
            guard
                !OATHUsersFile.parse(Array(lines.joined(separator: [0x0A]))).contains(where: { $0.username == username }
                )
            else {
                throw OATHFileError(
                    "\(TextSafety.escaped(username)) has an entry already; delete it first", refusal: true)
            }
            var line = Array("\(type)\t\(username)\t-\t".utf8)
            secret.withUnsafeBytes { line += Array($0.hexadecimal.utf8) }
            lines.append(line)
        }
    }

    /// A name as every tool of the package accepts it (``Username/validate(_:)``), and one field of the
    /// file: no blank of any kind (the file's separators) and no leading `#` (a comment).
    public static func validateName(_ username: String) throws(OATHFileError) {
        do throws(AuthError) {
            _ = try Username.validate(username)
        } catch {
            throw OATHFileError("\(TextSafety.escaped(username).debugDescription): \(error.description)", refusal: true)
        }
        guard !username.unicodeScalars.contains(where: \.properties.isWhitespace), !username.hasPrefix("#") else {
            throw OATHFileError(
                "\(TextSafety.escaped(username).debugDescription): a name in the one-time code file has no blanks and does not start with #",
                refusal: true)
        }
    }

    /// Runs `body` — a whole check: the file read, the code compared, the accepted counter written back —
    /// holding a lock that every process of this package takes for every check of this file, so that
    /// one code is accepted at most once, however many logins present it at the same instant. (liboath
    /// reads the file before it takes its own lock; pam_oath does nothing more.) The lock is `flock` on
    /// the file in place, which no liboath lock conflicts with; a check writes a new file and renames it
    /// over the old one, so a waiter that then holds the old file's lock takes the new one's instead.
    func exclusively<T>(_ body: () throws(OATHFileError) -> T) throws(OATHFileError) -> T {
        for _ in 0..<20 {
            let file = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            guard file >= 0 else { throw OATHFileError("\(path) cannot be opened: \(errorDescription())") }
            defer { close(file) }
            do {
                try StateDirectory.lock(file)
            } catch {
                throw OATHFileError("\(path) \(error)")
            }
            var held = stat()
            var current = stat()
            guard fstat(file, &held) == 0, lstat(path, &current) == 0, held.st_ino == current.st_ino,
                held.st_dev == current.st_dev
            else { continue }
            return try body()
        }
        throw OATHFileError("\(path) kept being replaced while it was locked")
    }

    /// Checks `code` against `username`'s SHA-256 or SHA-512 entry (this package's extension, which
    /// liboath does not read) as liboath checks its own: within `window` steps of now, and after the last
    /// accepted step, which is written back (columns 5 to 7, as liboath writes them) under the file's lock.
    /// - Returns: whether the code is accepted.
    func checkExtended(_ username: String, code: String, step: Int, window: Int, algorithm: OneTimeCode.Algorithm)
        throws(OATHFileError) -> Bool
    {
        var accepted = false
        try update(create: false) { (lines: inout [[UInt8]]) throws(OATHFileError) in
            guard OneTimeCode.initialised,
                let index = lines.firstIndex(where: { OATHUsersFile.parse($0).first?.username == username })
            else { return }
            var fields = lines[index].split(whereSeparator: { $0 == 0x20 || $0 == 0x09 }).map { Array($0) }
            guard fields.count >= 4, fields[2] == [UInt8(ascii: "-")] else { return }
            var secret = [UInt8](repeating: 0, count: fields[3].count / 2 + 1)
            var length = secret.count
            defer { secret.withUnsafeMutableBytes { Secret.wipe($0) } }
            let decoded = String(decoding: fields[3], as: UTF8.self).withCString { hex in
                secret.withUnsafeMutableBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { gk_oath_hex2bin(hex, $0.baseAddress, &length) }
                }
            }
            guard decoded == OATH_OK.rawValue else {
                throw OATHFileError("\(path): the secret of an entry is not hexadecimal")
            }
            var position: Int32 = 0
            var counter: UInt64 = 0
            let status = secret.withUnsafeBufferPointer { key in
                key.withMemoryRebound(to: CChar.self) {
                    gk_oath_totp_validate4(
                        $0.baseAddress, length, time(nil), UInt32(step), 0, window, &position, &counter,
                        algorithm.flags, code)
                }
            }
            guard status >= 0 else { return }
            // A step at or before the last accepted one is a replay.
            if fields.count >= 5, let last = UInt64(String(decoding: fields[4], as: UTF8.self)), counter <= last {
                return
            }
            var stamp = [CChar](repeating: 0, count: 32)
            var now = time(nil)
            var parts = tm()
            localtime_r(&now, &parts)
            let count = strftime(&stamp, stamp.count, "%Y-%m-%dT%H:%M:%SL", &parts)
            fields =
                Array(fields.prefix(4)) + [Array(String(counter).utf8), Array(code.utf8)]
                + [stamp[..<count].map { UInt8(bitPattern: $0) }]
            lines[index] = Array(fields.joined(separator: [0x09]))
            accepted = true
        }
        return accepted
    }

    /// Deletes `username`'s entries.
    public func delete(_ username: String) throws(OATHFileError) {
        try update(create: false) { (lines: inout [[UInt8]]) throws(OATHFileError) in
            let before = lines.count
            lines.removeAll { line in OATHUsersFile.parse(line).first?.username == username }
            guard lines.count < before else {
                throw OATHFileError("\(TextSafety.escaped(username)) has no entry", refusal: true)
            }
        }
    }

    /// The entries, without their secrets.
    public func list() throws(OATHFileError) -> [OATHUsersFile.Entry] {
        switch readPrivateFile(path) {
        case .success(let bytes): return OATHUsersFile.parse(bytes)
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)): throw OATHFileError("\(path) \(why)")
        }
    }

    func update(create: Bool, _ change: (inout [[UInt8]]) throws(OATHFileError) -> Void) throws(OATHFileError) {
        if create, access(path, F_OK) != 0 {
            let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard made >= 0 || errno == EEXIST else {
                throw OATHFileError("\(path) cannot be created: \(errorDescription())")
            }
            if made >= 0 { close(made) }
        }
        // liboath 2.6.7's lock: FILE.lock, made exclusively; waited for a few seconds if another holds it.
        let lockPath = path + ".lock"
        var lockFile: Int32 = -1
        for _ in 0..<500 {
            lockFile = open(lockPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if lockFile >= 0 || errno != EEXIST { break }
            usleep(10_000)
        }
        guard lockFile >= 0 else {
            throw OATHFileError(
                "\(lockPath) is held (remove it if no login or enrolment is updating the file): \(errorDescription())")
        }
        defer {
            unlink(lockPath)
            close(lockFile)
        }
        // Later liboath's lock: the file in place, retrying if it was replaced meanwhile.
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

/// The users file cannot be changed as asked: the file's fault (``Code/unusable``), or a refusal
/// (``Code/refused``) of a change that does not fit it — the user there already or not there, a name or
/// an entry pam_oath cannot read. Equal when the codes are.
public struct OATHFileError: CodedError {
    /// What went wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<OATHFileError>

    public let code: Code
    public let description: String

    /// Whether the change was refused, the file being usable.
    public var isRefusal: Bool { code == .refused }

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// The file's fault, or with `refusal` a change refused.
    public init(_ description: String, refusal: Bool = false) {
        self.init(refusal ? .refused : .unusable, description)
    }
}

extension ErrorCode where Domain == OATHFileError {
    /// The file cannot be read, locked or written, or is refused as unsafe.
    public static var unusable: Self { Self("unusable") }
    /// The change does not fit the file: the user there already or not there, a name or an entry pam_oath
    /// cannot read.
    public static var refused: Self { Self("refused") }
}
