import Authentication

/// The editing rules of a line read in raw mode, kept apart from the terminal so they can be tested.
///
/// Printable bytes are inserted at the cursor (and echoed if asked). Backspace and Delete remove a whole
/// character; Left/Right, Home/End, Ctrl-A/Ctrl-E move; Ctrl-U deletes back to the start, Ctrl-K to the
/// end, Ctrl-W a word; Up/Down walk the history and Tab completes, where the editor has them. Enter
/// submits; Ctrl-C interrupts; Ctrl-D on an empty line ends the input; Ctrl-Z suspends (the reader stops
/// the job and, once continued, draws the line again). Other control bytes and unknown escape sequences
/// are ignored, and nothing past `limit` bytes is kept.
struct LineEditor {
    enum Action: Equatable {
        case `continue`
        case submit
        /// Ctrl-C.
        case interrupt
        /// Ctrl-D on an empty line.
        case endOfInput
        /// Ctrl-Z: stop the job, as the terminal would have in cooked mode.
        case suspend
    }

    let echo: Bool
    let limit: Int
    /// Written before the line when it is drawn again.
    var prompt: [UInt8] = []
    /// Earlier lines, oldest first, for Up and Down.
    var history: [String] = []
    /// Given the text before the cursor, the words that may complete its last word.
    var completer: (@Sendable (String) -> [String])?

    private(set) var bytes: [UInt8] = []
    private var cursor = 0
    private var historyIndex: Int?
    private var draft: [UInt8] = []
    private var escape: EscapeState = .none

    private enum EscapeState {
        case none
        case started
        case sequence([UInt8])
    }

    init(echo: Bool, limit: Int) {
        self.echo = echo
        self.limit = limit
        // Hidden input should not be copied around the heap as the line grows.
        if !echo { bytes.reserveCapacity(min(limit, 4097)) }
    }

