import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import HostProtection
import PasswordHashing

/// What a host tool's protections add to a failed login: the attempt counted in the pam_faillock-format
/// file before the check (one locked read and write, which is also the lockout check), and the audit
/// events a failed login writes (attempt, failure) to the JSON log and to syslog — against the yescrypt
/// check the login itself costs, measured in the same run.
struct HostBench {
    struct Figures {
        var yescrypt: Double
        var memoryCheck: Double
        var faillockCheck: Double
        var faillockFailure: Double
        var faillockAttempt: Double
        var jsonEvent: Double
        var syslogEvent: Double

        /// The attempt counted before its check (which stands as the failure) and two events to each sink:
        /// what a failed login pays for its protections.
        var perFailedLogin: Double { faillockAttempt + 2 * (jsonEvent + syslogEvent) }
    }

    static func run() throws -> Figures {
        let directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = LockoutPolicy(deny: 1000, interval: .seconds(3600))
        let faillock = try FaillockStore(directory: directory + "/tally")
        let memory = MemoryLockoutStore()
        for _ in 0..<4 {
            _ = try faillock.recordFailure(of: LockoutAccount("alice"), source: .terminal("/dev/pts/1"), policy: policy)
            _ = memory.recordFailure(of: LockoutAccount("alice"), source: .terminal("/dev/pts/1"), policy: policy)
        }
        let json = try JSONAuditLog(path: directory + "/audit/audit.jsonl")
        // A datagram socket standing in for /dev/log, drained between rounds.
        let listener = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(listener) }
        let socketPath = directory + "/log"
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in socketPath.utf8.enumerated() { raw[index] = byte }
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        func drain() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ recv(listener, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {
            }
        }
        let syslog = SyslogAuditSink(socketPath: socketPath, identifier: "gatekeeper-bench")
        let event = AuditEvent(
            kind: .signInFailed, username: "alice", provider: "file", reason: .invalidCredentials,
            terminal: "/dev/pts/1")
        let hash = try PasswordHash.make(Secret(copying: "bench-password".utf8), scheme: .yescrypt)
        let wrong = Secret(copying: "wrong-password".utf8)

        func perCall(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
            let start = ContinuousClock.now
            for _ in 0..<count { try body() }
            return nanoseconds(start.duration(to: .now)) / Double(count)
        }
        var figures = Figures(
            yescrypt: .infinity, memoryCheck: .infinity, faillockCheck: .infinity, faillockFailure: .infinity,
            faillockAttempt: .infinity, jsonEvent: .infinity, syslogEvent: .infinity)
        for _ in 0..<5 {
            // Interleaved, best of each round.
            figures.yescrypt = min(figures.yescrypt, perCall(5) { _ = hash.verify(wrong) })
            figures.memoryCheck = min(
                figures.memoryCheck,
                perCall(scaled(10_000)) { _ = memory.status(of: LockoutAccount("alice"), policy: policy) })
            figures.faillockCheck = min(
                figures.faillockCheck,
                try perCall(scaled(2_000)) { _ = try faillock.status(of: "alice", policy: policy) })
            figures.faillockFailure = min(
                figures.faillockFailure,
                try perCall(200) {
                    _ = try faillock.recordFailure(
                        of: LockoutAccount("bob"), source: .terminal("/dev/pts/1"), policy: policy)
                })
            try faillock.unlock("bob")
            figures.faillockAttempt = min(
                figures.faillockAttempt,
                try perCall(200) {
                    _ = try faillock.beginAttempt(
                        LockoutAccount("carol"), source: .terminal("/dev/pts/1"), policy: policy)
                })
            try faillock.unlock("carol")
            figures.jsonEvent = min(figures.jsonEvent, perCall(500) { json.record(event) })
            figures.syslogEvent = min(figures.syslogEvent, perCall(100) { syslog.record(event) })
            drain()
        }
        return figures
    }
}

func hostTable(_ result: Result<HostBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "host protections: not measured (\(result))\n" }
    return """
        lockout check, in memory                        \(fixed(figures.memoryCheck / 1000, 3)) µs
        lockout check, pam_faillock file                \(fixed(figures.faillockCheck / 1000, 3)) µs
        count a failure, pam_faillock file              \(fixed(figures.faillockFailure / 1000, 3)) µs
        count an attempt before its check, same file    \(fixed(figures.faillockAttempt / 1000, 3)) µs
        audit event, JSON chain                         \(fixed(figures.jsonEvent / 1000, 3)) µs
        audit event, syslog datagram                    \(fixed(figures.syslogEvent / 1000, 3)) µs
        protections of a failed login / its yescrypt    \(fixed(figures.perFailedLogin / figures.yescrypt, 4))       \(Goals.atMost("host protections of a failed login / its yescrypt", figures.perFailedLogin / figures.yescrypt, 0.02, digits: 4))

        """
}

func hostJSON(_ result: Result<HostBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    return """
        {"yescrypt_ms":\(fixed(figures.yescrypt / 1e6, 3)),"memory_check_us":\(fixed(figures.memoryCheck / 1000, 3)),\
        "faillock_check_us":\(fixed(figures.faillockCheck / 1000, 3)),\
        "faillock_failure_us":\(fixed(figures.faillockFailure / 1000, 3)),\
        "faillock_attempt_us":\(fixed(figures.faillockAttempt / 1000, 3)),\
        "json_event_us":\(fixed(figures.jsonEvent / 1000, 3)),"syslog_event_us":\(fixed(figures.syslogEvent / 1000, 3)),\
        "per_failed_login_over_yescrypt":\(fixed(figures.perFailedLogin / figures.yescrypt, 4)),"goal":0.02}
        """
}
