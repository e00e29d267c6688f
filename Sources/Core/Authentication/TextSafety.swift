/// Which characters of untrusted text (a users file, a PAM module's message, a directory entry) may
/// reach a terminal or a log as they are.
///
/// Control characters can rewrite a terminal (ESC sequences change its title, clear the screen, move
/// the cursor); format characters are invisible, and the bidirectional ones (U+202A–U+202E,
/// U+2066–U+2069) reorder what follows, so one name can be made to look like another. Text from outside
/// is refused where it is written when it holds them, and escaped wherever it is shown.
public enum TextSafety {
    /// Whether `scalar` must not be shown as it is: C0 and C1 controls and DEL, line and paragraph
    /// separators, and format characters (general category Cf, which holds the bidirectional controls
    /// and the zero-width ones).
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: return true
        case 0x20...0x7E: return false
        default: return scalar.properties.generalCategory == .format
        }
    }

    /// `text` with every unsafe character written as `\u{…}`, so it prints as what it is.
    /// - Parameters:
    ///   - text: What to print.
    ///   - keepingLineBreaks: Keep `\n` (for messages of several lines).
    public static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) && !(keepingLineBreaks && scalar == "\n") {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// `U+202E`: how a character is named in an error message.
    public static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `text` as a JSON string, with every control, invisible and direction-changing character escaped:
    /// for the audit log and the helper protocol, which both write JSON by hand.
    package static func jsonQuoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || isUnsafe(scalar) || scalar.value == 0x2028
                    || scalar.value == 0x2029
                {
                    for unit in String(scalar).utf16 {
                        let hex = String(unit, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

}
