extension Array where Element == String {
    /// The strings with `separator` between them, as the standard library's `joined(separator:)` gives
    /// them. The standard library's own, for an array of strings, cannot be specialised where it is called:
    /// its first call in a run looked up an associated type by searching every protocol conformance in the
    /// program, a ninth of what `gatekeeper-run --help` ran. Every module that imports this one uses this.
    package func joined(separator: String = "") -> String {
        var text = ""
        text.reserveCapacity(reduce(separator.utf8.count * Swift.max(count - 1, 0)) { $0 + $1.utf8.count })
        for (index, element) in enumerated() {
            if index > 0 { text += separator }
            text += element
        }
        return text
    }
}
