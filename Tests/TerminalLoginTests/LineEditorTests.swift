import Testing

@testable import TerminalLogin

struct LineEditorTests {
    private func type(_ bytes: [UInt8], echo: Bool = true, limit: Int = 64) -> (LineEditor.Action, [UInt8], [UInt8]) {
        var editor = LineEditor(echo: echo, limit: limit)
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

    @Test(arguments: [[UInt8(0x03)], Array("abc".utf8) + [0x03], [0x04]])
    func cancels(_ bytes: [UInt8]) {
        #expect(type(bytes).0 == .cancel)
    }

    @Test func ctrlDOnANonEmptyLineIsIgnored() {
        let (action, line, _) = type(Array("ab".utf8) + [0x04, 0x0D])
        #expect(action == .submit)
        #expect(line == Array("ab".utf8))
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
