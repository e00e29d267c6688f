import Authentication
import AuthenticationTesting
import CPAMBaseline
import DebugProvider
import Foundation

/// A stack of five `debug` entries (each answering success, `required`) through this package's chain,
/// against the same stack through libpam (five `auth required pam_debug.so` lines; `pam_start_confdir`,
/// `pam_authenticate`, `pam_end` a login), in process; and a stack of one through each, for what a further
/// entry costs. Best of 5 rounds, interleaved.
enum ChainBench {
    struct Figures {
        var one: Double
        var five: Double
        var libpamOne: Double
        var libpamFive: Double

        /// What one more entry costs a login through the chain, and through libpam (ns).
        var perEntry: Double { (five - one) / 4 }
        var libpamPerEntry: Double { (libpamFive - libpamOne) / 4 }
    }

    enum Skipped: Error, CustomStringConvertible {
        case noPamDebug, failed(Int32)
        var description: String {
            switch self {
            case .noPamDebug: "pam_debug.so (libpam-modules) is not installed"
            case .failed(let status): "a login through pam_debug failed with PAM status \(status)"
            }
        }
    }

    static func run() async throws -> Figures {
        let one = ProviderChain([.init(.required, DebugAuthProvider(result: .success))])
        let five = ProviderChain((0..<5).map { _ in .init(.required, DebugAuthProvider(result: .success)) })
        let request = AuthRequest(username: "alice", conversation: ScriptedConversation())
        func perLogin(_ chain: ProviderChain, _ count: Int) async throws -> Double {
            let start = clock.now
            for _ in 0..<count {
                guard case .authenticated = try await chain.authenticate(request) else {
                    fatalError("a debug login failed")
                }
            }
            return nanoseconds(start.duration(to: .now)) / Double(count)
        }

        let modules = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/security/pam_debug.so" }
        guard let debug = modules.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw Skipped.noPamDebug
        }
        let directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-stacks-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, count) in [("one", 1), ("five", 5)] {
            try String(repeating: "auth required \(debug)\n", count: count)
                .write(toFile: "\(directory)/\(name)", atomically: true, encoding: .utf8)
        }
        func libpamPerLogin(_ service: String, _ count: Int) throws -> Double {
            let start = clock.now
            for _ in 0..<count {
                let status = gatekeeper_pam_baseline_authenticate(service, "alice", directory)
                guard status == 0 else { throw Skipped.failed(status) }
            }
            return nanoseconds(start.duration(to: .now)) / Double(count)
        }

        _ = try await perLogin(one, scaled(2_000))
        _ = try await perLogin(five, scaled(2_000))
        _ = try libpamPerLogin("one", scaled(200))
        _ = try libpamPerLogin("five", scaled(200))
        var figures = Figures(one: .infinity, five: .infinity, libpamOne: .infinity, libpamFive: .infinity)
        for _ in 0..<5 {
            figures.one = min(figures.one, try await perLogin(one, scaled(20_000)))
            figures.five = min(figures.five, try await perLogin(five, scaled(20_000)))
            figures.libpamOne = min(figures.libpamOne, try libpamPerLogin("one", scaled(2_000)))
            figures.libpamFive = min(figures.libpamFive, try libpamPerLogin("five", scaled(2_000)))
        }
        return figures
    }
}

func chainTable(_ result: Result<ChainBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "stacks: not measured (\(result))\n" }
    return """
        five debug entries, libpam (pam_debug.so)       \(fixed(f.libpamFive / 1000, 3)) µs a login, \(fixed(f.libpamPerEntry, 0)) ns an entry
        the same stack through the chain                \(fixed(f.five / 1000, 3)) µs a login, \(fixed(f.perEntry, 0)) ns an entry
        ratio chain / libpam, five entries              \(fixed(f.five / f.libpamFive, 3))        \(Goals.atMost("a stack of five debug entries: chain / libpam", f.five / f.libpamFive, 1.00, digits: 3))
        one entry: libpam / the chain                   \(fixed(f.libpamOne / 1000, 3)) µs / \(fixed(f.one / 1000, 3)) µs

        """
}

func chainJSON(_ result: Result<ChainBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "null" }
    return """
        {"one_us":\(fixed(f.one / 1000, 3)),"five_us":\(fixed(f.five / 1000, 3)),"per_entry_ns":\(fixed(f.perEntry, 0)),\
        "libpam_one_us":\(fixed(f.libpamOne / 1000, 3)),"libpam_five_us":\(fixed(f.libpamFive / 1000, 3)),\
        "libpam_per_entry_ns":\(fixed(f.libpamPerEntry, 0)),"ratio":\(fixed(f.five / f.libpamFive, 3)),"goal_ratio":1.00}
        """
}
