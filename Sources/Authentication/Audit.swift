public import FoundationEssentials

/// A record of something security-relevant the gatekeeper did. Never holds a secret.
public struct AuditEvent: Sendable, Hashable {
    /// What happened. Kinds may be added (a sink that switches over them needs a `default`), so a new
    /// kind of event breaks no sink.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name in records (`signedIn`, `signInFailed` …).
        public let rawValue: String
        public var description: String { rawValue }

        private init(_ rawValue: String) { self.rawValue = rawValue }

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
    }

    public var kind: Kind
    /// The user name concerned, when one is known.
    public var username: String?
    /// The provider's name.
    public var provider: String
    /// Why a login failed or access was denied.
    public var reason: AuthError?
    /// Wall-clock time, for people reading the record; session timing never uses it.
    public var time: Date
    /// More about the event when there is more (a stack's trace); never a secret.
    public var detail: String?

    public init(
        kind: Kind,
        username: String?,
        provider: String,
        reason: AuthError? = nil,
        time: Date = Date(),
        detail: String? = nil
    ) {
        self.kind = kind
        self.username = username
        self.provider = provider
        self.reason = reason
        self.time = time
        self.detail = detail
    }
}

extension AuditEvent: CustomStringConvertible {
    public var description: String {
        var line = "\(time.formatted(.iso8601)) \(kind.rawValue) provider=\(provider)"
        if let username { line += " user=\(username.debugDescription)" }
        if let reason { line += " reason=\(reason.description.debugDescription)" }
        if let detail { line += " detail=\(detail.debugDescription)" }
        return line
    }
}

/// Where audit events go: syslog, a file, a test's array. Called from any task; must not block for long.
public protocol AuditSink: Sendable {
    func record(_ event: AuditEvent)
}

/// Drops every event.
public struct DiscardingAuditSink: AuditSink {
    public init() {}
    public func record(_ event: AuditEvent) {}
}
