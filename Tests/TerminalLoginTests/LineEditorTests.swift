import Testing

@testable import TerminalLogin

struct LineEditorTests {
    private func type(
        _ bytes: [UInt8],
        echo: Bool = true,
        limit: Int = 64,
        history: [String] = [],
        completer: (@Sendable (String) -> [String])? = nil
    ) -> (LineEditor.Action, [UInt8], [UInt8]) {
        var editor = LineEditor(echo: echo, limit: limit)
        editor.history = history
        editor.completer = completer
        var shown: [UInt8] = []
        for byte in bytes {
            let (action, display) = editor.feed(byte)
            shown += display
            if action != .continue { return (action, editor.take(), shown) }
        }
        return (.continue, editor.take(), shown)
    }

    @Test func submitsOnEnter() {
        let (action, line, shown) = type(Array("alice\r".utf8))
        #expect(action == .submit)
        #expect(line == Array("alice".utf8))
        #expect(shown == Array("alice".utf8))
    }

    @Test func hiddenInputIsNeverEchoed() {
        let (action, line, shown) = type(Array("hunter2".utf8) + [0x7F, 0x0D], echo: false)
        #expect(action == .submit)
        #expect(line == Array("hunter".utf8))
        #expect(shown.isEmpty)
    }

    @Test func ctrlCInterruptsAndCtrlDOnAnEmptyLineEndsTheInput() {
        #expect(type([0x03]).0 == .interrupt)
        #expect(type(Array("abc".utf8) + [0x03]).0 == .interrupt)
        #expect(type([0x04]).0 == .endOfInput)
    }

    /// Ctrl-Z asks to suspend and keeps the line; once continued, the line is drawn again as it stood —
    /// a hidden one as its prompt alone.
    @Test func ctrlZSuspendsAndTheLineIsDrawnAgainAfter() {
        var editor = LineEditor(echo: true, limit: 64)
        editor.prompt = Array("[home]› ".utf8)
        for byte in Array("hel".utf8) { _ = editor.feed(byte) }
        #expect(editor.feed(0x1A).0 == .suspend)
        #expect(editor.drawnAgain() == Array("\r[home]› hel\u{1B}[K".utf8))
        _ = editor.feed(UInt8(ascii: "p"))
        #expect(editor.feed(0x0D).0 == .submit)
        #expect(editor.take() == Array("help".utf8))
        var hidden = LineEditor(echo: false, limit: 64)
        hidden.prompt = Array("Password: ".utf8)
        for byte in Array("hunter2".utf8) { _ = hidden.feed(byte) }
        #expect(hidden.feed(0x1A).0 == .suspend)
        #expect(hidden.drawnAgain() == Array("\rPassword: \u{1B}[K".utf8), "the hidden text was drawn")
        #expect(hidden.feed(0x0D).0 == .submit)
        #expect(hidden.take() == Array("hunter2".utf8))
    }

    @Test func ctrlDOnANonEmptyLineDeletesUnderTheCursor() {
        let (action, line, _) = type(Array("ab".utf8) + [0x04, 0x01, 0x04, 0x0D])
        #expect(action == .submit)
        #expect(line == Array("b".utf8))
    }

    static let left: [UInt8] = [0x1B, 0x5B, 0x44]
    static let right: [UInt8] = [0x1B, 0x5B, 0x43]
    static let up: [UInt8] = [0x1B, 0x5B, 0x41]
    static let down: [UInt8] = [0x1B, 0x5B, 0x42]

    @Test func insertsAtTheCursor() {
        let keys = Array("hllo".utf8) + Self.left + Self.left + Self.left + Array("e".utf8) + [0x0D]
        let (_, line, shown) = type(keys)
        #expect(line == Array("hello".utf8))
        // The line is drawn again with the cursor put back after the insertion.
        #expect(String(decoding: shown, as: UTF8.self).hasSuffix("\rhello\u{1B}[K\u{1B}[3D"))
    }

    @Test func homeEndDeleteAndKillKeys() {
        #expect(type(Array("abc".utf8) + [0x01, 0x1B, 0x5B, 0x33, 0x7E, 0x0D]).1 == Array("bc".utf8))
        #expect(type(Array("abc".utf8) + Self.left + [0x0B, 0x0D]).1 == Array("ab".utf8))
        #expect(type(Array("git push origin".utf8) + [0x17, 0x0D]).1 == Array("git push ".utf8))
        #expect(type(Array("abc".utf8) + [0x01, 0x05] + Array("d".utf8) + [0x0D]).1 == Array("abcd".utf8))
        #expect(type(Array("abc".utf8) + Self.left + [0x15, 0x0D]).1 == Array("c".utf8))
    }

    @Test func walksTheHistory() {
        let history = ["first", "second"]
        #expect(type(Self.up + [0x0D], history: history).1 == Array("second".utf8))
        #expect(type(Self.up + Self.up + Self.up + [0x0D], history: history).1 == Array("first".utf8))
        #expect(type(Array("draft".utf8) + Self.up + Self.down + [0x0D], history: history).1 == Array("draft".utf8))
        // Hidden input has no history.
        #expect(type(Self.up + [0x0D], echo: false, history: history).1 == [])
    }

    @Test func completesTheLastWord() {
        let commands: @Sendable (String) -> [String] = { _ in ["courses", "contact", "logout", "login"] }
        #expect(type(Array("cou".utf8) + [0x09, 0x0D], completer: commands).1 == Array("courses ".utf8))
        #expect(type(Array("open cou".utf8) + [0x09, 0x0D], completer: commands).1 == Array("open courses ".utf8))
        // Ambiguous: extend to the common prefix, then list the choices.
        let (_, line, shown) = type(Array("l".utf8) + [0x09, 0x09, 0x0D], completer: commands)
        #expect(line == Array("log".utf8))
        #expect(String(decoding: shown, as: UTF8.self).contains("logout  login"))
        #expect(type(Array("zz".utf8) + [0x09, 0x0D], completer: commands).1 == Array("zz".utf8))
    }

    @Test func backspaceRemovesAWholeCharacter() {
        let (_, line, _) = type(Array("né".utf8) + [0x7F, 0x0D])
        #expect(line == Array("n".utf8))
    }

    @Test func ctrlUClearsTheLine() {
        let (_, line, _) = type(Array("oops".utf8) + [0x15] + Array("bob\r".utf8))
        #expect(line == Array("bob".utf8))
    }

    @Test func arrowKeysAndControlBytesAreIgnored() {
        let (_, line, _) = type([0x1B, 0x5B, 0x41] + Array("a".utf8) + [0x1B, 0x4F, 0x44, 0x01, 0x0D])
        #expect(line == Array("a".utf8))
    }

    @Test func keepsNothingPastTheLimit() {
        let (_, line, _) = type(Array(String(repeating: "x", count: 100).utf8) + [0x0D], limit: 10)
        #expect(line.count == 10)
    }
}
