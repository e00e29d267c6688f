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
        return try result(files: [service: text], service: service)
    }

    /// The PAM result libpam gives for the service file `service` of `files` (service files by name,
    /// which may include each other or name each other as substacks).
    func result(files: [String: String], service: String) throws -> PAMResult {
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: false, encoding: .utf8)
        }
        var conversation = pam_conv(conv: { _, _, _, _ in PAM_CONV_ERR }, appdata_ptr: nil)
        var handle: OpaquePointer?
        guard pam_start_confdir(service, "alice", &conversation, directory, &handle) == PAM_SUCCESS, let handle else {
            throw OracleError("pam_start_confdir failed")
        }
        let status = pam_authenticate(handle, 0)
        pam_end(handle, status)
        guard let result = PAMResult(code: status) else { throw OracleError("libpam answered \(status)") }
        return result
    }

    /// The PAM result libpam's `pam_chauthtok` gives for `stack` (controls as written in a service file,
    /// and each entry's answers to the preliminary pass and to the update), with `pam_debug.so`'s
    /// `prechauthtok=` and `chauthtok=`.
    func changeResult(of stack: [(control: String, preliminary: PAMResult, update: PAMResult)], service: String)
        throws -> PAMResult
    {
        let text = stack.map {
            "password \($0.control) \(module) prechauthtok=\($0.preliminary.rawValue) chauthtok=\($0.update.rawValue)\n"
        }.joined()
        try text.write(toFile: directory + "/" + service, atomically: false, encoding: .utf8)
        var conversation = pam_conv(conv: { _, _, _, _ in PAM_CONV_ERR }, appdata_ptr: nil)
        var handle: OpaquePointer?
        guard pam_start_confdir(service, "alice", &conversation, directory, &handle) == PAM_SUCCESS, let handle else {
            throw OracleError("pam_start_confdir failed")
        }
        let status = pam_chauthtok(handle, 0)
        pam_end(handle, status)
        guard let result = PAMResult(code: status) else { throw OracleError("libpam answered \(status)") }
        return result
    }

    /// Every code's number agrees with libpam's headers.
    static let headerCodes: [PAMResult: Int32] = [
        .success: PAM_SUCCESS, .openError: PAM_OPEN_ERR, .symbolError: PAM_SYMBOL_ERR, .serviceError: PAM_SERVICE_ERR,
        .systemError: PAM_SYSTEM_ERR, .bufferError: PAM_BUF_ERR, .permissionDenied: PAM_PERM_DENIED,
        .authenticationError: PAM_AUTH_ERR, .credentialsInsufficient: PAM_CRED_INSUFFICIENT,
        .authinfoUnavailable: PAM_AUTHINFO_UNAVAIL, .userUnknown: PAM_USER_UNKNOWN, .maximumTries: PAM_MAXTRIES,
        .newAuthenticationTokenRequired: PAM_NEW_AUTHTOK_REQD, .accountExpired: PAM_ACCT_EXPIRED,
        .sessionError: PAM_SESSION_ERR, .credentialsUnavailable: PAM_CRED_UNAVAIL,
        .credentialsExpired: PAM_CRED_EXPIRED,
        .credentialsError: PAM_CRED_ERR, .noModuleData: PAM_NO_MODULE_DATA, .conversationError: PAM_CONV_ERR,
        .authenticationTokenError: PAM_AUTHTOK_ERR, .authenticationTokenRecoveryError: PAM_AUTHTOK_RECOVERY_ERR,
        .authenticationTokenLockBusy: PAM_AUTHTOK_LOCK_BUSY,
        .authenticationTokenAgingDisabled: PAM_AUTHTOK_DISABLE_AGING, .tryAgain: PAM_TRY_AGAIN, .ignore: PAM_IGNORE,
        .abort: PAM_ABORT, .authenticationTokenExpired: PAM_AUTHTOK_EXPIRED, .moduleUnknown: PAM_MODULE_UNKNOWN,
        .badItem: PAM_BAD_ITEM, .conversationAgain: PAM_CONV_AGAIN, .incomplete: PAM_INCOMPLETE,
    ]

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct OracleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
