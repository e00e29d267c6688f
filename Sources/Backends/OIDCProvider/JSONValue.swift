/// A JSON document as the provider reads one: an answer of the identity provider, or a token's header and
/// claims.
///
/// Parsed strictly (RFC 8259) in one pass over the bytes, in time linear in their length: nesting deeper
/// than ``maxDepth`` is refused (nothing the provider reads nests more than a few levels), and so is an
/// object that names a member twice — RFC 7515 §4 and RFC 7519 §4 let a token with duplicate names be
/// refused, and a parser that keeps the first where another keeps the last would let the two read one
/// token as two different people.
enum JSONValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    /// The most arrays and objects one inside another.
    static let maxDepth = 32

    /// `bytes` parsed as a JSON object; `nil` when they are not one.
    static func object(parsing bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let fields)? = parse(bytes) else { return nil }
        return fields
    }

    /// `bytes` parsed as one JSON value (white space around it allowed); `nil` when they are not one.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        var parser = Parser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhiteSpace()
        return parser.index == bytes.count ? value : nil
    }

    var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    var number: Double? {
        if case .number(let value) = self { value } else { nil }
    }

    /// A whole number of seconds (a NumericDate, `expires_in`), within what a date can be.
    var seconds: Int64? {
        guard case .number(let value) = self, value.isFinite, value.magnitude < 1e15 else { return nil }
        return Int64(value.rounded(.down))
    }

    /// The strings of an array, or the words of a string ("a b c"), as claims for groups come.
    var strings: [String]? {
        switch self {
        case .string(let text): text.split(separator: " ").map(String.init)
        case .array(let values): values.compactMap(\.string)
        default: nil
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhiteSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < JSONValue.maxDepth else { return nil }
            skipWhiteSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count,
                bytes[index..<index + count].elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: count))
            else { return nil }
            index += count
            return value
        }

        mutating func object(depth: Int) -> JSONValue? {
            index += 1
            var fields: [String: JSONValue] = [:]
            skipWhiteSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            while true {
                skipWhiteSpace()
                // Names of at most 256 bytes: hashing a String normalises it, in time that grows with the
                // square of a run of combining marks; every name OpenID Connect uses is short.
                let nameStart = index
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let name = string(),
                    index - nameStart <= 258
                else { return nil }
                skipWhiteSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let member = value(depth: depth + 1), fields.updateValue(member, forKey: name) == nil else {
                    return nil
                }
                skipWhiteSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(fields)
                }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            index += 1
            var elements: [JSONValue] = []
            skipWhiteSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                guard let element = value(depth: depth + 1) else { return nil }
                elements.append(element)
                skipWhiteSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
            }
        }

        /// A string at `index` (its opening quote): escapes decoded, UTF-8 checked, raw control
        /// characters and lone surrogates refused.
        mutating func string() -> String? {
            index += 1
            var output: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: output, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0C)
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "r"): output.append(0x0D)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800...0xDBFF).contains(code) {
                            // A high surrogate must be followed by an escaped low one.
                            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { return nil }
                            index += 2
                            guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(code) {
                            return nil
                        }
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        output += Array(String(Character(scalar)).utf8)
                    default:
                        return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    output.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var code: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = hexDigit(byte) else { return nil }
                code = code << 4 | digit
            }
            index += 4
            return code
        }

        func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, at most 64 bytes; a number too large for
        /// a Double is refused rather than read as infinity.
        mutating func number() -> JSONValue? {
            let start = index
            func digits() -> Int {
                let first = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                return index - first
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return nil
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard digits() > 0 else { return nil }
            }
            guard index - start <= 64, let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)),
                value.isFinite
            else { return nil }
            return .number(value)
        }
    }
}
