public import FoundationEssentials

/// Everything that can go wrong when signing in, for every provider.
///
/// One closed set, so a host tool can `switch` over it and give each case its own exit status or hint.
/// Every case has a ``description`` a person understands. No case ever carries a password: reasons
/// (``providerUnavailable(reason:)``) come from providers, which must keep secrets out of them.
public enum AuthError: Error, Hashable, Sendable {
    /// No user name was given, or only white space.
    case missingUsername
    /// The user name cannot be used; ``InputProblem`` says why.
    case invalidUsername(InputProblem)
    /// No password was given.
    case missingPassword
    /// The password cannot be used (too long, or contains a NUL byte).
    case invalidPassword(InputProblem)
    /// The user name and password do not match.
    case invalidCredentials
    /// The backend does not know the user (``AuthOutcome/notMine``). Only reported where a ``Gatekeeper``
    /// is configured to reveal it;
    /// otherwise unknown users get ``invalidCredentials`` so names cannot be probed.
    case userNotFound
    /// The account is locked, until the given time if the backend knows one.
    case accountLocked(until: Date?)
    /// The account has expired.
    case accountExpired
    /// The backend's rules refuse this login (an access list, a time window, an account not activated).
    case refusedByPolicy
    /// The password has expired and must be changed before signing in.
    case passwordChangeRequired
    /// The identity is authenticated but does not meet the requirement (for example, group membership).
    case notAuthorized(requirement: String)
    /// Too many failed sign-ins for this user name; try again after the given duration, when known.
    case tooManyAttempts(retryAfter: Duration?)
    /// The person cancelled the login, or the task running it was cancelled.
    case cancelled
    /// The backend itself failed (service down, misconfigured); `reason` says how, without secrets.
    case providerUnavailable(reason: String)

    /// Why a user name or password was refused before any provider saw it.
    public enum InputProblem: Hashable, Sendable {
        /// Longer than `maxBytes` bytes of UTF-8.
        case tooLong(maxBytes: Int)
        /// Contains a NUL byte.
        case nulByte
        /// Contains a line break.
        case lineBreak
        /// Contains another control character (C0, DEL or C1).
        case controlCharacter
        /// Contains `:`, the field separator of passwd-style files.
        case colon
        /// Not valid UTF-8.
        case invalidUTF8
        /// Starts or ends with white space.
        case surroundingWhitespace
        /// Contains an invisible formatting character, such as a bidirectional override (U+202E) that
        /// would make one name look like another.
        case invisibleCharacter
    }
}

extension AuthError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .missingUsername: "Enter a user name."
        case .invalidUsername(let problem): "That user name cannot be used: it \(problem.phrase)."
        case .missingPassword: "Enter a password."
        case .invalidPassword(let problem): "That password cannot be used: it \(problem.phrase)."
        case .invalidCredentials: "The user name or password is incorrect."
        case .userNotFound: "There is no such user."
        case .accountLocked(let until):
            if let until {
                "The account is locked until \(until.formatted(.iso8601))."
            } else {
                "The account is locked."
            }
        case .accountExpired: "The account has expired."
        case .refusedByPolicy: "This account may not sign in here now."
        case .passwordChangeRequired: "The password has expired and must be changed."
        case .notAuthorized(let requirement): "You are signed in but not allowed to do this (requires \(requirement))."
        case .tooManyAttempts(let retryAfter?):
            "Too many failed attempts; try again in \(Self.seconds(retryAfter)) seconds."
        case .tooManyAttempts(nil): "Too many failed attempts; try again later."
        case .cancelled: "The login was cancelled."
        case .providerUnavailable(let reason): "The login service is unavailable: \(reason)"
        }
    }

    private static func seconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds + (attoseconds > 0 ? 1 : 0)
    }
}

extension AuthError.InputProblem {
    /// A phrase completing "it …".
    public var phrase: String {
        switch self {
        case .tooLong(let maxBytes): "is longer than \(maxBytes) bytes"
        case .nulByte: "contains a NUL byte"
        case .lineBreak: "contains a line break"
        case .controlCharacter: "contains a control character"
        case .colon: "contains ':'"
        case .invalidUTF8: "is not valid UTF-8"
        case .surroundingWhitespace: "starts or ends with white space"
        case .invisibleCharacter: "contains an invisible or direction-changing character"
        }
    }
}
