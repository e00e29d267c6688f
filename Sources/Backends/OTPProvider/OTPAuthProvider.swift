public import Authentication
import BlockingPools
import COathLoader
import GatekeeperSupport
public import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#endif

/// A second factor: one-time codes from the same users file as `pam_oath` (OATH Toolkit's format,
/// `HOTP/T30/6 user - hexsecret [counter [code [time]]]`), checked and recorded by liboath's
/// `oath_authenticate_usersfile` — pam_oath's own code path, so the two accept the same codes, and each
/// refuses a code the other has accepted: the last accepted counter or time is written back to the file
/// (under liboath's lock, replacing the file), and a code at or before it is refused.
///
/// The code is asked as a visible question (`Verification code: `), of every user, so the prompts do not
/// tell who has a second factor; an empty answer cancels the login. A user with no entry is not this
/// provider's (`notMine`), so a stack decides. Entries with a password in the file's third field are
/// refused: pair this provider with a password provider in a stack instead.
public final class OTPAuthProvider: AuthProvider {
    public let name = "otp"
    public let usersFile: String
    /// How many codes before and after the expected one are accepted (pam_oath's `window=`).
    public let window: Int
    /// The code length required, when set (pam_oath's `digits=`); otherwise the entry's.
    public let digits: Int?
    public let prompt = "Verification code: "
    /// A code confirms the identity a password entry established; it never establishes one itself.
    public var establishesIdentity: Bool { false }

    /// Checks run on this thread, one at a time: liboath 2.6.7 reads the file before it takes its lock,
    /// and gives up at once when another holds it, so concurrent checks in one process could both accept
    /// a code or fail for nothing. (Across processes the same holds for pam_oath; see the README.)
    /// (``ProcessPools/Role/oneTimeCodes``).
    static var threads: BlockingPool { ProcessPools.pool(.oneTimeCodes) }

    public init(usersFile: String, window: Int = 3, digits: Int? = nil) {
        self.usersFile = usersFile
        self.window = window
        self.digits = digits
    }

    public func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        // Without liboath, or without the file, no code can be checked: nothing is asked, so nothing is handed
        // over for the attempt ledger to count (a code never asked for is no wrong code).
        if let problem = OneTimeCode.libraryProblem { return .unavailable(reason: problem) }
        let entries: [OATHUsersFile.Entry]
        switch readPrivateFile(usersFile) {
        case .success(let bytes): entries = OATHUsersFile.parse(bytes)
        case .failure(.inaccessible(let why)), .failure(.unsafe(let why)):
            return .unavailable(reason: "the one-time code file \(usersFile) \(why)")
        }
        // Asked of everyone, known or not.
        let answer = try await request.conversation.ask(prompt)
        if answer.isEmpty { throw .cancelled }
        guard let entry = entries.first(where: { $0.username == request.username }) else { return .notMine }
        let expected = digits ?? entry.digits
        guard answer.utf8.count == expected, answer.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return .rejected(.wrongCredentials)
        }
        let (path, user, window) = (usersFile, request.username, self.window)
        if entry.algorithm != .sha1, let step = entry.step {
            let accepted = await Self.threads.run { () -> Result<Bool, OATHFileError> in
                Result { () throws(OATHFileError) in
                    let store = OATHUsersFileStore(path: path)
                    return try store.exclusively { () throws(OATHFileError) in
                        try store.checkExtended(
                            user, code: answer, step: step, window: window, algorithm: entry.algorithm)
                    }
                }
            }
            switch accepted {
            case nil: throw .cancelled
            case .success(true)?: return .authenticated(Identity(username: request.username, provider: name))
            case .success(false)?: return .rejected(.wrongCredentials)
            case .failure(let error)?: return .unavailable(reason: "the one-time code file \(error)")
            }
        }
        let checked = await Self.threads.run { () -> Result<Int32, OATHFileError> in
            guard OneTimeCode.initialised else { return .success(Int32(OATH_CRYPTO_ERROR.rawValue)) }
            return Result { () throws(OATHFileError) in
                try OATHUsersFileStore(path: path).exclusively { () -> Int32 in
                    var last: time_t = 0
                    // Another process (pam_oath, an enrolment) holding liboath's lock: try again for a second.
                    for _ in 0..<100 {
                        let status = gk_oath_authenticate_usersfile(path, user, answer, window, "", &last)
                        guard status == OATH_FILE_LOCK_ERROR.rawValue else { return status }
                        usleep(10_000)
                    }
                    return Int32(OATH_FILE_LOCK_ERROR.rawValue)
                }
            }
        }
        let status: Int32
        switch checked {
        case nil: throw .cancelled
        case .success(let code)?: status = code
        case .failure(let error)?: return .unavailable(reason: "the one-time code file \(error)")
        }
        switch status {
        case OATH_OK.rawValue:
            return .authenticated(Identity(username: request.username, provider: name))
        case OATH_INVALID_OTP.rawValue, OATH_REPLAYED_OTP.rawValue:
            return .rejected(.wrongCredentials)
        case OATH_UNKNOWN_USER.rawValue:
            return .notMine
        case OATH_BAD_PASSWORD.rawValue:
            return .rejected(.refusedByPolicy)
        default:
            return .unavailable(reason: "the one-time code file \(usersFile): \(OneTimeCode.message(status))")
        }
    }
}

