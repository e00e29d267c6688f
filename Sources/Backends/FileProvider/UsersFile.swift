public import Authentication
public import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// An htpasswd-compatible users file: lines `user:hash`, optionally followed by `:groups:display name`
/// (groups comma-separated). `#` comments and blank lines are kept as they are; CRLF line ends and a
/// UTF-8 byte-order mark are accepted. Apache's tools ignore the extra fields, so one file serves both.
public struct UsersFile: Sendable {
    /// One account.
    public struct Entry: Hashable, Sendable {
        public var username: String
        public var password: Password
        public var groups: [String]
        public var displayName: String?
        /// The line it was read from (1-based), or `nil` for an entry added since.
        public var line: Int?

        public init(username: String, password: Password, groups: [String] = [], displayName: String? = nil) {
            self.username = username
            self.password = password
            self.groups = groups
            self.displayName = displayName
        }
    }

    /// What the second field says.
    public enum Password: Hashable, Sendable {
        case hash(PasswordHash)
        /// `+` before the hash: the password has expired and must be changed at the next login (as
        /// `passwd -e` marks a system account). Apache, which does not know the mark, refuses the entry.
        case expired(PasswordHash)
        /// `!` or `*` before the hash (or before an expired one): the account is locked. The text is kept
        /// for unlocking.
        case locked(String)

        /// The field as written.
        public var text: String {
            switch self {
            case .hash(let hash): hash.text
            case .expired(let hash): "+" + hash.text
            case .locked(let text): text
            }
        }
    }

    /// A line of the file: text kept as it was read (comments, blank lines, and entries not changed since),
    /// or an entry set since. Lines read are kept as byte ranges of the file, so a file of a million users
    /// costs little more than its size.
    private enum Line: Sendable {
        case verbatim(start: UInt32, end: UInt32)
        case stored(start: UInt32, end: UInt32, number: UInt32)
        /// An index into `edits`, so a line stays 16 bytes.
        case edited(Int)
    }

    private var bytes: [UInt8] = []
    private var lines: [Line] = []
    private var edits: [Entry] = []
    private var index: [NameKey: Int] = [:]

    /// A name as the index keys it: by its bytes. `String`'s `==` holds canonically equivalent spellings equal
    /// (`Å` U+00C5 and `Å` U+212B, `K` and the Kelvin sign U+212A), which the file, like pam_unix, keeps as
    /// two accounts. Kept as a `String` all the same (up to 15 bytes inline, with no allocation: a
    /// million-account file's index stays small); its hash is `String`'s, which equal bytes share.
    private struct NameKey: Hashable {
        let name: String
        init(_ name: String) { self.name = name }
        static func == (lhs: NameKey, rhs: NameKey) -> Bool { lhs.name.utf8.elementsEqual(rhs.name.utf8) }
        func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }
    /// The line of the first entry in the file's most common scheme.
    private var representative: Int?
    /// Things worth telling an administrator that do not stop the file from loading (duplicates).
    public private(set) var warnings: [String] = []

    public init() {}

    /// The accounts, in file order (the first of duplicate names only).
    public var entries: [Entry] {
        lines.indices.compactMap { position in
            guard let entry = entry(at: position), index[NameKey(entry.username)] == position else { return nil }
            return entry
        }
    }

    /// The account named `username`: O(1).
    public subscript(username: String) -> Entry? {
        index[NameKey(username)].flatMap(entry(at:))
    }

    private func entry(at position: Int) -> Entry? {
        switch lines[position] {
        case .verbatim: return nil
        case .edited(let edit): return edits[edit]
        case .stored(let start, let end, let number):
            // Checked when the file was read, so this parse succeeds.
            var entry = try? Self.entry(from: bytes[Int(start)..<Int(end)], line: Int(number))
            entry?.line = Int(number)
            return entry
        }
    }

