import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import LDAPProvider
import MockProvider
import PasswordHashing

#if canImport(Glibc)
    import Glibc
#endif

/// 1,000 protected actions at once across 50 users (ten more answering wrong passwords), each user with a
/// gatekeeper of its own, through the mock backend at no delay, the users file, a three-entry stack and
/// LDAP (the demo directory): throughput, p50 and p99 of an action from start to end, and the process's
/// peak resident memory during the run (its high-water mark, reset before each backend). Every run is
/// counted: the harness stops if an action ran unauthenticated, for the wrong user, or was lost.
enum LoadBench {
    struct Row {
        var backend: String
        var actions: Int
        var seconds: Double
        var p50: Double
        var p99: Double
        var peakKiB: Int
    }

    static let users = (0..<50).map { (username: "load\($0)", password: "load-password-\($0)") }
    static let intruders = (50..<60).map { (username: "load\($0)", password: "load-password-\($0)") }

    static func run() async throws -> [Row] {
        let load = GatekeeperLoad(accounts: users, intruders: intruders, actionsPerAccount: smoke ? 2 : 20)
        let everyone = users + intruders
        let mock = MockAuthProvider(
            users: everyone.map { .init(username: $0.username, password: Secret(copying: $0.password.utf8)) },
            delay: .zero)
        let directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-load-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = UsersFileStore(path: directory + "/users")
        for (index, account) in everyone.enumerated() {
            try store.addUser(
                account.username, hash: try PasswordHash.make(Secret(copying: account.password.utf8)),
                createFile: index == 0)
        }
        let file = try FileAuthProvider(.init(path: directory + "/users"))
        let passOver = ChainControl(actions: [.success: .done, .userUnknown: .ignore], default: .die)
        let stack = ProviderChain([
            .init(passOver, MockAuthProvider(users: [], delay: .zero, name: "empty")),
            .init(passOver, file),
            .init(.required, mock),
        ])
        let demo = try DemoDirectory()
        defer { demo.stop() }
        try demo.add(everyone)
        let ldap = LDAPAuthProvider(.init(uris: [demo.uri], base: demo.base, caFile: demo.caFile))

        var rows: [Row] = []
        for (name, provider) in [
            ("mock, no delay", mock as any AuthProvider), ("users file (yescrypt)", file), ("three-entry stack", stack),
            ("LDAP (StartTLS)", ldap),
        ] {
            resetPeakResident()
            let result = await load.run(against: provider)
            guard load.isSound(result) else {
                throw LoadBenchError.unsound(
                    "\(name): \(result.total) ran, \(result.wrongIdentity) for the wrong user, "
                        + "\(result.dismissed) dismissed, \(result.failed) failed")
            }
            rows.append(
                Row(
                    backend: name, actions: result.total, seconds: nanoseconds(result.elapsed) / 1e9,
                    p50: nanoseconds(result.latency(percentile: 0.5)) / 1e9,
                    p99: nanoseconds(result.latency(percentile: 0.99)) / 1e9, peakKiB: peakResidentKiB()))
        }
        return rows
    }

    /// Resets the high-water mark of resident memory to what is resident now (Linux 4.0 and later).
    static func resetPeakResident() {
        let file = open("/proc/self/clear_refs", O_WRONLY)
        guard file >= 0 else { return }
        _ = write(file, "5", 1)
        close(file)
    }

    /// The high-water mark of resident memory (`VmHWM`).
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
}

enum LoadBenchError: Error {
    case unsound(String)
}

func loadTable(_ result: Result<[LoadBench.Row], any Error>) -> String {
    guard case .success(let rows) = result else { return "load: not measured (\(result))\n" }
    return "1,000 protected actions at once, 50 users     actions/s   p50 ms    p99 ms    peak RSS\n"
        + rows.map { row in
            let name = "  " + row.backend
            return name + String(repeating: " ", count: max(1, 48 - name.count))
                + "\(fixed(Double(row.actions) / row.seconds, 0))".padding(toLength: 12, withPad: " ", startingAt: 0)
                + fixed(row.p50 * 1000, 2).padding(toLength: 10, withPad: " ", startingAt: 0)
                + fixed(row.p99 * 1000, 2).padding(toLength: 10, withPad: " ", startingAt: 0)
                + "\(row.peakKiB / 1024) MiB"
        }.joined(separator: "\n") + "\n\n"
}

func loadJSON(_ result: Result<[LoadBench.Row], any Error>) -> String {
    guard case .success(let rows) = result else { return "null" }
    return "["
        + rows.map { row in
            "{\"backend\":\"\(row.backend)\",\"actions\":\(row.actions),\"seconds\":\(fixed(row.seconds, 3)),"
                + "\"per_second\":\(fixed(Double(row.actions) / row.seconds, 1)),\"p50_ms\":\(fixed(row.p50 * 1000, 3)),"
                + "\"p99_ms\":\(fixed(row.p99 * 1000, 3)),\"peak_rss_kib\":\(row.peakKiB)}"
        }.joined(separator: ",") + "]"
}
