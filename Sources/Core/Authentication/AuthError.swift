public import FoundationEssentials

/// What went wrong when signing in, for every provider: a ``code`` to act on and a ``description`` a
/// person understands.
///
/// One design for every error a caller catches from a login: a struct, as swift-certificates'
/// `CertificateError` and swift-nio's `IOError` are, so new codes can be added without breaking
/// anyone — the conversations and providers that throw it, or the hosts that `switch` over ``code``
/// (with a `default`). Two errors are equal when their codes are; the details (``inputProblem``,
/// ``lockedUntil``, ``retryAfter``, ``requirement``, ``reason``) are there for messages and decisions.
///
/// No error ever carries a password: reasons (``providerUnavailable(reason:)``) come from providers, which
/// must keep secrets out of them.
public struct AuthError: CodedError {
    /// What went wrong, as a value to switch on. Codes may be added; a `switch` needs a `default`.
    public typealias Code = ErrorCode<AuthError>

    /// What went wrong.
    public let code: Code
    /// Why a user name or password was refused, for ``invalidUsername(_:)`` and ``invalidPassword(_:)``.
    public let inputProblem: InputProblem?
    /// Until when the account is locked, for ``accountLocked(until:)``, when the backend knows.
    public let lockedUntil: Date?
    /// How long to wait, for ``tooManyAttempts(retryAfter:)``, when known.
    public let retryAfter: Duration?
    /// The requirement that was not met, for ``notAuthorized(requirement:)``.
    public let requirement: String?
    /// How the backend failed, for ``providerUnavailable(reason:)``, or why a password change was refused,
    /// for ``passwordNotChanged(reason:)``; never a secret.
    public let reason: String?

    private init(
        _ code: Code,
        inputProblem: InputProblem? = nil,
        lockedUntil: Date? = nil,
        retryAfter: Duration? = nil,
        requirement: String? = nil,
        reason: String? = nil
    ) {
        self.code = code
        self.inputProblem = inputProblem
        self.lockedUntil = lockedUntil
        self.retryAfter = retryAfter
        self.requirement = requirement
        self.reason = reason
    }

