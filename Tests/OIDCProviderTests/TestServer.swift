import Foundation
import GatekeeperSupport
import TestSupport

/// The tests' own OpenID Connect provider (`Tests/Fixtures/oidc_test_server.py`), which answers well or
/// as badly as a test asks; it stops when this test process is gone.
final class TestServer: @unchecked Sendable {
    let directory: String
    let port: Int
    let tls: Bool
    private let process: Spawned

    static let clientID = "gatekeeper"
    static let clientSecret = "test-client-secret"

    var issuer: String { "\(tls ? "https" : "http")://127.0.0.1:\(port)" }
    var caFile: String { directory + "/cert.pem" }

    static let shared = Result { try TestServer() }
    static let sharedTLS = Result { try TestServer(tls: true) }

    init(tls: Bool = false) throws {
        self.tls = tls
        directory = temporaryDirectory("gatekeeper-oidc-server")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/oidc_test_server.py").standardized.path
        var arguments = [script, directory, String(getpid())]
        if tls {
            let (status, output) = try shell(
                "openssl req -x509 -newkey rsa:2048 -nodes -keyout '\(directory)/key.pem' -out '\(directory)/cert.pem' "
                    + "-days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>&1")
            guard status == 0 else { throw ServerFailure("openssl: \(output)") }
            arguments += ["--tls", directory + "/cert.pem", directory + "/key.pem"]
        }
        process = try Spawned(URL(fileURLWithPath: "/usr/bin/python3"), arguments)
        var found: Int?
        for _ in 0..<400 {
            if let text = try? String(contentsOfFile: directory + "/port", encoding: .utf8), let number = Int(text) {
                found = number
                break
            }
            usleep(25_000)
        }
        guard let found else { throw ServerFailure("the test provider did not start: \(process.stderr)") }
        port = found
    }

    /// Sets how the server answers from now on, and forgets what it was asked.
    func set(_ mode: String, pending: Int = 0, user: String = "alice") throws {
        let user = String(data: try JSONSerialization.data(withJSONObject: [user]), encoding: .utf8)!.dropFirst()
            .dropLast()
        let body = "{\"mode\": \"\(mode)\", \"pending\": \(pending), \"user\": \(user)}"
        let (status, output) = try shell(
            "curl -sS --fail -k -X POST --data-binary @- '\(issuer)/control'", input: body)
        guard status == 0 else { throw ServerFailure("control: \(output)") }
    }

    /// What the server was asked since the last ``set(_:pending:)``.
    func log() throws -> (requests: [[String: Any]], keySetFetches: Int, revoked: [String]) {
        let (status, output) = try shell("curl -sS --fail -k '\(issuer)/log'")
        guard status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        else { throw ServerFailure("log: \(output)") }
        return (
            object["log"] as? [[String: Any]] ?? [], object["jwks_fetches"] as? Int ?? -1,
            object["revoked"] as? [String] ?? []
        )
    }
}

struct ServerFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
