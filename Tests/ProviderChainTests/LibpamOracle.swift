import Authentication
import CPAM
import Foundation

/// Linux-PAM itself, as the judge of stacking: a stack written as a service file of `pam_debug.so`
/// lines in a private directory, run through `pam_start_confdir` and `pam_authenticate`.
struct LibpamOracle {
    let directory: String
    let module: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-chain-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let candidates = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/security/pam_debug.so" }
        guard let module = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw OracleError("pam_debug.so was not found; install libpam-modules (make test does).")
        }
        self.module = module
    }

    /// The PAM result libpam gives for `stack` (controls as written in a service file, and results).
    func result(of stack: [(control: String, result: PAMResult)], service: String) throws -> PAMResult {
        let text = stack.map { "auth \($0.control) \(module) auth=\($0.result.rawValue)\n" }.joined()
        try text.write(toFile: directory + "/" + service, atomically: false, encoding: .utf8)
        var conversation = pam_conv(conv: { _, _, _, _ in PAM_CONV_ERR }, appdata_ptr: nil)
        var handle: OpaquePointer?
        guard pam_start_confdir(service, "alice", &conversation, directory, &handle) == PAM_SUCCESS, let handle else {
            throw OracleError("pam_start_confdir failed")
        }
        let status = pam_authenticate(handle, 0)
        pam_end(handle, status)
        guard let result = Self.results[status] else { throw OracleError("libpam answered \(status)") }
        return result
    }

    static let results: [Int32: PAMResult] = [
        PAM_SUCCESS: .success, PAM_AUTH_ERR: .authenticationError, PAM_ACCT_EXPIRED: .accountExpired,
        PAM_NEW_AUTHTOK_REQD: .newAuthenticationTokenRequired, PAM_MAXTRIES: .maximumTries,
        PAM_PERM_DENIED: .permissionDenied, PAM_USER_UNKNOWN: .userUnknown, PAM_AUTHINFO_UNAVAIL: .authinfoUnavailable,
        PAM_IGNORE: .ignore,
    ]

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct OracleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
