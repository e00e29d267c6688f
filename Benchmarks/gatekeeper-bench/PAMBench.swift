import Authentication
import AuthenticationTesting
import BlockingPools
import CPAMBaseline
import Foundation
import GatekeeperSupport
import PAMProvider

/// PAM logins through ``PAMAuthProvider`` against the same logins made with the raw libpam calls in C,
/// on a `pam_matrix` service in a configuration directory of the benchmark's own.
struct PAMBench {
    let directory: String
    let service = "gk-bench"
    let provider: PAMAuthProvider

    /// `nil` when pam_wrapper's `pam_matrix.so` is not installed.
    init?() throws {
        let candidates = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/pam_wrapper/pam_matrix.so" }
        guard let matrix = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else { return nil }
        directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let passdb = directory + "/passdb"
        try "root:secret:\(service)\n".write(toFile: passdb, atomically: true, encoding: .utf8)
        try "auth required \(matrix) passdb=\(passdb)\naccount required \(matrix) passdb=\(passdb)\n"
            .write(toFile: directory + "/" + service, atomically: true, encoding: .utf8)
        provider = try PAMAuthProvider(.init(service: service, configurationDirectory: directory))
    }

    /// Seconds for `count` logins with the raw libpam calls.
    func baseline(_ count: Int) -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count {
            let status = gatekeeper_pam_baseline_login(service, "root", "secret", directory)
            precondition(status == 0, "the baseline login failed with PAM status \(status)")
        }
        return nanoseconds(start.duration(to: .now)) / 1e9
    }

    /// Seconds for `count` logins through the provider.
    nonisolated func provider(_ count: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count {
            let outcome = try await provider.authenticate(
                AuthRequest(username: "root", conversation: ScriptedConversation(.secret("secret")))
            )
            guard case .authenticated = outcome else { fatalError("a benchmark login failed: \(outcome)") }
        }
        return nanoseconds(start.duration(to: .now)) / 1e9
    }

    /// Seconds for `count` raw libpam logins, each run on a pool thread and awaited from this task: what the
    /// two handoffs every login needs (to a thread that may block, and back) cost, without the provider.
    func baselineOnPoolThread(_ count: Int) async -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count {
            let status = await PAMBench.pool.run { [service, directory] in
                gatekeeper_pam_baseline_login(service, "root", "secret", directory)
            }
            precondition(status == 0, "the baseline login failed with PAM status \(String(describing: status))")
        }
        return nanoseconds(start.duration(to: .now)) / 1e9
    }

    static let pool = BlockingPool(name: "bench.pam", maxThreads: 4, maxIdle: 4)

    /// Seconds for `count` look-ups of the account and its groups, in C: what the provider's identity
    /// costs on top of a login.
    func identity(_ count: Int) -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count { precondition(gatekeeper_identity_baseline("root") >= 1, "root has no groups") }
        return nanoseconds(start.duration(to: .now)) / 1e9
    }

    struct Figures {
        var baseline = Double.infinity
        var onPoolThread = Double.infinity
        var identity = Double.infinity
        var provider = Double.infinity
        var rssBefore = 0
        var rssAfter = 0
        var logins = scaled(200)
    }

    /// 200 logins each way, interleaved, best of 5; then 1,000 logins through the provider with the
    /// resident memory before and after. `nil` without pam_matrix.
    static func measured() async throws -> Figures? {
        guard let pam = try PAMBench() else { return nil }
        defer { pam.remove() }
        var figures = Figures()
        _ = pam.baseline(20)
        _ = await pam.baselineOnPoolThread(20)
        _ = try await pam.provider(20)
        for _ in 0..<5 {
            figures.baseline = min(figures.baseline, pam.baseline(figures.logins))
            figures.onPoolThread = min(figures.onPoolThread, await pam.baselineOnPoolThread(figures.logins))
            figures.identity = min(figures.identity, pam.identity(figures.logins))
            figures.provider = min(figures.provider, try await pam.provider(figures.logins))
        }
        _ = try await pam.provider(100)
        figures.rssBefore = residentKiB()
        _ = try await pam.provider(scaled(1000))
        figures.rssAfter = residentKiB()
        return figures
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The resident set size of this process, in KiB.
func residentKiB() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
        let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

func pamTable(_ figures: PAMBench.Figures?) -> String {
    guard let f = figures else { return "PAM: skipped, pam_matrix.so is not installed (libpam-wrapper)\n" }
    let perLogin = { (seconds: Double) in fixed(seconds / Double(f.logins) * 1e6, 1) }
    return """
        \(f.logins) PAM logins, raw libpam calls (C)            \(fixed(f.baseline * 1000)) ms (\(perLogin(f.baseline)) µs each)
          the same, each on a pool thread, awaited      \(fixed(f.onPoolThread * 1000)) ms (+\(perLogin(f.onPoolThread - f.baseline)) µs: to the thread and back)
          the account and its groups (identity), in C   \(fixed(f.identity * 1000)) ms (\(perLogin(f.identity)) µs each)
        \(f.logins) PAM logins, PAMAuthProvider                 \(fixed(f.provider * 1000)) ms (+\(perLogin(f.provider - f.onPoolThread - f.identity)) µs more: Swift's share, the question)
        ratio provider / (raw libpam + identity)        \(fixed(f.provider / (f.baseline + f.identity)))
        ratio provider / raw libpam                     \(fixed(f.provider / f.baseline))         \(Goals.atMost("PAM provider / raw libpam, in process", f.provider / f.baseline, 1.25))
        resident memory before / after 1,000 logins     \(f.rssBefore) / \(f.rssAfter) KiB

        """
}

func pamJSON(_ figures: PAMBench.Figures?) -> String {
    guard let f = figures else { return "null" }
    return """
        {"logins":\(f.logins),"raw_ms":\(fixed(f.baseline * 1000)),"raw_on_pool_thread_ms":\(fixed(f.onPoolThread * 1000)),\
        "identity_ms":\(fixed(f.identity * 1000)),\
        "provider_ms":\(fixed(f.provider * 1000)),"ratio":\(fixed(f.provider / f.baseline)),"goal_ratio":1.25,\
        "rss_before_kib":\(f.rssBefore),"rss_after_1000_kib":\(f.rssAfter)}
        """
}
