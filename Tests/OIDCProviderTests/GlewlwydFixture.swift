import Foundation
import GatekeeperSupport
import TestSupport

/// The state directories of the glewlwyds started, for the exit handler (which can capture nothing).
private let glewlwydDirectories = Locked<[String]>([])

/// A throwaway glewlwyd (Debian's OpenID Connect provider) on a loopback port, started and configured by
/// `Examples/oidc/glewlwyd.sh` in a private directory of its own: sqlite database, keys, users alice and
/// bob, a confidential client and a public one. Stopped when this test process ends.
final class GlewlwydFixture: @unchecked Sendable {
    let directory: String
    let settings: [String: String]

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/oidc/glewlwyd.sh").standardized.path

    var issuer: String { settings["ISSUER"] ?? "" }
    var es256Issuer: String { settings["ES256_ISSUER"] ?? "" }
    var clientID: String { settings["CLIENT_ID"] ?? "" }
    var clientSecret: String { settings["CLIENT_SECRET"] ?? "" }
    var publicClientID: String { settings["PUBLIC_CLIENT_ID"] ?? "" }
    /// A confidential client whose secret holds `#`, `&`, `+` and `%`.
    var hashClientID: String { settings["HASH_CLIENT_ID"] ?? "" }
    var hashClientSecret: String {
        let file = settings["HASH_CLIENT_SECRET_FILE"] ?? ""
        return ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    static let shared = Result { try GlewlwydFixture() }

    init() throws {
        let directory = temporaryDirectory("gatekeeper-glewlwyd")
        self.directory = directory
        chmod(directory, 0o700)
        // Short device codes, polled every second: the tests approve them at once.
        let (status, output) = try shell(
            "DEVICE_EXPIRES=60 DEVICE_INTERVAL=1 '\(Self.script)' start '\(directory)' 2>&1")
        guard status == 0 else { throw ServerFailure("glewlwyd.sh start failed:\n\(output)") }
        glewlwydDirectories.withLock { $0.append(directory) }
        atexit {
            for directory in glewlwydDirectories.withLock({ $0 }) {
                _ = try? shell("'\(GlewlwydFixture.script)' stop '\(directory)' >/dev/null 2>&1")
            }
        }
        let text = try String(contentsOfFile: directory + "/settings.env", encoding: .utf8)
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        self.settings = settings
    }

    /// Approves `userCode` as `user` would in a browser.
    func approve(_ userCode: String, as user: String, password: String) throws {
        let (status, output) = try shell(
            "'\(Self.script)' approve '\(directory)' '\(user)' '\(password)' '\(userCode)' 2>&1")
        guard status == 0 else { throw ServerFailure("approve failed: \(output)") }
    }

    /// A private file holding the confidential client's secret.
    func secretFile() throws -> String {
        let path = directory + "/client-secret"
        if !FileManager.default.fileExists(atPath: path) {
            try (clientSecret + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
        }
        return path
    }
}
