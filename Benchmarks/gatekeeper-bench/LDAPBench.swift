import Authentication
import AuthenticationTesting
import CLDAPBaseline
import Foundation
import LDAPProvider

/// 1,000 logins from 16 concurrent tasks through ``LDAPAuthProvider`` (StartTLS, pooled connections, a
/// bound of 16) against the same work with the raw libldap calls in C on 16 threads, each with its own
/// connection — both against a throwaway slapd started for the run (`Examples/ldap/demo.sh --start`).
/// Beside them, the raw calls doing all the provider does for a login (the bind's password-policy control
/// and the search for the user's groups), which the goal's baseline does not.
struct LDAPBench {
    struct Figures {
        var rawSeconds: Double
        /// The slowest of the raw rounds: how far the baseline itself moves within one run.
        var rawSlowestSeconds: Double = 0
        /// The raw calls doing the provider's whole work for a login.
        var sameWorkSeconds: Double = .infinity
        var providerSeconds: Double
        var p50: Double
        var p99: Double
        var mostOpen: Int
        var bound: Int
        let logins = scaled(1000)
    }

    /// The figures, or why they could not be measured.
    static func measured() async -> Result<Figures, any Error> { await measuring { try await run() } }

    static func run() async throws -> Figures {
        let demo = try DemoDirectory()
        defer { demo.stop() }
        let (uri, base, caFile) = (demo.uri, demo.base, demo.caFile)
        let bound = 16
        let provider = LDAPAuthProvider(
            .init(uris: [uri], base: base, caFile: caFile, timeout: .seconds(10), connections: bound))
        // Warm up both.
        _ = gatekeeper_ldap_baseline(uri, caFile, base, "alice", "wonderland", 32, 16, 0)
        _ = gatekeeper_ldap_baseline(uri, caFile, base, "alice", "wonderland", 32, 16, 1)
        _ = try await logins(provider, 32)
        var figures = Figures(
            rawSeconds: .infinity, providerSeconds: .infinity, p50: 0, p99: 0, mostOpen: 0, bound: bound)
        // Best of five interleaved rounds: slapd shares the machine's cores with both clients.
        for _ in 0..<scaled(5) {
            let raw = gatekeeper_ldap_baseline(uri, caFile, base, "alice", "wonderland", Int32(figures.logins), 16, 0)
            guard raw > 0 else { throw LDAPBenchError.rawLoginFailed }
            figures.rawSeconds = min(figures.rawSeconds, raw)
            figures.rawSlowestSeconds = max(figures.rawSlowestSeconds, raw)
            let same = gatekeeper_ldap_baseline(uri, caFile, base, "alice", "wonderland", Int32(figures.logins), 16, 1)
            guard same > 0 else { throw LDAPBenchError.rawLoginFailed }
            figures.sameWorkSeconds = min(figures.sameWorkSeconds, same)
            let (seconds, latencies) = try await logins(provider, figures.logins)
            if seconds < figures.providerSeconds {
                figures.providerSeconds = seconds
                let sorted = latencies.sorted()
                figures.p50 = sorted[sorted.count / 2]
                figures.p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            }
        }
        figures.mostOpen = provider.connectionStatistics.mostOpen
        return figures
    }