    /// Parses a users file.
    /// - Throws: ``UsersFileError`` naming the first bad line and what is wrong with it.
    public init(parsing source: some Collection<UInt8>) throws(UsersFileError) {
        bytes = Array(source)
        guard bytes.count < Int(UInt32.max) else { throw UsersFileError(.malformed, "the file is larger than 4 GiB") }
        let scanned = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(UsersFileError) in try Self.scan(buffer) }
        }
        (lines, index, warnings, representative) = try scanned.get()
    }

    /// A hash in the file's most common scheme and work factor, as costly to check as its entries: an
    /// unknown user's password is checked against it, so timing does not tell which names exist. `nil`
    /// for a file without usable hashes.
    var representativeHash: PasswordHash? {
        switch representative.flatMap({ entry(at: $0)?.password }) {
        case .hash(let hash)?, .expired(let hash)?: return hash
        default: return nil
        }
    }

    /// Finds the lines of `buffer` and checks every entry, keeping byte ranges rather than strings.
    private static func scan(
        _ buffer: UnsafeBufferPointer<UInt8>
    ) throws(UsersFileError) -> ([Line], [NameKey: Int], [String], Int?) {
        var newLines: [Line] = []
        var newIndex: [NameKey: Int] = [:]
        var newWarnings: [String] = []
        // Per scheme: how many entries use it, and the first of them.
        var schemes = [(count: Int, first: Int)](repeating: (0, 0), count: PasswordHash.Scheme.allCases.count)
        do {
            var start = buffer.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            var number = 0
            while start < buffer.count {
                number += 1
                let base = UnsafeRawPointer(buffer.baseAddress!)
                let newline =
                    memchr(base + start, 0x0A, buffer.count - start).map { base.distance(to: UnsafeRawPointer($0)) }
                    ?? buffer.count
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                let text = buffer[start..<end]
                let range = (UInt32(start), UInt32(end))
                start = newline + 1
                if text.contains(where: { $0 >= 0x80 }), String(validating: text, as: UTF8.self) == nil {
                    throw UsersFileError(.malformed, line: number, "is not valid UTF-8")
                }
                guard let first = text.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }), text[first] != UInt8(ascii: "#")
                else {
                    newLines.append(.verbatim(start: range.0, end: range.1))
                    continue
                }
                // A carriage return only before the line feed: one at the end of a field would be taken for
                // the line's end when the file is read back, and the entry read would not be the one
                // written. (Other control characters may stand in a group or a display name, and are
                // escaped wherever they are shown.)
                if text.contains(0x0D) {
                    throw UsersFileError(.malformed, line: number, "has a carriage return inside it")
                }
                let (username, scheme) = try Self.username(in: text, line: number)
                if let scheme, let slot = PasswordHash.Scheme.allCases.firstIndex(of: scheme) {
                    if schemes[slot].count == 0 { schemes[slot].first = newLines.count }
                    schemes[slot].count += 1
                }
                if let earlier = newIndex[NameKey(username)], case .stored(_, _, let earlierNumber) = newLines[earlier]
                {
                    newWarnings.append(
                        "line \(number): \(username) is already defined on line \(earlierNumber); the first entry is used"
                    )
                } else {
                    newIndex[NameKey(username)] = newLines.count
                }
                newLines.append(.stored(start: range.0, end: range.1, number: UInt32(number)))
            }
        }
        let common = schemes.max { $0.count < $1.count }
        return (newLines, newIndex, newWarnings, common.flatMap { $0.count > 0 ? $0.first : nil })
    }

    /// Checks an entry line and returns its user name and its hash's scheme (`nil` when locked), making no
    /// other string on the common path.
    private static func username(
        in text: Slice<UnsafeBufferPointer<UInt8>>,
        line: Int
    ) throws(UsersFileError) -> (String, PasswordHash.Scheme?) {
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else {
            throw UsersFileError(.malformed, line: line, "has no ':' between the user name and the hash")
        }
        let nameBytes = text[..<colon]
        let username: String
        if nameBytes.count <= Username.maxBytes, !nameBytes.isEmpty,
            nameBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        {
            username = String(decoding: nameBytes, as: UTF8.self)  // Printable ASCII: valid as it is.
        } else {
            do {
                username = try Username.validate(String(decoding: nameBytes, as: UTF8.self))
            } catch {
                throw UsersFileError(.malformed, line: line, "has an unusable user name: it \(error.problemPhrase)")
            }
        }
        let rest = text[(colon + 1)...]
        let hash = rest.prefix { $0 != UInt8(ascii: ":") }
        if let first = hash.first, first == UInt8(ascii: "!") || first == UInt8(ascii: "*") { return (username, nil) }
        do {
            let marked = hash.first == UInt8(ascii: "+")
            return (username, try PasswordHash.check(UnsafeBufferPointer(rebasing: marked ? hash.dropFirst() : hash)))
        } catch {
            throw UsersFileError(.malformed, line: line, "for \(username): \(error)")
        }
    }

    /// Splits an entry line into its fields as bytes: `:` and `,` are ASCII, and a combining mark after
    /// one must not glue itself to it (as it would to a `Character`).
    private static func entry(from text: ArraySlice<UInt8>, line: Int) throws(UsersFileError) -> Entry {
        let fields = text.split(separator: UInt8(ascii: ":"), maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count >= 2 else {
            throw UsersFileError(.malformed, line: line, "has no ':' between the user name and the hash")
        }
        let username = String(decoding: fields[0], as: UTF8.self)
        let password: Password
        do {
            password = try Self.password(String(decoding: fields[1], as: UTF8.self))
        } catch {
            throw UsersFileError(.malformed, line: line, "for \(username): \(error)")
        }
        let groups =
            fields.count > 2
            ? fields[2].split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) } : []
        let displayName = fields.count > 3 && !fields[3].isEmpty ? String(decoding: fields[3], as: UTF8.self) : nil
        return Entry(username: username, password: password, groups: groups, displayName: displayName)
    }

    static func password(_ field: String) throws(PasswordHash.Problem) -> Password {
        if let first = field.first, first == "!" || first == "*" { return .locked(field) }
        if field.first == "+" { return .expired(try PasswordHash(String(field.dropFirst()))) }
        return .hash(try PasswordHash(field))
    }

    /// The file's bytes: the lines read (comments and blank lines as they were), with changed entries
    /// written anew, and a final newline.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 128)
        for line in lines {
            switch line {
            case .verbatim(let start, let end), .stored(let start, let end, _): output += bytes[Int(start)..<Int(end)]
            case .edited(let edit): output += Self.format(edits[edit]).utf8
            }
            output.append(0x0A)
        }
        return output
    }

    static func format(_ entry: Entry) -> String {
        var line = "\(entry.username):\(entry.password.text)"
        if !entry.groups.isEmpty || entry.displayName != nil { line += ":" + entry.groups.joined(separator: ",") }
        if let displayName = entry.displayName { line += ":" + displayName }
        return line
    }

    // MARK: Changes

    /// Adds an account at the end, or replaces the existing one with the same name.
    /// - Throws: ``UsersFileError`` when a field could not be read back as written (see
    ///   ``validateGroup(_:)`` and ``validateDisplayName(_:)``); the file is then unchanged.
    public mutating func set(_ entry: Entry) throws(UsersFileError) {
        do {
            _ = try Username.validate(entry.username)
        } catch {
            throw UsersFileError("the user name cannot be used: \(error.problemPhrase)")
        }
        for group in entry.groups { try Self.validateGroup(group) }
        if let displayName = entry.displayName { try Self.validateDisplayName(displayName) }
        let password = entry.password.text
        guard !password.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 >= 0x7F }) else {
            throw UsersFileError("the password field cannot hold white space, ':' or non-ASCII bytes")
        }
        var entry = entry
        if entry.displayName?.isEmpty == true { entry.displayName = nil }
        edits.append(entry)
        if let position = index[NameKey(entry.username)] {
            lines[position] = .edited(edits.count - 1)
        } else {
            index[NameKey(entry.username)] = lines.count
            lines.append(.edited(edits.count - 1))
        }
    }

    /// Removes an account (every line for the name); returns whether there was one.
    @discardableResult
    public mutating func remove(_ username: String) -> Bool {
        guard index[NameKey(username)] != nil else { return false }
        let key = NameKey(username)
        lines = lines.indices.filter { entry(at: $0).map { NameKey($0.username) } != key }.map { lines[$0] }
        representative = nil  // Lines moved; the stand-in matters only for a file as read.
        rebuildIndex()
        return true
    }

    private mutating func rebuildIndex() {
        index = [:]
        for position in lines.indices {
            if let name = entry(at: position).map({ NameKey($0.username) }), index[name] == nil {
                index[name] = position
            }
        }
    }
}