    public static let missingUsername = AuthError(.missingUsername)
    public static func invalidUsername(_ problem: InputProblem) -> AuthError {
        AuthError(.invalidUsername, inputProblem: problem)
    }
    public static let missingPassword = AuthError(.missingPassword)
    public static func invalidPassword(_ problem: InputProblem) -> AuthError {
        AuthError(.invalidPassword, inputProblem: problem)
    }
    public static let invalidCredentials = AuthError(.invalidCredentials)
    public static let userNotFound = AuthError(.userNotFound)
    public static func accountLocked(until: Date?) -> AuthError { AuthError(.accountLocked, lockedUntil: until) }
    public static let accountExpired = AuthError(.accountExpired)
    public static let refusedByPolicy = AuthError(.refusedByPolicy)
    public static let accountNotActivated = AuthError(.accountNotActivated)
    public static let passwordChangeRequired = AuthError(.passwordChangeRequired)
    public static func passwordNotChanged(reason: String) -> AuthError {
        AuthError(.passwordNotChanged, reason: reason)
    }
    public static func notAuthorized(requirement: String) -> AuthError {
        AuthError(.notAuthorized, requirement: requirement)
    }
    public static func tooManyAttempts(retryAfter: Duration?) -> AuthError {
        AuthError(
            .tooManyAttempts, lockedUntil: retryAfter.map { Date.now.addingTimeInterval(Double(Self.seconds($0))) },
            retryAfter: retryAfter)
    }
    /// Too many failed logins, and the account stays locked until an administrator unlocks it.
    public static let lockedUntilUnlocked = AuthError(.tooManyAttempts, reason: "until an administrator unlocks it")
    public static let cancelled = AuthError(.cancelled)
    /// Every lockout slot of the account was held by logins still being checked, longer than the gatekeeper's
    /// ``Gatekeeper/Configuration/Attempts/lockoutWait``: refused, and nothing counted.
    public static let loginsInFlight = AuthError(.loginsInFlight)
    /// A credential that expired before it could be used: a device sign-in code not approved in time (PAM's
    /// `cred_expired`).
    public static let credentialsExpired = AuthError(.credentialsExpired)
    public static func providerUnavailable(reason: String) -> AuthError {
        AuthError(.providerUnavailable, reason: reason)
    }

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

extension AuthError {
    /// The PAM return code of a login that ended with this error, as pam_unix and pam_faillock answer (the
    /// daemon's answer to `pam_gatekeeper.so`, beside ``Rejection/pamResult`` for a backend's refusal): a
    /// locked account is `auth_err` like a wrong password (no oracle), a cancelled conversation `conv_err`.
    public var pamResult: PAMResult {
        switch code {
        case .cancelled: .conversationError
        case .userNotFound: .userUnknown
        case .accountExpired: .accountExpired
        case .passwordChangeRequired: .newAuthenticationTokenRequired
        case .refusedByPolicy, .accountNotActivated, .notAuthorized: .permissionDenied
        case .credentialsExpired: .credentialsExpired
        case .providerUnavailable: .authinfoUnavailable
        case .passwordNotChanged: .authenticationTokenError
        default: .authenticationError
        }
    }
}

extension AuthError: CustomStringConvertible {
    /// A sentence a person understands; it quotes no input.
    public var description: String {
        switch code {
        case .missingUsername: return "Enter a user name."
        case .invalidUsername: return "That user name cannot be used: it \(inputProblem?.phrase ?? "is malformed")."
        case .missingPassword: return "Enter a password."
        case .invalidPassword: return "That password cannot be used: it \(inputProblem?.phrase ?? "is malformed")."
        case .invalidCredentials: return "The user name or password is incorrect."
        case .userNotFound: return "There is no such user."
        case .accountLocked:
            guard let lockedUntil else { return "The account is locked." }
            return "The account is locked until \(lockedUntil.formatted(.iso8601))."
        case .accountExpired: return "The account has expired."
        case .refusedByPolicy: return "This account may not sign in here now."
        case .accountNotActivated: return "This account has not been activated yet."
        case .passwordChangeRequired: return "The password has expired and must be changed."
        case .passwordNotChanged: return "The password was not changed: \(reason ?? "the change was refused")."
        case .notAuthorized:
            return "You are signed in but not allowed to do this (requires \(requirement ?? "more rights"))."
        case .tooManyAttempts:
            if let reason { return "Too many failed attempts: the account is locked \(reason)." }
            guard let retryAfter else { return "Too many failed attempts; try again later." }
            let until = lockedUntil.map { " (locked until \($0.formatted(.iso8601)))" } ?? ""
            return "Too many failed attempts; try again in \(Self.seconds(retryAfter)) seconds\(until)."
        case .cancelled: return "The login was cancelled."
        case .loginsInFlight: return "Too many logins of this account are being checked at once; try again in a moment."
        case .credentialsExpired: return "The sign-in code expired before it was approved; sign in again."
        case .providerUnavailable: return "The login service is unavailable: \(reason ?? "no reason given")"
        default: return "The login failed (\(code))."
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

extension ErrorCode where Domain == AuthError {
    /// No user name was given, or only white space.
    public static var missingUsername: Self { Self("missingUsername") }
    /// The user name cannot be used; ``AuthError/inputProblem`` says why.
    public static var invalidUsername: Self { Self("invalidUsername") }
    /// No password was given.
    public static var missingPassword: Self { Self("missingPassword") }
    /// The password cannot be used; ``AuthError/inputProblem`` says why.
    public static var invalidPassword: Self { Self("invalidPassword") }
    /// The user name and password do not match.
    public static var invalidCredentials: Self { Self("invalidCredentials") }
    /// The backend does not know the user; reported only where a ``Gatekeeper`` is configured to
    /// reveal it (otherwise ``invalidCredentials``, so names cannot be probed).
    public static var userNotFound: Self { Self("userNotFound") }
    /// The account is locked (``AuthError/lockedUntil``, when the backend knows it).
    public static var accountLocked: Self { Self("accountLocked") }
    /// The account has expired.
    public static var accountExpired: Self { Self("accountExpired") }
    /// The backend's rules refuse this login (an access list, a time window).
    public static var refusedByPolicy: Self { Self("refusedByPolicy") }
    /// The account has not been activated yet.
    public static var accountNotActivated: Self { Self("accountNotActivated") }
    /// The password has expired and must be changed first.
    public static var passwordChangeRequired: Self { Self("passwordChangeRequired") }
    /// A password change was refused and nothing was changed; ``AuthError/reason`` says why, in words
    /// (the current password is wrong, the new one is too short or was used before).
    public static var passwordNotChanged: Self { Self("passwordNotChanged") }
    /// Signed in, but the identity does not meet the requirement (``AuthError/requirement``).
    public static var notAuthorized: Self { Self("notAuthorized") }
    /// Too many failed sign-ins (``AuthError/retryAfter``, when a wait is known).
    public static var tooManyAttempts: Self { Self("tooManyAttempts") }
    /// The person cancelled the login, or the task running it was cancelled.
    public static var cancelled: Self { Self("cancelled") }
    /// Every lockout slot of the account was held by logins still being checked, for longer than a login may
    /// wait (``Gatekeeper/Configuration/Attempts/lockoutWait``): nothing was counted; a moment later it may go through.
    public static var loginsInFlight: Self { Self("loginsInFlight") }
    /// A credential expired before it could be used: a device sign-in code not approved in time (PAM's
    /// `cred_expired`). Nothing was refused; signing in again starts anew.
    public static var credentialsExpired: Self { Self("credentialsExpired") }
    /// The backend itself failed (``AuthError/reason``).
    public static var providerUnavailable: Self { Self("providerUnavailable") }
}