    /// `count` logins from 16 tasks; the seconds in all and each login's seconds.
    static func logins(_ provider: LDAPAuthProvider, _ count: Int) async throws -> (Double, [Double]) {
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for task in 0..<16 {
                let share = count / 16 + (task < count % 16 ? 1 : 0)
                group.addTask {
                    var mine: [Double] = []
                    for _ in 0..<share {
                        let begun = ContinuousClock.now
                        let outcome = try await provider.authenticate(
                            AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland"))))
                        guard case .authenticated = outcome else { throw LDAPBenchError.loginFailed("\(outcome)") }
                        mine.append(nanoseconds(begun.duration(to: .now)) / 1e9)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        return (nanoseconds(start.duration(to: .now)) / 1e9, latencies)
    }
}

enum LDAPBenchError: Error {
    case noDirectory
    case rawLoginFailed
    case loginFailed(String)
}

func ldapTable(_ result: Result<LDAPBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "ldap: not measured (\(result))\n" }
    let raw = Double(f.logins) / f.rawSeconds
    let ours = Double(f.logins) / f.providerSeconds
    let sameWork = Double(f.logins) / f.sameWorkSeconds
    return """
        1,000 LDAP logins, 16 at once, raw libldap (C)  \(fixed(raw, 1)) logins/s
        the same through LDAPAuthProvider               \(fixed(ours, 1)) logins/s, p50 \(fixed(f.p50 * 1000, 2)) ms, p99 \(fixed(f.p99 * 1000, 2)) ms
        ratio provider / raw throughput                 \(fixed(ours / raw))         \(Goals.atLeast("LDAP: provider / raw libldap throughput", ours / raw, 0.90))
        raw libldap's own rounds, fastest / slowest     \(fixed(f.rawSlowestSeconds / f.rawSeconds))         how far the baseline moves in one run
          raw, doing the provider's work too (C)        \(fixed(sameWork, 1)) logins/s: the bind's policy control, the groups
          ratio provider / that                         \(fixed(ours / sameWork))
        connections open at most / bound               \(f.mostOpen) / \(f.bound)

        """
}

func ldapJSON(_ result: Result<LDAPBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "null" }
    let raw = Double(f.logins) / f.rawSeconds
    let ours = Double(f.logins) / f.providerSeconds
    return """
        {"logins":\(f.logins),"raw_per_s":\(fixed(raw, 1)),"provider_per_s":\(fixed(ours, 1)),\
        "ratio":\(fixed(ours / raw)),"goal_ratio":0.90,"p50_ms":\(fixed(f.p50 * 1000, 2)),"p99_ms":\(fixed(f.p99 * 1000, 2)),\
        "raw_round_spread":\(fixed(f.rawSlowestSeconds / f.rawSeconds)),\
        "raw_same_work_per_s":\(fixed(Double(f.logins) / f.sameWorkSeconds, 1)),\
        "ratio_same_work":\(fixed(f.sameWorkSeconds / f.providerSeconds)),"most_open":\(f.mostOpen),"bound":\(f.bound)}
        """
}

/// The throwaway directory of `make ldap-demo` (Examples/ldap/demo.sh), started for a measurement and
/// stopped after it.
final class DemoDirectory {
    let directory: String
    /// StartTLS, required.
    let uri: String
    /// TLS from the first byte.
    let ldapsURI: String
    let base = "dc=example,dc=test"
    var caFile: String { directory + "/cert.pem" }

    init() throws {
        directory =
            privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-ldap-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
            .standardized.path
        guard system("bash '\(repository)/Examples/ldap/demo.sh' --start '\(directory)' >/dev/null 2>&1") == 0,
            let port = try? String(contentsOfFile: directory + "/port", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        else {
            // Whatever was started and made goes with the failure.
            _ = system("kill $(cat '\(directory)/slapd.pid' 2>/dev/null) 2>/dev/null; sleep 1; rm -rf '\(directory)'")
            throw LDAPBenchError.noDirectory
        }
        uri = "ldap://127.0.0.1:\(port)"
        let ldapsPort =
            (try? String(contentsOfFile: directory + "/ldaps-port", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        ldapsURI = "ldaps://127.0.0.1:\(ldapsPort)"
        // A watchdog stops the directory when this process ends, however it ends (a crash included), and
        // removes what it was made of.
        _ = system(
            "(while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; kill $(cat '\(directory)/slapd.pid') 2>/dev/null;"
                + " sleep 1; rm -rf '\(directory)') </dev/null >/dev/null 2>&1 &")
    }

    /// Adds accounts (through `ldapadd`, as the directory's administrator).
    func add(_ accounts: [(username: String, password: String)]) throws {
        var ldif = ""
        for (index, account) in accounts.enumerated() {
            ldif += """
                dn: uid=\(account.username),ou=people,\(base)
                objectClass: inetOrgPerson
                objectClass: posixAccount
                uid: \(account.username)
                cn: \(account.username)
                sn: Load
                uidNumber: \(3000 + index)
                gidNumber: 2000
                homeDirectory: /home/\(account.username)
                userPassword: \(account.password)


                """
        }
        let file = directory + "/load.ldif"
        try ldif.write(toFile: file, atomically: true, encoding: .utf8)
        guard
            system("ldapadd -x -H '\(uri)' -D 'cn=admin,\(base)' -w admin-secret -f '\(file)' >/dev/null 2>&1") == 0
        else { throw LDAPBenchError.loginFailed("ldapadd refused the load accounts") }
    }

    /// slapd's processor time so far, in nanoseconds: the sum over its threads (/proc/PID/task/*/schedstat).
    func slapdCPU() -> Double {
        guard let text = try? String(contentsOfFile: directory + "/slapd.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
            let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        else { return 0 }
        return threads.reduce(0) { sum, thread in
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8)) ?? ""
            return sum + (Double(stat.split(separator: " ").first ?? "") ?? 0)
        }
    }

    /// Stops the directory server and removes its files.
    func stop() {
        if let text = try? String(contentsOfFile: directory + "/slapd.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
        {
            kill(pid, SIGTERM)
            for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
            // A server still writing its files would leave them behind the removal below: it ends first.
            if kill(pid, 0) == 0 {
                kill(pid, SIGKILL)
                for _ in 0..<200 where kill(pid, 0) == 0 { usleep(10_000) }
            }
        }
        for _ in 0..<10 where FileManager.default.fileExists(atPath: directory) {
            try? FileManager.default.removeItem(atPath: directory)
            usleep(50_000)
        }
    }
}
