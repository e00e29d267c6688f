import Authentication
import ProviderPlugins

/// How libpam reads a service file's lines, and the words of a line.
extension StackConfiguration.Parser {
    struct Word: Sendable, Hashable {
        var text: String
        var column: Int
        /// The line of the file the word is on (a continued line spans several).
        var line: Int = 0
    }

    /// A line as libpam reads it: its bytes, and where in the file each one was.
    struct Line {
        var bytes: [UInt8] = []
        var places: [(line: Int, column: Int)] = []
    }

    /// libpam reads at most this many bytes of a line, continued lines together (`BUF_SIZE` less the
    /// terminating byte and the line break).
    static let maxLineBytes = 1022

    /// The file's lines as libpam's `_pam_assemble_line` reads them: a `#` anywhere begins a comment
    /// to the end of its line; a line whose text (before any comment) ends in `\`, spaces after it
    /// allowed, goes on on the next line that holds anything — blank and comment-only lines between
    /// are skipped — the `\` read as a space. Where libpam would read the file otherwise than as lines
    /// — one longer than ``maxLineBytes`` (it reads the rest as a line of its own, or stops reading the
    /// file), a `\` before a carriage return (no continuation for libpam), a file ending in a
    /// continued line (it drops the line) — the file is refused, saying where. A carriage return
    /// ending a line is not part of it.
    static func lines(_ text: [UInt8], file: String) throws(ConfigurationError) -> [Line] {
        var lines: [Line] = []
        var current = Line()
        var continued = false
        var number = 0
        func refuse(_ column: Int, _ word: String, _ message: String) -> ConfigurationError {
            ConfigurationError(
                .syntax, at: ConfigurationLocation(file: file, line: number, column: column), word: word, message)
        }
        for physical in text.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            var bytes = Array(physical)
            guard current.bytes.count + bytes.count <= maxLineBytes else {
                throw refuse(
                    1, "line",
                    "longer than libpam reads (\(maxLineBytes) bytes\(continued ? ", continued lines together" : "")); "
                        + "split the entry or shorten its comment")
            }
            let backslashBeforeReturn = bytes.last == 0x0D && bytes.dropLast().last == UInt8(ascii: "\\")
            if bytes.last == 0x0D { bytes.removeLast() }
            var comment = false
            if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) {
                bytes.removeSubrange(hash...)
                comment = true
            }
            let isBlank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 }
            // A line holding nothing goes on the continued line's way, as libpam skips it.
            if isBlank && continued { continue }
            var end = bytes.endIndex
            while end > 0 && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
            let goesOn = !comment && end > 0 && bytes[end - 1] == UInt8(ascii: "\\")
            if backslashBeforeReturn && !comment {
                throw refuse(
                    bytes.count, "\\", "a \\ before a carriage return does not continue the line for libpam")
            }
            let kept = goesOn ? Array(bytes[..<(end - 1)]) + [0x20] : bytes
            current.bytes += kept
            current.places += kept.indices.map { (number, $0 + 1) }
            continued = goesOn
            if !goesOn {
                lines.append(current)
                current = Line()
            }
        }
        if continued {
            throw refuse(1, "\\", "the file ends in a continued line, which libpam would not read")
        }
        return lines
    }

    /// The words of a line: separated by spaces or tabs, `[…]` kept whole.
    static func words(_ line: Line, file: String) throws(ConfigurationError) -> [Word] {
        var words: [Word] = []
        var index = 0
        let (line, places) = (line.bytes, line.places)
        func location(_ index: Int) -> ConfigurationLocation {
            ConfigurationLocation(file: file, line: places[index].line, column: places[index].column)
        }
        while index < line.count {
            if line[index] == 0x20 || line[index] == 0x09 {
                index += 1
                continue
            }
            let start = index
            if line[index] == UInt8(ascii: "[") {
                guard let close = line[index...].firstIndex(of: UInt8(ascii: "]")) else {
                    throw ConfigurationError(
                        .control, at: location(start), word: "[", "the bracket is not closed on this line")
                }
                index = close + 1
            } else {
                while index < line.count && line[index] != 0x20 && line[index] != 0x09 { index += 1 }
            }
            // Inside a bracket a tab separates pairs, as a space does.
            let bytes = line[start..<index].map { line[start] == UInt8(ascii: "[") && $0 == 0x09 ? 0x20 : $0 }
            guard let text = String(validating: bytes, as: UTF8.self),
                !text.unicodeScalars.contains(where: TextSafety.isUnsafe)
            else {
                throw ConfigurationError(
                    .syntax, at: location(start), word: TextSafety.escaped(String(decoding: bytes, as: UTF8.self)),
                    "holds invalid UTF-8 or a control character")
            }
            words.append(Word(text: text, column: places[start].column, line: places[start].line))
        }
        return words
    }
}
