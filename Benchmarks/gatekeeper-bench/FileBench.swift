import Authentication
import AuthenticationTesting
import CCryptLoader
import FileProvider
import Foundation
import PasswordHashing

/// The users-file provider against raw `crypt_r` on the same hash, in parallel, for unknown users, and
/// loading a file of 1,000,000 users. Hash checks are yescrypt with libxcrypt's default cost.
struct FileBench {
    struct Figures {
        var raw: Double
        var provider: Double
        var single: Double
        var parallelPair: Double
        /// The same two at once with raw `crypt_r` on two threads, against one after another: what the
        /// machine allows two yescrypt hashes at once, whatever calls them.
        var rawSingle: Double
        var rawPair: Double
        var wrongPassword: Double
        var unknownUser: Double
        /// Unknown user over wrong password on files of other schemes: the stand-in must follow the file.
        var unknownOverWrongByScheme: [(scheme: String, ratio: Double)]
        var loadSeconds: Double
        var fileBytes: Int
        var residentGrowthKiB: Int
    }

    static func run() async throws -> Figures {
        let directory = privateTemporaryDirectory.appendingPathComponent("gatekeeper-bench-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hash = try PasswordHash.make(Secret(copying: "bench-password".utf8), scheme: .yescrypt)
        let path = directory + "/users"
        try "alice:\(hash.text)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        let provider = try FileAuthProvider(.init(path: path))

        func login(_ user: String, _ password: String) async throws {
            _ = try await provider.authenticate(
                AuthRequest(username: user, conversation: ScriptedConversation(.secret(password)))
            )
        }
        func seconds(_ body: () async throws -> Void) async rethrows -> Double {
            let start = ContinuousClock.now
            try await body()
            return nanoseconds(start.duration(to: .now)) / 1e9
        }

        // Each measure is the median of single calls, taken in turn with the others so that a busy moment
        // on the machine falls on all of them alike.
        _ = rawCrypt("bench-password", hash.text)
        try await login("alice", "bench-password")
        var raw: [Double] = []
        var through: [Double] = []
        var wrong: [Double] = []
        var unknown: [Double] = []
        for _ in 0..<scaled(60) {
            raw.append(await seconds { _ = rawCrypt("bench-password", hash.text) })
            through.append(try await seconds { try await login("alice", "bench-password") })
            wrong.append(try await seconds { try await login("alice", "wrong-password") })
            unknown.append(try await seconds { try await login("nobody", "wrong-password") })
        }
        // One login at a time against two at a time; and the same for raw crypt_r on two threads.
        var single: [Double] = []
        var pair: [Double] = []
        var rawSingle: [Double] = []
        var rawPair: [Double] = []
        for _ in 0..<scaled(30) {
            rawSingle.append(await seconds { _ = rawCrypt("bench-password", hash.text) })
            rawPair.append(
                await seconds {
                    DispatchQueue.concurrentPerform(iterations: 2) { _ in _ = rawCrypt("bench-password", hash.text) }
                })
            single.append(try await seconds { try await login("alice", "bench-password") })
            pair.append(
                try await seconds {
                    async let first: Void = login("alice", "bench-password")
                    async let second: Void = login("alice", "bench-password")
                    _ = try await (first, second)
                }
            )
        }

        // Files of other schemes: an unknown user must cost what a wrong password costs there too.
        var byScheme: [(scheme: String, ratio: Double)] = []
        let others = [
            ("bcrypt", try PasswordHash.make(Secret(copying: "bench-password".utf8), scheme: .bcrypt).text),
            ("apr1", "$apr1$NvU.aT8v$5ah9Wab2rb10GlGHNxpa5."),  // htpasswd -nbm u bench-password
        ]
        for (scheme, otherHash) in others {
            let otherPath = directory + "/users-" + scheme
            try "alice:\(otherHash)\n".write(toFile: otherPath, atomically: true, encoding: .utf8)
            chmod(otherPath, 0o600)
            let other = try FileAuthProvider(.init(path: otherPath))
            func otherLogin(_ user: String) async throws {
                _ = try await other.authenticate(
                    AuthRequest(username: user, conversation: ScriptedConversation(.secret("wrong-password"))))
            }
            try await otherLogin("alice")
            var otherWrong: [Double] = []
            var otherUnknown: [Double] = []
            for _ in 0..<scaled(60) {
                otherWrong.append(try await seconds { try await otherLogin("alice") })
                otherUnknown.append(try await seconds { try await otherLogin("nobody") })
            }
            byScheme.append((scheme, median(otherUnknown) / median(otherWrong)))
        }

        // 1,000,000 users sharing one hash (parsing does not hash).
        let bigPath = directory + "/million"
        var text = ""
        text.reserveCapacity(scaled(1_000_000) * (hash.text.utf8.count + 20))
        for index in 0..<scaled(1_000_000) { text += "user\(index):\(hash.text):staff\n" }
        try text.write(toFile: bigPath, atomically: false, encoding: .utf8)
        chmod(bigPath, 0o600)
        let fileBytes = text.utf8.count
        text = ""
        let before = residentKiB()
        let start = ContinuousClock.now
        let big = try FileAuthProvider(.init(path: bigPath))
        let load = nanoseconds(start.duration(to: .now)) / 1e9
        let growth = residentKiB() - before
        withExtendedLifetime(big) {}

        return Figures(
            raw: median(raw),
            provider: median(through),
            single: median(single),
            parallelPair: median(pair),
            rawSingle: median(rawSingle),
            rawPair: median(rawPair),
            wrongPassword: median(wrong),
            unknownUser: median(unknown),
            unknownOverWrongByScheme: byScheme,
            loadSeconds: load,
            fileBytes: fileBytes,
            residentGrowthKiB: growth
        )
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// One `crypt_r`, as a C program would call it.
    static func rawCrypt(_ password: String, _ setting: String) -> Bool {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        defer { data.deallocate() }
        memset(data, 0, MemoryLayout<crypt_data>.size)
        guard let output = crypt_r(password, setting, data) else { return false }
        return strcmp(output, setting) == 0
    }
}

func fileTable(_ figures: FileBench.Figures) -> String {
    """
    yescrypt check, raw crypt_r                     \(fixed(figures.raw * 1000, 3)) ms
    yescrypt check through FileAuthProvider         \(fixed(figures.provider * 1000, 3)) ms
    ratio provider / crypt_r                        \(fixed(figures.provider / figures.raw))         \(Goals.atMost("users file: provider / raw crypt_r", figures.provider / figures.raw, 1.05))
    two logins at once, per pair                    \(fixed(figures.parallelPair * 1000, 3)) ms
    speedup of two at once over one after another   \(fixed(2 * figures.single / figures.parallelPair))         \(Goals.atLeast("users file: two logins at once, speedup", 2 * figures.single / figures.parallelPair, 1.8))
      the same, raw crypt_r on two threads          \(fixed(2 * figures.rawSingle / figures.rawPair))         the floor: the machine's own
    unknown user / wrong password                   \(fixed(figures.unknownUser / figures.wrongPassword))         \(Goals.within("users file: unknown user / wrong password", figures.unknownUser / figures.wrongPassword, 0.9, 1.1))
    \(figures.unknownOverWrongByScheme.map { "  the same on a \($0.scheme) file\(String(repeating: " ", count: max(1, 26 - $0.scheme.count)))\(fixed($0.ratio))         \(Goals.within("users file: unknown / wrong, \($0.scheme)", $0.ratio, 0.9, 1.1))" }.joined(separator: "\n"))
    load 1,000,000 users (\(figures.fileBytes / 1_000_000) MB file)            \(fixed(figures.loadSeconds)) s        \(Goals.atMost("users file: load 1,000,000 users (s)", figures.loadSeconds, 2))
    resident memory for them                        \(figures.residentGrowthKiB / 1024) MiB (\(fixed(Double(figures.residentGrowthKiB) * 1024 / Double(figures.fileBytes))) x the file)   \(Goals.atMost("users file: resident memory / file size", Double(figures.residentGrowthKiB) * 1024 / Double(figures.fileBytes), 2))

    """
}

func fileJSON(_ figures: FileBench.Figures) -> String {
    """
    {"raw_crypt_ms":\(fixed(figures.raw * 1000, 3)),"provider_ms":\(fixed(figures.provider * 1000, 3)),\
    "ratio":\(fixed(figures.provider / figures.raw)),"goal_ratio":1.05,\
    "parallel_speedup":\(fixed(2 * figures.single / figures.parallelPair)),"goal_speedup":1.8,\
    "raw_parallel_speedup":\(fixed(2 * figures.rawSingle / figures.rawPair)),\
    "unknown_over_wrong":\(fixed(figures.unknownUser / figures.wrongPassword)),\
    \(figures.unknownOverWrongByScheme.map { "\"unknown_over_wrong_\($0.scheme)\":\(fixed($0.ratio))," }.joined())\
    "load_1m_seconds":\(fixed(figures.loadSeconds)),"file_bytes":\(figures.fileBytes),\
    "resident_kib":\(figures.residentGrowthKiB),\
    "resident_over_file":\(fixed(Double(figures.residentGrowthKiB) * 1024 / Double(figures.fileBytes)))}
    """
}
