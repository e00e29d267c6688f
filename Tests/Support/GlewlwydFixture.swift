import Foundation
import GatekeeperSupport

/// The state directories of the glewlwyds started, for the exit handler (which can capture nothing).
private let glewlwydDirectories = Locked<[String]>([])

/// A throwaway glewlwyd (Debian's OpenID Connect provider) on a loopback port, started and configured by
/// `Examples/oidc/glewlwyd.sh` in a private directory of its own: sqlite database, keys, users alice and
/// bob, a confidential client and a public one. Stopped when this test process ends.
public final class GlewlwydFixture: @unchecked Sendable {
    public let directory: String
    public let settings: [String: String]

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/oidc/glewlwyd.sh").standardized.path

    public var issuer: String { settings["ISSUER"] ?? "" }
    public var es256Issuer: String { settings["ES256_ISSUER"] ?? "" }
    public var clientID: String { settings["CLIENT_ID"] ?? "" }
    public var clientSecret: String { settings["CLIENT_SECRET"] ?? "" }
    public var publicClientID: String { settings["PUBLIC_CLIENT_ID"] ?? "" }
    /// A confidential client whose secret holds `#`, `&`, `+` and `%`.
    public var hashClientID: String { settings["HASH_CLIENT_ID"] ?? "" }
    public var hashClientSecret: String {
        let file = settings["HASH_CLIENT_SECRET_FILE"] ?? ""
        return ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    public static let shared = Result { try GlewlwydFixture() }

    init() throws {
        let directory = temporaryDirectory("gatekeeper-glewlwyd")
        self.directory = directory
        chmod(directory, 0o700)
        // Short device codes, polled every second: the tests approve them at once.
        let (status, output) = try shell(
            "DEVICE_EXPIRES=60 DEVICE_INTERVAL=1 '\(Self.script)' start '\(directory)' 2>&1")
        guard status == 0 else { throw GlewlwydFailure("glewlwyd.sh start failed:\n\(output)") }
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
    public func approve(_ userCode: String, as user: String, password: String) throws {
        let (status, output) = try shell(
            "'\(Self.script)' approve '\(directory)' '\(user)' '\(password)' '\(userCode)' 2>&1")
        guard status == 0 else { throw GlewlwydFailure("approve failed: \(output)") }
    }

    /// The user code in what a device login showed ("... enter the code ABCD-EFGH").
    public static func userCode(in text: String) -> String? {
        guard let range = text.range(of: "enter the code ") else { return nil }
        return String(text[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
    }

    /// A private file holding the confidential client's secret.
    public func secretFile() throws -> String {
        let path = directory + "/client-secret"
        if !FileManager.default.fileExists(atPath: path) {
            try (clientSecret + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
        }
        return path
    }
}

public struct GlewlwydFailure: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