/// pam_oath's users file, read as bytes: one entry a line, `TYPE USER PASSWORD SECRET [COUNTER [CODE [TIME]]]`
/// separated by blanks; `#` starts a comment.
public enum OATHUsersFile {
    public struct Entry: Sendable, Hashable {
        public var type: String
        public var username: String
        /// The TOTP step (30 or 60), or `nil` for HOTP.
        public var step: Int?
        public var digits: Int
        /// SHA-1 for every type pam_oath reads; SHA-256 and SHA-512 only in this package's extension
        /// types `HOTP/T30/D/SHA256` and `HOTP/T30/D/SHA512` (and `T60`), which pam_oath skips.
        public var algorithm: OneTimeCode.Algorithm
    }

    /// The entries liboath would read; lines it would skip are skipped.
    public static func parse(_ bytes: [UInt8]) -> [Entry] {
        bytes.split(separator: 0x0A).compactMap { line in
            let fields = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
            guard fields.count >= 4, fields[0].first != UInt8(ascii: "#"),
                let type = String(validating: fields[0], as: UTF8.self),
                let username = String(validating: fields[1], as: UTF8.self),
                let (step, digits, algorithm) = kind(of: type)
            else { return nil }
            return Entry(type: type, username: username, step: step, digits: digits, algorithm: algorithm)
        }
    }

    /// liboath's token types: `HOTP[/E[/D]]`, `HOTP/T30[/D]`, `HOTP/T60[/D]`, D from 6 to 8; and this
    /// package's `HOTP/T30/D/SHA256`, `…/SHA512` (`T60` too).
    static func kind(of type: String) -> (step: Int?, digits: Int, algorithm: OneTimeCode.Algorithm)? {
        var parts = type.split(separator: "/", omittingEmptySubsequences: false)
        var algorithm = OneTimeCode.Algorithm.sha1
        if parts.count == 4 {
            switch parts.removeLast() {
            case "SHA256": algorithm = .sha256
            case "SHA512": algorithm = .sha512
            default: return nil
            }
            guard parts[1] == "T30" || parts[1] == "T60" else { return nil }
        }
        guard parts.first == "HOTP", parts.count <= 3 else { return nil }
        var step: Int?
        if parts.count >= 2 {
            switch parts[1] {
            case "E": step = nil
            case "T30": step = 30
            case "T60": step = 60
            default: return nil
            }
        }
        guard parts.count == 3 else { return (step, 6, algorithm) }
        guard let digits = Int(parts[2]), (6...8).contains(digits) else { return nil }
        return (step, digits, algorithm)
    }
}

/// `otp usersfile=PATH [window=N] [digits=N]`, with pam_oath's option names.
public enum OTPProviderPlugin: AuthProviderPlugin {
    public static let name = "otp"
    public static let summary = "one-time codes from pam_oath's users file (a second factor)"
    public static let options = [
        ProviderOption(
            "usersfile", valueName: "PATH", help: "pam_oath's users file, such as /etc/users.oath (required)"),
        ProviderOption("window", valueName: "N", help: "codes accepted before and after the expected one (default 3)"),
        ProviderOption("digits", valueName: "N", help: "require codes of N digits, 6 to 8 (default: each entry's)"),
    ]

    public static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
        guard let path = options["usersfile"] else { throw .missingOption("usersfile", provider: name) }
        guard path.hasPrefix("/") else {
            throw .invalidValue(option: "usersfile", value: path, expected: "an absolute path")
        }
        var window = 3
        if let text = options["window"] {
            guard let value = Int(text), (0...100).contains(value) else {
                throw .invalidValue(option: "window", value: text, expected: "a number from 0 to 100")
            }
            window = value
        }
        var digits: Int?
        if let text = options["digits"] {
            guard let value = Int(text), (6...8).contains(value) else {
                throw .invalidValue(option: "digits", value: text, expected: "6, 7 or 8")
            }
            digits = value
        }
        return OTPAuthProvider(usersFile: path, window: window, digits: digits)
    }
}