    /// Handles one byte; returns what to do and the bytes to write back to the terminal.
    mutating func feed(_ byte: UInt8) -> (Action, [UInt8]) {
        switch escape {
        case .started:
            escape = (byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O")) ? .sequence([]) : .none
            return (.continue, [])
        case .sequence(let parameters):
            guard (0x40...0x7E).contains(byte) else {
                escape = parameters.count < 8 ? .sequence(parameters + [byte]) : .none
                return (.continue, [])
            }
            escape = .none
            return (.continue, escapeSequence(parameters, final: byte))
        case .none:
            break
        }
        switch byte {
        case 0x03:
            return (.interrupt, [])
        case 0x04:
            if bytes.isEmpty { return (.endOfInput, []) }
            return (.continue, deleteForward())
        case 0x0D, 0x0A:
            return (.submit, [])
        case 0x1A:
            return (.suspend, [])
        case 0x7F, 0x08:
            return (.continue, deleteBackward())
        case 0x01:
            return (.continue, move(to: 0))
        case 0x05:
            return (.continue, move(to: bytes.count))
        case 0x02:
            return (.continue, move(to: previousBoundary(cursor)))
        case 0x06:
            return (.continue, move(to: nextBoundary(cursor)))
        case 0x15:
            return (.continue, replace(0..<cursor, with: []))
        case 0x0B:
            return (.continue, replace(cursor..<bytes.count, with: []))
        case 0x17:
            var start = cursor
            while start > 0 && bytes[start - 1] == 0x20 { start -= 1 }
            while start > 0 && bytes[start - 1] != 0x20 { start -= 1 }
            return (.continue, replace(start..<cursor, with: []))
        case 0x09:
            return (.continue, complete())
        case 0x1B:
            escape = .started
            return (.continue, [])
        case 0x00..<0x20:
            return (.continue, [])
        default:
            guard bytes.count < limit else { return (.continue, []) }
            if cursor == bytes.count {
                bytes.append(byte)
                cursor += 1
                return (.continue, echo ? [byte] : [])
            }
            return (.continue, replace(cursor..<cursor, with: [byte]))
        }
    }

    /// Returns the line and forgets it.
    mutating func take() -> [UInt8] {
        defer {
            bytes = []
            cursor = 0
        }
        return bytes
    }

    /// Zeroes and forgets the line.
    mutating func wipe() {
        Secret.wipe(&bytes)
        cursor = 0
    }

    // MARK: Editing

    private mutating func escapeSequence(_ parameters: [UInt8], final: UInt8) -> [UInt8] {
        switch (parameters, final) {
        case ([], UInt8(ascii: "D")): return move(to: previousBoundary(cursor))
        case ([], UInt8(ascii: "C")): return move(to: nextBoundary(cursor))
        case ([], UInt8(ascii: "H")), ([UInt8(ascii: "1")], UInt8(ascii: "~")): return move(to: 0)
        case ([], UInt8(ascii: "F")), ([UInt8(ascii: "4")], UInt8(ascii: "~")): return move(to: bytes.count)
        case ([UInt8(ascii: "3")], UInt8(ascii: "~")): return deleteForward()
        case ([], UInt8(ascii: "A")): return recall(older: true)
        case ([], UInt8(ascii: "B")): return recall(older: false)
        default: return []
        }
    }

    private mutating func deleteBackward() -> [UInt8] {
        guard cursor > 0 else { return [] }
        if cursor == bytes.count {
            let start = previousBoundary(cursor)
            if !echo { for index in start..<cursor { bytes[index] = 0 } }
            bytes.removeSubrange(start..<cursor)
            cursor = start
            return echo ? Array("\u{8} \u{8}".utf8) : []
        }
        return replace(previousBoundary(cursor)..<cursor, with: [])
    }

    private mutating func deleteForward() -> [UInt8] {
        guard cursor < bytes.count else { return [] }
        return replace(cursor..<nextBoundary(cursor), with: [])
    }

    private mutating func move(to position: Int) -> [UInt8] {
        cursor = position
        return redraw()
    }

    private mutating func replace(_ range: Range<Int>, with replacement: [UInt8]) -> [UInt8] {
        let room = limit - (bytes.count - range.count)
        let kept = Array(replacement.prefix(max(room, 0)))
        if !echo {
            // Hidden input keeps its bytes out of the old buffer's copies: wipe what is removed.
            for index in range { bytes[index] = 0 }
        }
        bytes.replaceSubrange(range, with: kept)
        cursor = range.lowerBound + kept.count
        return redraw()
    }

    private mutating func recall(older: Bool) -> [UInt8] {
        guard echo, !history.isEmpty else { return [] }
        let index: Int?
        switch (historyIndex, older) {
        case (nil, true): index = history.count - 1
        case (nil, false): return []
        case (let current?, true): index = max(current - 1, 0)
        case (let current?, false): index = current + 1 < history.count ? current + 1 : nil
        }
        if historyIndex == nil { draft = bytes }
        historyIndex = index
        bytes = index.map { Array(history[$0].utf8.prefix(limit)) } ?? draft
        cursor = bytes.count
        return redraw()
    }

    private mutating func complete() -> [UInt8] {
        guard echo, let completer else { return [] }
        let before = String(decoding: bytes[..<cursor], as: UTF8.self)
        let wordStart = bytes[..<cursor].lastIndex(of: 0x20).map { $0 + 1 } ?? 0
        let word = String(decoding: bytes[wordStart..<cursor], as: UTF8.self)
        let candidates = completer(before).filter { $0.hasPrefix(word) }
        guard let first = candidates.first else { return [] }
        if candidates.count == 1 {
            return replace(wordStart..<cursor, with: Array((first + " ").utf8))
        }
        let common = candidates.dropFirst().reduce(first) { prefix, candidate in
            String(zip(prefix, candidate).prefix { $0 == $1 }.map(\.0))
        }
        if common.count > word.count {
            return replace(wordStart..<cursor, with: Array(common.utf8))
        }
        return Array(("\r\n" + candidates.joined(separator: "  ") + "\r\n").utf8) + redraw()
    }

    /// The prompt and the line as they stood, for a terminal given back after a suspension: the text
    /// where it is echoed, the prompt alone where it is hidden.
    func drawnAgain() -> [UInt8] {
        echo ? redraw() : Array("\r".utf8) + prompt + Array("\u{1B}[K".utf8)
    }

    /// The line drawn again: prompt, text, the rest of the old line cleared, the cursor put back.
    private func redraw() -> [UInt8] {
        guard echo else { return [] }
        var output = Array("\r".utf8) + prompt + bytes + Array("\u{1B}[K".utf8)
        let after = String(decoding: bytes[cursor...], as: UTF8.self).count
        if after > 0 { output += Array("\u{1B}[\(after)D".utf8) }
        return output
    }

    private func previousBoundary(_ index: Int) -> Int {
        var position = max(index - 1, 0)
        while position > 0 && bytes[position] & 0xC0 == 0x80 { position -= 1 }
        return position
    }

    private func nextBoundary(_ index: Int) -> Int {
        var position = min(index + 1, bytes.count)
        while position < bytes.count && bytes[position] & 0xC0 == 0x80 { position += 1 }
        return position
    }
}
