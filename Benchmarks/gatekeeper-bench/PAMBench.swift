import Authentication
import AuthenticationTesting
import CPAMBaseline
import Foundation
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
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-bench-\(UUID())").path
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
