/// Checked parsers of configuration values, shared by the configuration file and by providers' options,
/// so that the same word means the same everywhere and no number can trap: every product is computed
/// with its overflow reported, and every value has a bound.
public enum ConfigurationValue {
    /// `90s`, `15m`, `8h` or `2d` as a duration of at most `maximum`; `nil` for anything else — another
    /// unit, a sign, a number past the bound, one too large to multiply.
    public static func duration(_ text: String, atMost maximum: Duration) -> Duration? {
        let units: [UInt8: Int64] = [0x73: 1, 0x6D: 60, 0x68: 3600, 0x64: 86_400]
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes.count <= 20, let unit = units[bytes[bytes.count - 1]] else { return nil }
        let digits = bytes.dropLast()
        guard digits.allSatisfy({ (0x30...0x39).contains($0) }),
            let number = Int64(String(decoding: digits, as: UTF8.self))
        else { return nil }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: unit)
        guard !overflow, Duration.seconds(seconds) <= maximum else { return nil }
        return .seconds(seconds)
    }
}
