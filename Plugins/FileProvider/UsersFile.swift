import Authentication

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
        /// `!` or `*` before the hash: the account is locked. The hash is kept for unlocking.
        case locked(String)
    }

    private enum Line: Sendable {
        case verbatim(String)
        case entry(Entry)
    }

    private var lines: [Line] = []
    private var index: [String: Int] = [:]
    /// Things worth telling an administrator that do not stop the file from loading (duplicates).
    public private(set) var warnings: [String] = []

    public init() {}

    /// The accounts, in file order (the first of duplicate names only).
    public var entries: [Entry] {
        lines.enumerated().compactMap { position, line in
            guard case .entry(let entry) = line, index[entry.username] == position else { return nil }
            return entry
        }
    }

    /// The account named `username`: O(1).
    public subscript(username: String) -> Entry? {
        guard let position = index[username], case .entry(let entry) = lines[position] else { return nil }
        return entry
    }

    /// Parses a users file.
    /// - Throws: ``UsersFileError`` naming the first bad line and what is wrong with it.
    public init(parsing bytes: some Collection<UInt8>) throws(UsersFileError) {
        var body = Array(bytes)[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        var number = 0
        for rawLine in body.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            var lineBytes = rawLine
            if lineBytes.last == 0x0D { lineBytes = lineBytes.dropLast() }
            guard let text = String(validating: lineBytes, as: UTF8.self) else {
                throw UsersFileError(line: number, "is not valid UTF-8")
            }
            let trimmed = text.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                // A final newline does not make a line of its own.
                if !(text.isEmpty && number > 1 && rawLine.endIndex == body.endIndex) { lines.append(.verbatim(text)) }
                continue
            }
            var entry = try Self.entry(from: text, line: number)
            entry.line = number
            if let first = index[entry.username], case .entry(let earlier) = lines[first] {
                warnings.append(
                    "line \(number): \(entry.username) is already defined on line \(earlier.line ?? 0); the first entry is used"
                )
            } else {
                index[entry.username] = lines.count
            }
            lines.append(.entry(entry))
        }
    }

    private static func entry(from text: String, line: Int) throws(UsersFileError) -> Entry {
        let fields = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 2 else {
            throw UsersFileError(line: line, "has no ':' between the user name and the hash")
        }
        let username: String
        do {
            username = try Username.validate(fields[0])
        } catch {
            throw UsersFileError(line: line, "has an unusable user name: \(error)")
        }
        let password: Password
        do {
            password = try Self.password(fields[1])
        } catch {
            throw UsersFileError(line: line, "for \(username): \(error)")
        }
        let groups = fields.count > 2 ? fields[2].split(separator: ",").map(String.init).filter { !$0.isEmpty } : []
        let displayName = fields.count > 3 && !fields[3].isEmpty ? fields[3] : nil
        return Entry(username: username, password: password, groups: groups, displayName: displayName)
    }

    private static func password(_ field: String) throws(PasswordHash.Problem) -> Password {
        if let first = field.first, first == "!" || first == "*" { return .locked(field) }
        return .hash(try PasswordHash(field))
    }

    /// The file's bytes: the lines read (comments and blank lines as they were), with changed entries
    /// written anew, and a final newline.
    public func serialized() -> [UInt8] {
        var text = ""
        for line in lines {
            switch line {
            case .verbatim(let verbatim): text += verbatim
            case .entry(let entry): text += Self.format(entry)
            }
            text += "\n"
        }
        return Array(text.utf8)
    }

    static func format(_ entry: Entry) -> String {
        let password: String =
            switch entry.password {
            case .hash(let hash): hash.text
            case .locked(let text): text
            }
        var line = "\(entry.username):\(password)"
        if !entry.groups.isEmpty || entry.displayName != nil { line += ":" + entry.groups.joined(separator: ",") }
        if let displayName = entry.displayName { line += ":" + displayName }
        return line
    }

    // MARK: Changes

    /// Adds an account at the end, or replaces the existing one with the same name.
    public mutating func set(_ entry: Entry) {
        if let position = index[entry.username] {
            lines[position] = .entry(entry)
        } else {
            index[entry.username] = lines.count
            lines.append(.entry(entry))
        }
    }

    /// Removes an account (every line for the name); returns whether there was one.
    @discardableResult
    public mutating func remove(_ username: String) -> Bool {
        guard index[username] != nil else { return false }
        lines.removeAll { line in
            if case .entry(let entry) = line { entry.username == username } else { false }
        }
        rebuildIndex()
        return true
    }

    private mutating func rebuildIndex() {
        index = [:]
        for (position, line) in lines.enumerated() {
            if case .entry(let entry) = line, index[entry.username] == nil { index[entry.username] = position }
        }
    }
}

/// A users file that cannot be used, with the line at fault when there is one.
public struct UsersFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public let line: Int?
    public let problem: String

    public init(line: Int? = nil, _ problem: String) {
        self.line = line
        self.problem = problem
    }

    public var description: String {
        line.map { "line \($0) \(problem)" } ?? problem
    }
}
