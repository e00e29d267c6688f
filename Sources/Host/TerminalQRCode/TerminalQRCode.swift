import CQREncodeLoader

/// A QR code drawn with text, for a terminal: what an authenticator app scans at enrolment, or a phone
/// opens to approve a device login.
public enum TerminalQRCode {
    /// `text` as a QR code (libqrencode, error correction M), two rows of modules a line: light modules
    /// are drawn, dark ones left blank, with a quiet zone of 2 — as `qrencode -t UTF8 -m 2 -l M` draws it, for
    /// a dark terminal background. `nil` when the text does not fit a QR code.
    public static func lines(_ text: String) -> [String]? {
        guard let code = gk_QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { gk_QRcode_free(code) }
        let width = Int(code.pointee.width)
        let margin = 2
        let size = width + 2 * margin
        func dark(_ row: Int, _ column: Int) -> Bool {
            let (y, x) = (row - margin, column - margin)
            guard (0..<width).contains(y), (0..<width).contains(x) else { return false }
            return code.pointee.data[y * width + x] & 1 == 1
        }
        var lines: [String] = []
        for row in stride(from: 0, to: size, by: 2) {
            var line = ""
            for column in 0..<size {
                // Past the last row is light, as the quiet zone is.
                let (top, bottom) = (!dark(row, column), row + 1 >= size || !dark(row + 1, column))
                line += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " "
            }
            lines.append(line)
        }
        return lines
    }
}
