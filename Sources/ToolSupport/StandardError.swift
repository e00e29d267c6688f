import Authentication
import GatekeeperSupport

/// Writes `text` to standard error, unbuffered: for the executables' messages. Anything unprintable but
/// line breaks is escaped, as messages may quote names and reasons from files or modules.
public func writeStandardError(_ text: String) {
    writeAll(2, Array(TextSafety.escaped(text, keepingLineBreaks: true).utf8))
}
