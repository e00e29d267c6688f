import Foundation
import PAMProvider
import TestSupport

/// A PAM configuration directory of the tests' own (used through `pam_start_confdir`): services backed
/// by pam_wrapper's `pam_matrix.so` and a passdb file, one with a fail delay, and one with a module
/// compiled from `Tests/Fixtures` that asks several questions.
struct PAMFixture: Sendable {
    let directory: String

    /// Every service's accounts: user:password.
    static let accounts = [("alice", "secret"), ("bob", "builder"), ("root", "rootpw")]

    /// The fail delay of `gk-delay`: far longer than any test may take.
    static let failDelaySeconds = 120

    static let shared = Result { () throws -> PAMFixture in try PAMFixture() }

    private init() throws {
        let directory = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-pam-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        guard let matrix = Self.pamMatrix else {
            throw FixtureError("pam_matrix.so was not found; install libpam-wrapper (make test does).")
        }
        // pam_matrix reads the first line for a user, and its account check wants that line's service:
        // one passdb per service.
        func passdb(_ service: String) throws -> String {
            let path = directory + "/passdb-" + service
            let lines = Self.accounts.map { user, password in "\(user):\(password):\(service)\n" }
            try lines.joined().write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let module = try Self.compileFixtureModule(into: directory)
        let (plain, delayed, session) = (try passdb("gk-matrix"), try passdb("gk-delay"), try passdb("gk-session"))
        let (cancel, casefold, items) = (try passdb("gk-cancel"), try passdb("gk-casefold"), try passdb("gk-items"))
        let known = try passdb("gk-known")
        let services = [
            "gk-matrix":
                "auth required \(matrix) passdb=\(plain)\naccount required \(matrix) passdb=\(plain)\n"
                + "password required \(matrix) passdb=\(plain)\n",
            "gk-delay": """
            auth optional pam_faildelay.so delay=\(Self.failDelaySeconds * 1_000_000)
            auth required \(matrix) passdb=\(delayed)
            auth optional \(module) quiet mark=\(directory)/delay.log
            account required \(matrix) passdb=\(delayed)

            """,
            "gk-fixture": "auth required \(module)\naccount required \(module)\n",
            "gk-session": """
            auth required \(matrix) passdb=\(session)
            account required \(matrix) passdb=\(session)
            session required \(module) log=\(directory)/session.log

            """,
            // The account check shows a message (a test cancels the login there); every phase is logged.
            "gk-cancel": """
            auth required \(matrix) passdb=\(cancel)
            auth optional \(module) quiet log=\(directory)/cancel.log
            account required \(matrix) passdb=\(cancel)
            account required \(module) notice log=\(directory)/cancel.log
            session required \(module) log=\(directory)/cancel.log

            """,
            // A case-insensitive account database: any spelling of alice is alice.
            "gk-casefold": """
            auth required \(module) casefold
            auth required \(matrix) passdb=\(casefold)
            account required \(matrix) passdb=\(casefold)

            """,
            // Users the service does not know are reported as such (user_unknown), as pam_unix does;
            // pam_matrix alone answers auth_err for them.
            "gk-known": """
            auth [success=1 default=ignore] pam_succeed_if.so quiet user in alice:bob:root
            auth requisite pam_debug.so auth=user_unknown
            auth required \(matrix) passdb=\(known)
            account required \(matrix) passdb=\(known)

            """,
            // The items a login sets, logged, and a pam_access rule on the terminal.
            "gk-items": """
            auth required \(matrix) passdb=\(items)
            account required \(module) items=\(directory)/items.log
            account required pam_access.so nodns accessfile=\(directory)/access.conf

            """,
        ]
        for (name, text) in services {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
    }

    func provider(_ service: String = "gk-matrix", opensSession: Bool = false) throws -> PAMAuthProvider {
        try PAMAuthProvider(.init(service: service, configurationDirectory: directory, opensSession: opensSession))
    }

    /// What the fixture module's session hooks wrote.
    var sessionLog: String { log("session.log") }

    /// A file the fixture module wrote in the directory (empty if none).
    func log(_ name: String) -> String {
        (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
    }

    /// Where Debian's libpam-wrapper puts `pam_matrix.so`.
    static var pamMatrix: String? {
        let candidates =
            ["x86_64-linux-gnu", "aarch64-linux-gnu", "arm-linux-gnueabihf", "i386-linux-gnu"]
            .map { "/usr/lib/\($0)/pam_wrapper/pam_matrix.so" } + ["/usr/lib64/pam_wrapper/pam_matrix.so"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    private static func compileFixtureModule(into directory: String) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/pam_gatekeeper_fixture.c").standardized.path
        let output = directory + "/pam_gatekeeper_fixture.so"
        let (status, messages) = try shell("cc -shared -fPIC -O1 -o '\(output)' '\(source)' -lpam")
        guard status == 0 else { throw FixtureError("cc could not build the fixture module:\n\(messages)") }
        return output
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
