/// The one grammar of values, shared by the configuration file, every provider's options and the
/// command line, so that the same word means the same everywhere and no number can trap: every value
/// has a bound, every product is computed with its overflow reported, and every refusal says what was
/// expected.
///
/// | kind | written | |
/// |---|---|---|
/// | duration | `500ms`, `2s`, `2.5m`, `8h`, `7d`; a bare number is seconds (`0.5`, `90`) | at most three decimals, whole milliseconds |
/// | count | `3`, `1000` | digits only |
/// | boolean | `yes` or `no` (also `true`/`false`, `on`/`off`) | |
/// | list | `a,b,c` | no empty item |
/// | absolute path | `/var/lib/gatekeeper` | no `..` |
/// | URI | `ldaps://host:636` | one of the schemes the option names |
public enum ConfigurationValue {
    /// `name=value`, split at its first `=`; `nil` for a word without one or with no name.
    public static func pair(_ word: some StringProtocol) -> (name: String, value: String)? {
        guard let equals = word.firstIndex(of: "="), equals != word.startIndex else { return nil }
        return (String(word[..<equals]), String(word[word.index(after: equals)...]))
    }

    private static let units: [(suffix: String, milliseconds: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    /// A duration in `range`: a number (digits, then at most three decimals) and a unit (`ms`, `s`, `m`,
    /// `h`, `d`; none is seconds), a whole number of milliseconds.
    /// - Throws: ``ConfigurationError/invalid(expected:)`` for another unit, a sign, an exponent, a value
    ///   finer than a millisecond, one past the bound or too large to compute.
    public static func duration(_ text: String, in range: ClosedRange<Duration>) throws(ConfigurationError) -> Duration
    {
        // Made only when refusing: a login reads durations too, and a message is not free.
        func invalid() -> ConfigurationError {
            let examples =
                range.upperBound <= .seconds(60)
                ? "2s, 1.5s or 500ms"
                : range.upperBound <= .seconds(3600) ? "90s, 2.5m or 500ms" : "90s, 2.5m, 8h or 7d"
            return ConfigurationError.invalid(
                expected:
                    "a duration from \(describe(range.lowerBound)) to \(describe(range.upperBound)), such as \(examples)"
            )
        }
        var bytes = Array(text.utf8)[...]
        var unit: Int64 = 1000
        if bytes.count > 2, bytes.suffix(2).elementsEqual("ms".utf8) {
            unit = 1
            bytes = bytes.dropLast(2)
        } else if bytes.count > 1, let last = bytes.last,
            let named = units.first(where: { $0.suffix.utf8.elementsEqual([last]) })
        {
            unit = named.milliseconds
            bytes = bytes.dropLast()
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : []
        guard !whole.isEmpty, whole.count <= 18, parts.count == 1 || !fraction.isEmpty, fraction.count <= 3,
            (whole + fraction).allSatisfy({ (0x30...0x39).contains($0) }),
            let number = Int64(String(decoding: whole, as: UTF8.self))
        else { throw invalid() }
        var scale: Int64 = 1
        for _ in fraction { scale *= 10 }
        let decimals = Int64(String(decoding: fraction, as: UTF8.self)) ?? 0
        let (integral, overflow) = number.multipliedReportingOverflow(by: unit)
        // `decimals * unit` is below 1000 × 86,400,000: no overflow.
        let (fractional, remainder) = (decimals * unit).quotientAndRemainder(dividingBy: scale)
        let (total, overflowAgain) = integral.addingReportingOverflow(fractional)
        guard !overflow, !overflowAgain, remainder == 0 else { throw invalid() }
        let duration = Duration.milliseconds(total)
        guard range.contains(duration) else { throw invalid() }
        return duration
    }

    /// A duration as the grammar writes it, in the largest unit that is exact: `15m`, `90s`, `500ms`,
    /// `0` — what ``duration(_:in:)`` reads back as the same duration.
    public static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (milliseconds, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        // Beyond what any bound allows (some 292 million years): in seconds, which cannot overflow.
        guard !overflow, !overflowAgain else { return "\(seconds)s" }
        if milliseconds == 0 { return "0" }
        for (suffix, unit) in units.reversed() where milliseconds % unit == 0 {
            return "\(milliseconds / unit)\(suffix)"
        }
        return "\(milliseconds)ms"
    }

    /// A count in `range`: digits only, no sign.
    public static func count(_ text: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let count = Int(text), range.contains(count)
        else { throw ConfigurationError.invalid(expected: "a number from \(range.lowerBound) to \(range.upperBound)") }
        return count
    }

    /// `yes`/`no`, `true`/`false` or `on`/`off`.
    public static func boolean(_ text: String) throws(ConfigurationError) -> Bool {
        switch text {
        case "yes", "true", "on": return true
        case "no", "false", "off": return false
        default: throw ConfigurationError.invalid(expected: "yes or no")
        }
    }

    /// A comma-separated list, with no empty item.
    public static func list(_ text: String) throws(ConfigurationError) -> [String] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !items.contains(where: \.isEmpty) else {
            throw ConfigurationError.invalid(expected: "a list such as a,b,c, with no empty item")
        }
        return items
    }

    /// An absolute path without `..`, so that it does not depend on where the tool was started, in one
    /// spelling: `//x/./y/` is `/x/y`, so that two spellings of one file are seen to be one.
    public static func absolutePath(_ text: String) throws(ConfigurationError) -> String {
        let components = text.split(separator: "/").filter { $0 != "." }
        guard text.hasPrefix("/"), !components.contains("..") else {
            throw ConfigurationError.invalid(expected: "an absolute path without ..")
        }
        return "/" + components.joined(separator: "/")
    }

    /// A URI of one of `schemes` (`["ldap", "ldaps"]`), with something after `scheme://`.
    public static func uri(_ text: String, schemes: [String]) throws(ConfigurationError) -> String {
        for scheme in schemes where text.hasPrefix(scheme + "://") && text.utf8.count > scheme.utf8.count + 3 {
            return text
        }
        throw ConfigurationError.invalid(
            expected: "a URI starting with " + schemes.map { $0 + "://" }.joined(separator: " or "))
    }
}
