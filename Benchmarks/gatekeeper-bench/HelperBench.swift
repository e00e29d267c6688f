import Authentication
import AuthenticationTesting
import FileProvider
import Foundation
import HelperPrograms
import PAMProvider
import PasswordHashing
import PluginHost
import ProviderPlugins

/// What running a backend in a process of its own costs: an isolated PAM login (gatekeeper-pam-helper)
/// against an in-process one on the same pam_matrix service, and a checkpassword helper login (the bash
/// example, which compares plain strings) against an in-process users-file login (yescrypt), each pair
/// interleaved in the same run. Helpers must sit in a directory only root or this user may write, so they
/// are copied under /run (root) or the user's runtime directory.
struct HelperBench {
    struct Figures {
        var pamInProcess: Double
        var pamIsolated: Double
        var usersFile: Double
        var checkpassword: Double
    }

    /// The figures, or why they could not be measured.
    static func measured() async -> Result<Figures, any Error> { await measuring { try await run() } }

    static func run() async throws -> Figures {
        let uid = getuid()
        let base = uid == 0 ? "/run" : "/run/user/\(uid)"
        let directory = base + "/gatekeeper-bench-\(UUID())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        chmod(directory, 0o755)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
        let helper = directory + "/gatekeeper-pam-helper"
        try FileManager.default.copyItem(atPath: here + "/gatekeeper-pam-helper", toPath: helper)
        let checkpassword = directory + "/checkpassword-example"
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
            .standardized.path
        try FileManager.default.copyItem(
            atPath: repository + "/Examples/plugins/helpers/checkpassword-example", toPath: checkpassword)
        chmod(helper, 0o755)
        chmod(checkpassword, 0o755)

        guard let pam = try PAMBench() else { throw HelperBenchError.noPAMMatrix }
        defer { pam.remove() }
        let isolated = try PAMProviderPlugin.makeProvider(
            ProviderOptions([
                "service": pam.service, "pam-dir": pam.directory, "isolated": "yes", "pam-helper": helper,
            ]))
        let hash = try PasswordHash.make(Secret(copying: "builder".utf8), scheme: .yescrypt)
        try "bob:\(hash.text)\n".write(toFile: directory + "/users", atomically: true, encoding: .utf8)
        chmod(directory + "/users", 0o600)
        let file = try FileAuthProvider(.init(path: directory + "/users"))
        let helperProvider = try CheckpasswordPlugin.makeProvider(ProviderOptions(["program": checkpassword]))

        func seconds(_ count: Int, _ provider: any AuthProvider, _ user: String, _ password: String) async throws
            -> Double
        {
            let start = ContinuousClock.now
            for _ in 0..<count {
                let outcome = try await provider.authenticate(
                    AuthRequest(username: user, conversation: ScriptedConversation(.secret(password))))
                guard case .authenticated = outcome else { fatalError("a benchmark login failed: \(outcome)") }
            }
            return nanoseconds(start.duration(to: .now)) / 1e9 / Double(count)
        }
        var figures = Figures(
            pamInProcess: .infinity, pamIsolated: .infinity, usersFile: .infinity, checkpassword: .infinity)
        for _ in 0..<5 {
            figures.pamInProcess = min(
                figures.pamInProcess, try await seconds(scaled(50), pam.provider, "root", "secret"))
            figures.pamIsolated = min(figures.pamIsolated, try await seconds(scaled(50), isolated, "root", "secret"))
            figures.usersFile = min(figures.usersFile, try await seconds(scaled(10), file, "bob", "builder"))
            figures.checkpassword = min(
                figures.checkpassword, try await seconds(scaled(10), helperProvider, "bob", "builder"))
        }
        return figures
    }
}

enum HelperBenchError: Error {
    case noPAMMatrix
}

func helperTable(_ result: Result<HelperBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "helpers: not measured (\(result))\n" }
    return """
        PAM login in process (pam_matrix)               \(fixed(figures.pamInProcess * 1000, 3)) ms
        PAM login isolated (gatekeeper-pam-helper)      \(fixed(figures.pamIsolated * 1000, 3)) ms
        ratio isolated / in process                     \(fixed(figures.pamIsolated / figures.pamInProcess))
        users-file login in process (yescrypt)          \(fixed(figures.usersFile * 1000, 3)) ms
        checkpassword helper login (bash example)       \(fixed(figures.checkpassword * 1000, 3)) ms
        ratio checkpassword / users file                \(fixed(figures.checkpassword / figures.usersFile))

        """
}

func helperJSON(_ result: Result<HelperBench.Figures, any Error>) -> String {
    guard case .success(let figures) = result else { return "null" }
    return """
        {"pam_in_process_ms":\(fixed(figures.pamInProcess * 1000, 3)),"pam_isolated_ms":\(fixed(figures.pamIsolated * 1000, 3)),\
        "isolated_ratio":\(fixed(figures.pamIsolated / figures.pamInProcess)),\
        "users_file_ms":\(fixed(figures.usersFile * 1000, 3)),"checkpassword_ms":\(fixed(figures.checkpassword * 1000, 3)),\
        "checkpassword_ratio":\(fixed(figures.checkpassword / figures.usersFile))}
        """
}
