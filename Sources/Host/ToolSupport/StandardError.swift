import Authentication
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Writes `text` to standard error, unbuffered: for the executables' messages. Anything unprintable but
/// line breaks is escaped, as messages may quote names and reasons from files or modules. What was printed
/// to standard output before goes out first, so one pipe taking both reads them in the order a terminal
/// shows them.
public func writeStandardError(_ text: String) {
    fflush(nil)
    writeAll(2, Array(TextSafety.escaped(text, keepingLineBreaks: true).utf8))
}
