import Authentication
import AuthenticationTesting
import COIDCBaseline
import Foundation
import OIDCProvider

/// 200 password-grant logins one after another through ``OIDCAuthProvider`` (a token request, the ID
/// token's signature and claims checked, userinfo) against the same two requests made with libcurl alone
/// — both against a throwaway glewlwyd started for the run (`Examples/oidc/glewlwyd.sh`), once the
/// provider's metadata and keys are known.
struct OIDCBench {
    struct Figures {
        var curlSeconds: Double
        var providerSeconds: Double
        var p50: Double
        var p99: Double
        let logins = scaled(200)
    }

    static func measured() async -> Result<Figures, any Error> { await measuring { try await run() } }

    static func run() async throws -> Figures {
        let provider = try OIDCProviderBench()
        defer { provider.stop() }
        let settings = provider.settings
        guard let issuer = settings["ISSUER"], let client = settings["CLIENT_ID"],
            let secret = settings["CLIENT_SECRET"]
        else { throw OIDCBenchError.noProvider("settings.env is incomplete") }
        let oidc = try OIDCAuthProvider(
            .init(
                issuer: issuer, clientID: client, clientSecret: Secret(copying: secret.utf8), timeout: .seconds(10),
                flow: .password, allowsPlainHTTP: true))
        let (token, userinfo) = (issuer + "/token", issuer + "/userinfo")
        // Warm both: the provider fetches its metadata and keys on its first login.
        _ = try await logins(oidc, 4)
        guard gatekeeper_oidc_baseline(token, userinfo, client, secret, "alice", "wonderland-2026", 4) > 0 else {
            throw OIDCBenchError.loginFailed("the libcurl baseline was refused")
        }
        var figures = Figures(curlSeconds: .infinity, providerSeconds: .infinity, p50: 0, p99: 0)
        // Best of five interleaved rounds: glewlwyd shares the machine's cores with both clients.
        for _ in 0..<scaled(5) {
            let raw = gatekeeper_oidc_baseline(
                token, userinfo, client, secret, "alice", "wonderland-2026", Int32(figures.logins))
            guard raw > 0 else { throw OIDCBenchError.loginFailed("the libcurl baseline was refused") }
            figures.curlSeconds = min(figures.curlSeconds, raw)
            let (seconds, latencies) = try await logins(oidc, figures.logins)
            if seconds < figures.providerSeconds {
                figures.providerSeconds = seconds
                let sorted = latencies.sorted()
                figures.p50 = sorted[sorted.count / 2]
                figures.p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            }
        }
        return figures
    }

    static func logins(_ provider: OIDCAuthProvider, _ count: Int) async throws -> (Double, [Double]) {
        let start = ContinuousClock.now
        var latencies: [Double] = []
        for _ in 0..<count {
            let begun = ContinuousClock.now
            let outcome = try await provider.authenticate(
                AuthRequest(username: "alice", conversation: ScriptedConversation(.secret("wonderland-2026"))))
            guard case .authenticated = outcome else { throw OIDCBenchError.loginFailed("\(outcome)") }
            latencies.append(nanoseconds(begun.duration(to: .now)) / 1e9)
        }
        return (nanoseconds(start.duration(to: .now)) / 1e9, latencies)
    }
}

enum OIDCBenchError: Error {
    case noProvider(String)
    case loginFailed(String)
}

/// The throwaway glewlwyd of the tests and `make oidc-demo`, started for a measurement and stopped after it.
final class OIDCProviderBench {
    let directory: String
    let script: String
    let settings: [String: String]

    init() throws {
        directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-oidc-\(UUID())").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        script =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Examples/oidc/glewlwyd.sh").standardized.path
        guard system("bash '\(script)' start '\(directory)' >/dev/null 2>&1") == 0,
            let text = try? String(contentsOfFile: directory + "/settings.env", encoding: .utf8)
        else { throw OIDCBenchError.noProvider("glewlwyd did not start") }
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        self.settings = settings
        // A watchdog stops the provider when this process ends, however it ends (a crash included), and
        // removes what it was made of.
        _ = system(
            "(while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; bash '\(script)' stop '\(directory)';"
                + " rm -rf '\(directory)') </dev/null >/dev/null 2>&1 &")
    }

    /// Stops the provider and removes its files.
    func stop() {
        _ = system("bash '\(script)' stop '\(directory)' >/dev/null 2>&1")
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func oidcTable(_ result: Result<OIDCBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "oidc: not measured (\(result))\n" }
    let curl = f.curlSeconds / Double(f.logins) * 1000
    let ours = f.providerSeconds / Double(f.logins) * 1000
    return """
        200 OIDC password logins, libcurl alone (C)     \(fixed(curl, 2)) ms a login
        the same through OIDCAuthProvider               \(fixed(ours, 2)) ms a login, p50 \(fixed(f.p50 * 1000, 2)) ms, p99 \(fixed(f.p99 * 1000, 2)) ms
        ratio provider / libcurl time                   \(fixed(ours / curl))         \(Goals.atMost("OIDC: provider / libcurl time a login", ours / curl, 1.2))

        """
}

func oidcJSON(_ result: Result<OIDCBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "null" }
    let curl = f.curlSeconds / Double(f.logins) * 1000
    let ours = f.providerSeconds / Double(f.logins) * 1000
    return """
        {"logins":\(f.logins),"curl_ms":\(fixed(curl, 3)),"provider_ms":\(fixed(ours, 3)),"ratio":\(fixed(ours / curl)),\
        "goal_ratio":1.2,"p50_ms":\(fixed(f.p50 * 1000, 3)),"p99_ms":\(fixed(f.p99 * 1000, 3))}
        """
}