extension UsersFile {
    /// The longest group name accepted, in bytes.
    public static let maxGroupBytes = 256
    /// The longest display name accepted, in bytes.
    public static let maxDisplayNameBytes = 1024

    /// Checks a group name: what ``Username/validate(_:)`` accepts, without `,` (the separator of
    /// groups) or white space, so it reads back as the same group and prints as what it is.
    /// - Throws: ``UsersFileError`` saying what is wrong.
    public static func validateGroup(_ group: String) throws(UsersFileError) {
        guard !group.isEmpty else { throw UsersFileError("a group name cannot be empty") }
        guard group.utf8.count <= maxGroupBytes else {
            throw UsersFileError("a group name is longer than \(maxGroupBytes) bytes")
        }
        do {
            _ = try Username.validate(group)
        } catch {
            throw UsersFileError("a group name \(error.problemPhrase)")
        }
        guard !group.unicodeScalars.contains(where: { $0 == "," || $0.properties.isWhitespace }) else {
            throw UsersFileError("a group name cannot contain ',' or white space")
        }
    }

    /// Checks a display name: no `:` (the field separator), no control, format or direction-changing
    /// characters (a name must not rewrite a terminal or read as another), at most
    /// ``maxDisplayNameBytes`` bytes.
    /// - Throws: ``UsersFileError`` saying what is wrong.
    public static func validateDisplayName(_ name: String) throws(UsersFileError) {
        guard name.utf8.count <= maxDisplayNameBytes else {
            throw UsersFileError("a display name is longer than \(maxDisplayNameBytes) bytes")
        }
        guard !name.utf8.contains(UInt8(ascii: ":")) else { throw UsersFileError("a display name cannot contain ':'") }
        if let scalar = name.unicodeScalars.first(where: TextSafety.isUnsafe) {
            throw UsersFileError(
                "a display name cannot contain the control or invisible character \(TextSafety.codePoint(scalar))")
        }
    }
}

