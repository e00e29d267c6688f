public import Authentication
import FoundationEssentials
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Audit events sent to syslog with the `authpriv` facility — where `login` and `sudo` report — as
/// datagrams to the local syslog socket (`/dev/log`), in the format glibc's `syslog(3)` sends:
///
/// ```
/// <85>Nov 30 10:21:23 gatekeeper-run[4242]: signInFailed user="alice" provider="file" outcome="failure" reason="invalidCredentials" …
/// ```
///
/// Failures, lockouts and refusals are `notice`; the rest `info`. Sending never blocks (a full socket
/// drops the datagram) and never fails a login: a failure is reported once through `onFailure`.
public final class SyslogAuditSink: AuditSink {
    public let socketPath: String
    private let identifier: String
    private let onFailure: @Sendable (String) -> Void
    private let state = Locked<(socket: Int32, failing: Bool)>((-1, false))

    /// `authpriv`, as `LOG_AUTHPRIV`.
    static let facility: Int32 = 10 << 3
    static let notice: Int32 = 5
    static let info: Int32 = 6

    /// - Parameters:
    ///   - socketPath: The syslog socket; `/dev/log` unless a test binds its own.
    ///   - identifier: The program name in each message.
    ///   - onFailure: Told once when sending starts failing (and again after it worked since).
    public init(
        socketPath: String = "/dev/log",
        identifier: String,
        onFailure: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.socketPath = socketPath
        self.identifier = identifier
        self.onFailure = onFailure
    }

    deinit {
        state.withLock { if $0.socket >= 0 { close($0.socket) } }
    }

    /// The priority of an event: `notice` for what went wrong, `info` for the rest.
    static func priority(of kind: AuditEvent.Kind) -> Int32 {
        switch kind {
        case .signInFailed, .lockedOut, .accessDenied, .providerUnavailable, .configurationRefused, .requestRefused,
            .stateUnavailable:
            facility | notice
        default: facility | info
        }
    }

    /// `value` as RFC 5424 writes a structured-data parameter value: `\`, `"` and `]` each behind a `\`, so
    /// no value can end its field early or open another; then every control and invisible character shown
    /// as `\u{…}` (whose `\` is then the only single one).
    static func parameterValue(_ value: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            if scalar == "\\" || scalar == "\"" || scalar == "]" { escaped.append("\\") }
            escaped.append(scalar)
        }
        return TextSafety.escaped(String(escaped))
    }

    /// The datagram for `event`.
    func message(_ event: AuditEvent) -> [UInt8] {
        var time = time_t(event.time.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&time, &parts)
        var stamp = [CChar](repeating: 0, count: 32)
        let length = strftime(&stamp, stamp.count, "%b %e %H:%M:%S", &parts)
        let fields = AuditRecord.fields(event).filter { $0.0 != "time" && $0.0 != "event" && $0.0 != "pid" }
        let body = fields.map { key, value in "\(key)=\"\(Self.parameterValue(value))\"" }
        let text =
            "<\(Self.priority(of: event.kind))>\(String(decoding: stamp[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)) "
            + "\(identifier)[\(event.processID)]: \(event.kind.rawValue) \(body.joined(separator: " "))"
        // Syslog daemons take about 2 KiB reliably; a longer message is cut, never split.
        return Array(text.utf8.prefix(2048))
    }

    public func record(_ event: AuditEvent) {
        _ = keep(event)
    }

    /// Sends `event`; kept once the socket took the whole datagram.
    public func keep(_ event: AuditEvent) -> Bool {
        let datagram = message(event)
        let outcome: (sent: Bool, report: String?) = state.withLock { state in
            if state.socket < 0 {
                state.socket = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            }
            let sent = state.socket >= 0 && send(datagram, on: state.socket)
            let error = sent ? nil : errorDescription()
            if !sent, state.socket >= 0 {
                // A restarted syslog daemon has a new socket: connect afresh next time.
                close(state.socket)
                state.socket = -1
            }
            defer { state.failing = !sent }
            return (sent, sent || state.failing ? nil : error)
        }
        if let report = outcome.report { onFailure("\(socketPath): audit events cannot be sent to syslog: \(report)") }
        return outcome.sent
    }

    private func send(_ datagram: [UInt8], on socket: Int32) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            errno = ENAMETOOLONG
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let sent = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        socket, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), $0,
                        socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == datagram.count
    }
}

/// Sends every event to each of several sinks.
public struct AuditSinks: AuditSink {
    public let sinks: [any AuditSink]

    public init(_ sinks: [any AuditSink]) { self.sinks = sinks }

    public func record(_ event: AuditEvent) {
        _ = keep(event)
    }

    /// Every sink is given `event`; kept if any of them kept it.
    public func keep(_ event: AuditEvent) -> Bool {
        var kept = false
        for sink in sinks { kept = sink.keep(event) || kept }
        return kept
    }

    /// The first sink's digest, so every sink writes the same one.
    public func digest(ofUnverifiedName name: String) -> String {
        sinks.first?.digest(ofUnverifiedName: name) ?? AuditDigest.processKey.digest(of: name)
    }
}
