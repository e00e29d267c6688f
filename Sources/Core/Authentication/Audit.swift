public import FoundationEssentials
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A record of something security-relevant the gatekeeper did. Never holds a secret.
///
/// A user name appears as ``username`` only once a backend has confirmed that it names an account. Until
/// then — at each attempt, for a name no backend knows, for a name refused before any backend is asked
/// — the event carries only ``userDigest``, a keyed hash of the name: a name that matches no account is
/// often a password typed into the wrong field.
public struct AuditEvent: Sendable, Hashable {
    /// What happened. Kinds may be added (a sink that switches over them needs a `default`), so a new
    /// kind of event breaks no sink.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name in records (`signedIn`, `signInFailed` …).
        public let rawValue: String
        public var description: String { rawValue }

        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// A login attempt began (the name is not yet known to match an account: ``AuditEvent/userDigest``).
        public static let attempt = Kind("attempt")
        /// A login succeeded and a session began.
        public static let signedIn = Kind("signedIn")
        /// A login attempt failed; ``AuditEvent/reason`` says why.
        public static let signInFailed = Kind("signInFailed")
        /// A login was cancelled by the person or the task.
        public static let signInCancelled = Kind("signInCancelled")
        /// A user name was refused because of too many failed attempts.
        public static let lockedOut = Kind("lockedOut")
        /// A session was ended by ``Gatekeeper/signOut()``.
        public static let signedOut = Kind("signedOut")
        /// A session ended because its idle or absolute timeout passed.
        public static let sessionExpired = Kind("sessionExpired")
        /// An authenticated identity did not meet a protected action's requirement.
        public static let accessDenied = Kind("accessDenied")
        /// How a stack of providers decided a login; ``AuditEvent/detail`` holds the trace.
        public static let stackDecision = Kind("stackDecision")
        /// A backend could not answer; ``AuditEvent/reason`` says why.
        public static let providerUnavailable = Kind("providerUnavailable")
        /// A password was changed (during a login that required it, or on request).
        public static let passwordChanged = Kind("passwordChanged")
        /// A password change was refused, failed or cancelled; ``AuditEvent/reason`` says why. Nothing
        /// was changed.
        public static let passwordChangeFailed = Kind("passwordChangeFailed")
        /// An administrator unlocked an account.
        public static let unlocked = Kind("unlocked")
        /// A login was accepted from the cache of recent logins, without asking for a password.
        public static let cachedLogin = Kind("cachedLogin")
        /// A configuration file was refused; ``AuditEvent/detail`` says where and why.
        public static let configurationRefused = Kind("configurationRefused")
        /// A caller asked gatekeeperd for what it may not (a user other than root, for another account);
        /// ``AuditEvent/detail`` says who and what, ``AuditEvent/processID`` is the caller's.
        public static let requestRefused = Kind("requestRefused")
        /// The lockout or the cache could not record something, so a login's record may be incomplete.
        public static let stateUnavailable = Kind("stateUnavailable")
    }

    public var kind: Kind
    /// The user name concerned, once a backend has confirmed that it names an account.
    public var username: String?
    /// A keyed hash of a name not (yet) known to name an account (``AuditSink/digest(ofUnverifiedName:)``).
    public var userDigest: String?
    /// The provider's name.
    public var provider: String
    /// The entry of a stack that decided, as `N:provider` (1 for the first), when a stack decided.
    public var stackEntry: String?
    /// Why a login failed or access was denied.
    public var reason: AuthError?
    /// Wall-clock time, for people reading the record; session timing never uses it.
    public var time: Date
    /// More about the event when there is more (a stack's trace); never a secret.
    public var detail: String?
    /// The terminal of the login (``Gatekeeper/Configuration/origin``).
    public var terminal: String?
    /// The remote host of the login (``Gatekeeper/Configuration/origin``).
    public var remoteHost: String?
    /// The service the login was for (``Gatekeeper/Configuration/origin``: a PAM program's service, served by
    /// gatekeeperd).
    public var service: String?
    /// The process the event is about: the one that recorded it, or the program a daemon served
    /// (``Gatekeeper/Configuration/clientProcessID``).
    public var processID: Int32

    public init(
        kind: Kind,
        username: String?,
        userDigest: String? = nil,
        provider: String,
        stackEntry: String? = nil,
        reason: AuthError? = nil,
        time: Date = Date(),
        detail: String? = nil,
        terminal: String? = nil,
        remoteHost: String? = nil,
        service: String? = nil,
        processID: Int32? = nil
    ) {
        self.kind = kind
        self.username = username
        self.userDigest = userDigest
        self.provider = provider
        self.stackEntry = stackEntry
        self.reason = reason
        self.time = time
        self.detail = detail
        self.terminal = terminal
        self.remoteHost = remoteHost
        self.service = service
        self.processID = processID ?? getpid()
    }
}

extension AuditEvent: CustomStringConvertible {
    public var description: String {
        var line = "\(time.formatted(.iso8601)) \(kind.rawValue) provider=\(provider)"
        if let username { line += " user=\"\(TextSafety.escaped(username))\"" }
        if let userDigest { line += " user-digest=\(userDigest)" }
        if let stackEntry { line += " entry=\"\(TextSafety.escaped(stackEntry))\"" }
        if let reason { line += " reason=\(reason.description.debugDescription)" }
        if let detail { line += " detail=\(detail.debugDescription)" }
        return line
    }
}

/// Where audit events go: syslog, a file, a test's array. Called from any task; must not block a login
/// for long, and must never fail one.
public protocol AuditSink: Sendable {
    func record(_ event: AuditEvent)

    /// Records `event` and says whether a destination kept it: what a gatekeeper that refuses logins it
    /// cannot audit (``Gatekeeper/Configuration/Login/requiresAudit``) asks. The default records it and
    /// answers `true`; a sink that can fail says when it did.
    func keep(_ event: AuditEvent) -> Bool

    /// A keyed hash of a name not known to name an account, recorded instead of the name. The default
    /// uses a key drawn at random for this process, so digests match only within one run; a sink that
    /// keeps records across runs uses a key it keeps.
    func digest(ofUnverifiedName name: String) -> String
}

extension AuditSink {
    public func keep(_ event: AuditEvent) -> Bool {
        record(event)
        return true
    }

    public func digest(ofUnverifiedName name: String) -> String {
        AuditDigest.processKey.digest(of: name)
    }
}

/// A keyed hash of user names (HMAC-SHA-256, the first 16 bytes in hexadecimal).
public struct AuditDigest: Sendable {
    private let key: [UInt8]

    /// - Parameter key: At least 16 bytes of secret.
    public init(key: [UInt8]) {
        precondition(key.count >= 16, "an audit digest key needs at least 16 bytes")
        self.key = key
    }

    /// A key drawn at random when first used, for this process.
    public static let processKey: AuditDigest = {
        AuditDigest(key: randomBytes(32))
    }()

    public func digest(of name: String) -> String {
        "hmac-sha256:" + SHA256.authenticationCode(Array(name.utf8), key: key).prefix(16).hexadecimal
    }
}

/// Drops every event.
public struct DiscardingAuditSink: AuditSink {
    public init() {}
    public func record(_ event: AuditEvent) {}
    /// Nothing is kept.
    public func keep(_ event: AuditEvent) -> Bool { false }
}
