public import Authentication
import FoundationEssentials
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Audit events appended to a file as JSON lines, each chained to the one before, so that an edited,
/// removed or reordered record is found by ``verify(_:)``.
///
/// ```json
/// {"seq":7,"time":"2026-11-30T10:21:23Z","event":"signInFailed","user":"alice","provider":"file",…,"prev":"9f…","hash":"c4…"}
/// ```
///
/// `hash` is the SHA-256 of the line up to (not including) `,"hash":`, which holds `prev`, the hash of
/// the record before (64 zeros for the first). Processes append under the file's lock, reading the last
/// record's hash and number first, so records from several tools at once form one chain.
///
/// The chain shows edits to a log; it cannot stop someone who may write the file from writing a whole
/// new chain, or from cutting records off its end. Send the same events to syslog (``SyslogAuditSink``)
/// or off the machine for that.
///
/// Names no backend has confirmed are written as a keyed hash (`user_digest`), with a key kept beside
/// the log (`<path>.key`, mode 0600), so the digests of one name match across runs.
///
/// Writers take their turn on a lock file of their own beside the log (`<path>.lock`, mode 0600), never on
/// the log itself: a reader of the log (a group it is shared with) cannot hold the writers off.
///
/// Writing never fails a login, and waits at most a second for another process's append: a failure is
/// reported once, through `onFailure`, the event goes to `fallback` (syslog, as the tools set it up), and
/// the next event tries again.
public final class JSONAuditLog: AuditSink {
    public let path: String
    private let directory: StateDirectory
    private let name: String
    private let digester: AuditDigest
    private let onFailure: @Sendable (String) -> Void
    private let fallback: (any AuditSink)?
    private let failing = Locked(false)

    static let genesis = String(repeating: "0", count: 64)

    /// Opens (creating, mode 0700) the log's directory and the digest key.
    /// - Parameters:
    ///   - onFailure: Told once when writing starts failing (and again after it worked since).
    ///   - fallback: Where an event that cannot be written goes instead.
    /// - Throws: ``AuditLogError`` when the directory or key cannot be used safely.
    public init(
        path: String, onFailure: @escaping @Sendable (String) -> Void = { _ in }, fallback: (any AuditSink)? = nil
    ) throws(AuditLogError) {
        guard let slash = path.lastIndex(of: "/"), path.hasPrefix("/"), path.index(after: slash) < path.endIndex else {
            throw AuditLogError(.misnamed, "\(path): the audit log needs an absolute file path")
        }
        self.path = path
        name = String(path[path.index(after: slash)...])
        do throws(StateFileError) {
            directory = try StateDirectory(slash == path.startIndex ? "/" : String(path[..<slash]), creatingWith: 0o700)
            let keyFile = try directory.openFile(name + ".key", creatingWith: 0o600)
            defer { close(keyFile) }
            try StateDirectory.lock(keyFile)
            var key = try StateDirectory.readAll(keyFile, limit: 64)
            if key.isEmpty {
                key = randomBytes(32)
                try StateDirectory.overwrite(keyFile, with: key)
            }
            guard key.count == 32 else { throw StateFileError("\(path).key: is damaged") }
            digester = AuditDigest(key: key)
        } catch {
            throw AuditLogError(.unusable, error.description)
        }
        self.onFailure = onFailure
        self.fallback = fallback
    }

    public func digest(ofUnverifiedName name: String) -> String {
        digester.digest(of: name)
    }

    public func record(_ event: AuditEvent) {
        _ = keep(event)
    }

    /// Appends `event`, or — when it cannot be written — hands it to the fallback: kept if either took it.
    public func keep(_ event: AuditEvent) -> Bool {
        let result = append(event)
        let report: String? = failing.withLock { failing in
            defer { failing = result != nil }
            return failing ? nil : result
        }
        if let report { onFailure("\(path): audit events cannot be written: \(report)") }
        guard result != nil else { return true }
        return fallback?.keep(event) ?? false
    }

