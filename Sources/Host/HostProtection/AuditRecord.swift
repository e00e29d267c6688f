import Authentication
import FoundationEssentials
import GatekeeperSupport

/// How events are written as text: one JSON object a line, and the `key=value` message syslog gets.
enum AuditRecord {
    /// The longest detail kept (a stack's trace); longer ones are cut, so a record stays small.
    static let maxDetailBytes = 4096

    /// The outcome an event stands for, as the JSON log's `outcome`.
    static func outcome(of kind: AuditEvent.Kind) -> String? {
        switch kind {
        case .signedIn, .cachedLogin: "success"
        case .signInFailed, .lockedOut, .accessDenied, .providerUnavailable, .configurationRefused, .requestRefused:
            "failure"
        case .signInCancelled: "cancelled"
        default: nil
        }
    }

    /// The fields of `event`, in a fixed order, each value already safe to print.
    static func fields(_ event: AuditEvent) -> [(String, String)] {
        var fields: [(String, String)] = [
            ("time", event.time.formatted(.iso8601)), ("event", event.kind.rawValue),
        ]
        if let username = event.username { fields.append(("user", username)) }
        if let digest = event.userDigest { fields.append(("user_digest", digest)) }
        fields.append(("provider", event.provider))
        if let entry = event.stackEntry { fields.append(("entry", entry)) }
        if let outcome = outcome(of: event.kind) { fields.append(("outcome", outcome)) }
        if let reason = event.reason {
            fields.append(("reason", reason.code.description))
            fields.append(("message", reason.description))
        }
        if let terminal = event.terminal { fields.append(("tty", terminal)) }
        if let host = event.remoteHost { fields.append(("rhost", host)) }
        if let service = event.service { fields.append(("service", service)) }
        fields.append(("pid", String(event.processID)))
        if let detail = event.detail {
            fields.append(("detail", String(decoding: detail.utf8.prefix(maxDetailBytes), as: UTF8.self)))
        }
        return fields
    }

    /// `text` as a JSON string (``TextSafety/jsonQuoted(_:)``).
    static func json(_ text: String) -> String { TextSafety.jsonQuoted(text) }
}
