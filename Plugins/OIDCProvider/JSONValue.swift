import FoundationEssentials

/// A JSON document as the provider reads one: an answer of the identity provider, or a token's header and
/// claims. Parsed by FoundationEssentials' decoder, which bounds nesting; the provider bounds sizes.
enum JSONValue: Sendable, Equatable, Decodable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// `bytes` parsed as a JSON object; `nil` when they are not one.
    static func object(parsing bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            return nil
        }
        return fields
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
}
