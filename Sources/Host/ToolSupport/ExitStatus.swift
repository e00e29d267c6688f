public import Authentication
import ProviderPlugins

/// The exit statuses of the tools that guard a login, from `sysexits.h` and the shell's conventions:
/// one mapping from what went wrong to a status, for every tool.
public struct ExitStatus: Hashable, Sendable, CustomStringConvertible {
    public let code: Int32

    public var description: String { "\(code)" }

    /// Done: the command ran and ended well, or the change was made.
    public static let success = ExitStatus(code: 0)
    public static let usage = ExitStatus(code: 64)
    public static let invalidInput = ExitStatus(code: 65)
    public static let unavailable = ExitStatus(code: 69)
    public static let denied = ExitStatus(code: 77)
    /// The password has expired and could not be changed here (it was read from a pipe): `EX_TEMPFAIL`,
    /// for "change it at a terminal, then try again".
    public static let passwordExpired = ExitStatus(code: 75)
    public static let cannotExecute = ExitStatus(code: 126)
    public static let notFound = ExitStatus(code: 127)
    public static let cancelled = ExitStatus(code: 130)

    public init(code: Int32) { self.code = code }

    /// The status for a backend that could not be built: a resource it needs is unusable (69), or the
    /// command line is wrong (64).
    public init(configuration error: any Error) {
        self = (error as? ConfigurationError)?.code == .unusable ? .unavailable : .usage
    }

    /// A login that ended without running the command: cancelled (130), unusable input (65), the
    /// backend down, or the account's other logins holding every slot of its lockout (69), something to do
    /// before trying again — an expired password not changed, a sign-in code not approved in time (75) — or
    /// refused for any other reason, including codes added later (77).
    public init(dismissal reason: AuthError) {
        switch reason.code {
        case .cancelled: self = .cancelled
        case .passwordChangeRequired, .credentialsExpired: self = .passwordExpired
        case .missingUsername, .invalidUsername, .missingPassword, .invalidPassword: self = .invalidInput
        case .providerUnavailable, .loginsInFlight: self = .unavailable
        default: self = .denied
        }
    }
}
