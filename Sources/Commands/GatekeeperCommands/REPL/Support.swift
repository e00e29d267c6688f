import Authentication

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The process environment, without Foundation.
enum ProcessEnvironment {
    static var environment: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}

/// `text` from a backend (names, groups, messages) made safe to print: control, format and
/// direction-changing characters are escaped, line breaks kept.
func shown(_ text: String) -> String {
    TextSafety.escaped(text, keepingLineBreaks: true)
}
