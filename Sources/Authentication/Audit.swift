public import FoundationEssentials

/// A record of something security-relevant the gatekeeper did. Never holds a secret.
public struct AuditEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable {
        /// A login succeeded and a session began.
        case signedIn
        /// A login attempt failed; ``AuditEvent/reason`` says why.
        case signInFailed
        /// A login was cancelled by the person or the task.
        case signInCancelled
        /// A user name was refused because of too many failed attempts.
        case lockedOut
        /// A session was ended by ``Gatekeeper/signOut()``.
        case signedOut
        /// A session ended because its idle or absolute timeout passed.
        case sessionExpired
        /// An authenticated identity did not meet a protected action's requirement.
        case accessDenied
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

    public init(kind: Kind, username: String?, provider: String, reason: AuthError? = nil, time: Date = Date()) {
        self.kind = kind
        self.username = username
        self.provider = provider
        self.reason = reason
        self.time = time
    }
}

extension AuditEvent: CustomStringConvertible {
    public var description: String {
        var line = "\(time.formatted(.iso8601)) \(kind.rawValue) provider=\(provider)"
        if let username { line += " user=\(username.debugDescription)" }
        if let reason { line += " reason=\(reason.description.debugDescription)" }
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
