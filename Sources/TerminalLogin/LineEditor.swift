import Authentication

/// The editing rules of a prompt read in raw mode, kept apart from the terminal so they can be tested.
///
/// Printable bytes are added (and echoed if asked); Backspace/Delete removes the last character (a whole
/// UTF-8 sequence); Ctrl-U clears the line; Enter submits; Ctrl-C, and Ctrl-D on an empty line, cancel.
/// Escape sequences (arrow keys) and other control bytes are ignored. Nothing past `limit` bytes is kept.
struct LineEditor {
    enum Action: Equatable {
        case `continue`
        case submit
        case cancel
    }

    let echo: Bool
    let limit: Int
    private(set) var bytes: [UInt8] = []
    private var escape: EscapeState = .none

    private enum EscapeState {
        case none
        case started
        case sequence
    }

    init(echo: Bool, limit: Int) {
        self.echo = echo
        self.limit = limit
    }

    /// Handles one byte; returns what to do and the bytes to write back to the terminal.
    mutating func feed(_ byte: UInt8) -> (Action, [UInt8]) {
        switch escape {
        case .started:
            escape = (byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O")) ? .sequence : .none
            return (.continue, [])
        case .sequence:
            if (0x40...0x7E).contains(byte) { escape = .none }
            return (.continue, [])
        case .none:
            break
        }
        switch byte {
        case 0x03:
            return (.cancel, [])
        case 0x04:
            return bytes.isEmpty ? (.cancel, []) : (.continue, [])
        case 0x0D, 0x0A:
            return (.submit, [])
        case 0x7F, 0x08:
            guard !bytes.isEmpty else { return (.continue, []) }
            // Remove continuation bytes, then the lead byte: one whole character.
            while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
            if !bytes.isEmpty { bytes.removeLast() }
            return (.continue, echo ? Array("\u{8} \u{8}".utf8) : [])
        case 0x15:
            let characters = String(decoding: bytes, as: UTF8.self).count
            wipe()
            return (.continue, echo ? Array(String(repeating: "\u{8} \u{8}", count: characters).utf8) : [])
        case 0x1B:
            escape = .started
            return (.continue, [])
        case 0x00..<0x20:
            return (.continue, [])
        default:
            guard bytes.count < limit else { return (.continue, []) }
            bytes.append(byte)
            return (.continue, echo ? [byte] : [])
        }
    }

    /// Returns the line and forgets it.
    mutating func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }

    /// Zeroes and forgets the line.
    mutating func wipe() {
        Secret.wipe(&bytes)
    }
}