    /// Appends one record; the reason when it could not.
    private func append(_ event: AuditEvent) -> String? {
        do throws(StateFileError) {
            // The writers' own lock, which a reader of the log cannot open; a login waits at most a second for
            // another process's append — even once cancelled: a login a client ended by going away (a guess
            // already counted) is audited all the same.
            let lock = try directory.openFile(name + ".lock", creatingWith: 0o600)
            defer { close(lock) }
            // Only writers may open it: one made readable by others is made private again.
            var info = stat()
            if fstat(lock, &info) == 0, info.st_mode & 0o077 != 0 { fchmod(lock, 0o600) }
            try StateDirectory.lock(lock, timeout: .seconds(1), whateverTheTask: true)
            let file = try directory.openFile(name, creatingWith: 0o600)
            defer { close(file) }
            let (sequence, previous) = try Self.lastLink(file)
            var line = "{\"seq\":\(sequence + 1)"
            for (key, value) in AuditRecord.fields(event) {
                line += ",\"\(key)\":" + (key == "pid" ? value : AuditRecord.json(value))
            }
            line += ",\"prev\":\"\(previous)\""
            let hash = SHA256.hash(Array(line.utf8)).hexadecimal
            line += ",\"hash\":\"\(hash)\"}\n"
            guard lseek(file, 0, SEEK_END) >= 0, writeAll(file, Array(line.utf8)) else {
                return errorDescription()
            }
            return nil
        } catch {
            return error.description
        }
    }

    /// The number and hash of the file's last record (0 and zeros for an empty file), read from its end
    /// in blocks until a line break.
    private static func lastLink(_ file: Int32) throws(StateFileError) -> (Int, String) {
        let end = Int(lseek(file, 0, SEEK_END))
        guard end > 0 else { return (0, genesis) }
        var tail: [UInt8] = []
        var start = end
        repeat {
            let size = min(start, 4096)
            start -= size
            var block = [UInt8](repeating: 0, count: size)
            let count = block.withUnsafeMutableBytes { pread(file, $0.baseAddress, size, off_t(start)) }
            guard count == size else { throw StateFileError("cannot be read: \(errorDescription())") }
            tail = block + tail
        } while start > 0 && tail.dropLast().firstIndex(of: 0x0A) == nil && tail.count < 1 << 20
        let lines = tail.split(separator: 0x0A)
        guard let last = lines.last, let link = Self.link(of: Array(last)) else {
            throw StateFileError("its last record is damaged; verify it, then move it aside")
        }
        return (link.sequence, link.hash)
    }

    struct Link {
        var sequence: Int
        var previous: String
        var hash: String
        /// The bytes the hash covers.
        var covered: ArraySlice<UInt8>
    }

    /// The chain fields of a line as this log writes it — `{"seq":N,` … `,"prev":"…","hash":"…"}` —
    /// and the bytes `hash` covers. The fields are read at their places, so no other spelling of them
    /// (a JSON parser would accept many) passes.
    static func link(of line: [UInt8]) -> Link? {
        let hashMarker = Array(",\"hash\":\"".utf8)
        let previousMarker = Array(",\"prev\":\"".utf8)
        let start = Array("{\"seq\":".utf8)
        // …,"prev":"<64 hex>","hash":"<64 hex>"}
        let hashStart = line.count - 66
        let previousStart = hashStart - hashMarker.count - 1 - 64
        guard previousStart - previousMarker.count > start.count, line.last == UInt8(ascii: "}"),
            line[line.count - 2] == UInt8(ascii: "\""),
            Array(line[(hashStart - hashMarker.count)..<hashStart]) == hashMarker,
            line[hashStart - hashMarker.count - 1] == UInt8(ascii: "\""),
            Array(line[(previousStart - previousMarker.count)..<previousStart]) == previousMarker,
            Array(line[..<start.count]) == start
        else { return nil }
        let hash = line[hashStart..<(line.count - 2)]
        let previous = line[previousStart..<(previousStart + 64)]
        let digits = line[start.count...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard isHexadecimal(hash), isHexadecimal(previous), (1...18).contains(digits.count),
            line[start.count + digits.count] == UInt8(ascii: ","),
            let sequence = Int(String(decoding: digits, as: UTF8.self))
        else { return nil }
        return Link(
            sequence: sequence, previous: String(decoding: previous, as: UTF8.self),
            hash: String(decoding: hash, as: UTF8.self), covered: line[..<(hashStart - hashMarker.count)])
    }

    private static func isHexadecimal(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
        }
    }

}