extension AuthError {
    /// "contains …" or "is …", for a field other than the user name.
    fileprivate var problemPhrase: String {
        if code == .missingUsername { return "is empty" }
        return inputProblem?.phrase ?? description
    }
}

/// A users file that cannot be used, or a change that cannot be made: a ``code`` to act on, the line
/// at fault when there is one, and a problem phrased to follow it ("line 3 has no ':' …"). Equal when
/// the codes are.
public struct UsersFileError: CodedError {
    /// What went wrong. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<UsersFileError>

    public let code: Code
    public let line: Int?
    public let problem: String

    public init(_ code: Code, line: Int? = nil, _ problem: String) {
        self.code = code
        self.line = line
        self.problem = problem
    }

    /// A change refused (``Code/refused``), for the reason given.
    public init(_ problem: String) {
        self.init(.refused, problem)
    }

    public var description: String {
        line.map { "line \($0) \(problem)" } ?? problem
    }
}

extension ErrorCode where Domain == UsersFileError {
    /// A line of the file (``UsersFileError/line``) cannot be read as an entry.
    public static var malformed: Self { Self("malformed") }
    /// The file is refused as unsafe: a symbolic link, not a regular file, writable by others, or
    /// owned by someone else.
    public static var unsafe: Self { Self("unsafe") }
    /// The file or its lock could not be opened, read or written.
    public static var inaccessible: Self { Self("inaccessible") }
    /// The change does not fit the file: the user exists already, or does not, or a field cannot be
    /// written as given.
    public static var refused: Self { Self("refused") }
}