extension JSONAuditLog {
    /// What ``verify(_:)`` found.
    public struct Verification: Sendable, Hashable, CustomStringConvertible {
        /// How many records were checked and found sound, before the first problem.
        public var verified: Int
        /// The first problem: its line number and what is wrong; `nil` when the whole chain holds.
        public var problem: (line: Int, reason: String)?

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.verified == rhs.verified && lhs.problem?.line == rhs.problem?.line
                && lhs.problem?.reason == rhs.problem?.reason
        }
        public func hash(into hasher: inout Hasher) {
            hasher.combine(verified)
            hasher.combine(problem?.line)
        }

        public var description: String {
            guard let problem else { return "\(verified) records verified; the chain is intact." }
            return "line \(problem.line): \(problem.reason) (\(verified) records before it verified)"
        }
    }

    /// Checks the chain of the log at `path`: each record's hash, each link to the record before, and the
    /// numbering; reports the first record that was edited, removed or moved.
    /// - Throws: ``AuditLogError`` when the file cannot be read.
    public static func verify(_ path: String) throws(AuditLogError) -> Verification {
        let bytes: [UInt8]
        switch readPrivateFile(path, maxBytes: 1 << 30) {
        case .success(let read): bytes = read
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
            throw AuditLogError(.unusable, "\(path): \(why)")
        }
        var previous: Link?
        var verified = 0
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            func problem(_ reason: String) -> Verification {
                Verification(verified: verified, problem: (number, reason))
            }
            guard let link = link(of: Array(raw)) else { return problem("not a chained record (damaged or inserted)") }
            guard SHA256.hash(link.covered).hexadecimal == link.hash else {
                return problem("record \(link.sequence) was edited: its hash does not match its contents")
            }
            if let previous {
                guard link.previous == previous.hash else {
                    if link.sequence > previous.sequence + 1 {
                        return problem(
                            "records \(previous.sequence + 1)…\(link.sequence - 1) were removed before record \(link.sequence)"
                        )
                    }
                    return problem(
                        "record \(link.sequence) is out of order: it does not follow record \(previous.sequence)")
                }
                guard link.sequence == previous.sequence + 1 else {
                    return problem("record \(link.sequence) is numbered out of sequence after \(previous.sequence)")
                }
            } else if link.previous != genesis || link.sequence != 1 {
                // A log that starts mid-chain (rotated, or its start cut off) is reported, not trusted.
                return problem(
                    "the log does not start at record 1 (record \(link.sequence)); earlier records are missing")
            }
            previous = link
            verified += 1
        }
        return Verification(verified: verified, problem: nil)
    }
}

/// An audit log that cannot be used: named wrongly (``Code/misnamed``), or its directory, key or file
/// unusable (``Code/unusable``). Equal when the codes are.
public struct AuditLogError: CodedError {
    /// What went wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<AuditLogError>

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// A log that cannot be used (``Code/unusable``), as this type was made before it had codes.
    public init(_ description: String) {
        self.init(.unusable, description)
    }
}

extension ErrorCode where Domain == AuditLogError {
    /// The log is not named by an absolute file path.
    public static var misnamed: Self { Self("misnamed") }
    /// The log's directory, key or file cannot be opened, read or written safely.
    public static var unusable: Self { Self("unusable") }
}
