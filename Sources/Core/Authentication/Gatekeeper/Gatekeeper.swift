import GatekeeperSupport

/// Runs protected actions only for an authenticated, and where asked authorized, identity.
///
/// A gatekeeper holds at most one session. Protected actions ask it for an identity that meets their
/// ``Requirement`` with ``authorize(_:conversation:)`` (or, more often, through ``RequiresAuthentication``):
/// when a valid session meets the requirement the answer is immediate; otherwise the person is asked to
/// sign in through the conversation. Concurrent actions that find no session share one login instead of
/// prompting twice.
///
/// Sessions end on ``signOut()``, after ``Configuration/Sessions/idleTimeout`` without a protected action, and
/// after ``Configuration/Sessions/absoluteTimeout``, both measured on a clock that keeps counting while the
/// machine sleeps (`ContinuousClock`), never on wall time.
///
/// The state is broadcast to any number of observers through ``states()``.
///
/// `Gatekeeper` keeps its state behind a lock (`Locked`) rather than being an actor, so that the signed-in fast
/// path (one lock, one clock read) costs about as much as a bare flag check; see `make bench`.
public final class Gatekeeper: Sendable {
    /// The provider that checks logins.
    public let provider: any AuthProvider
    /// Timeouts, attempts and lockout.
    public let configuration: Configuration
    /// Where failed logins are counted.
    public let lockout: any LockoutStore
    /// Logins remembered across runs of a host tool, consulted once the user name is known.
    public let remembered: (any RememberedLogins)?

    let audit: any AuditSink
    let clock: SessionClock
    let timeouts: Timeouts
    /// Everything that changes, behind one lock.
    let core = Locked(LockedState())

    /// Creates a gatekeeper.
    /// - Parameters:
    ///   - provider: The backend that checks logins.
    ///   - configuration: Timeouts, attempts and lockout.
    ///   - audit: Where audit events go.
    ///   - lockout: Where failed logins are counted; in memory (on the same clock) by default.
    ///   - remembered: Logins remembered in this place (a host tool's login cache); a remembered login
    ///     is accepted through the same admission as any other, once the typed name names its account.
    ///   - now: A clock to use instead of `ContinuousClock`; inject one in tests to move time without
    ///     sleeping.
    public init(
        provider: any AuthProvider,
        configuration: Configuration = Configuration(),
        audit: any AuditSink = DiscardingAuditSink(),
        lockout: (any LockoutStore)? = nil,
        remembered: (any RememberedLogins)? = nil,
        now: (@Sendable () -> ContinuousClock.Instant)? = nil
    ) {
        self.provider = provider
        self.remembered = remembered
        self.configuration = configuration
        self.audit = audit
        self.lockout = lockout ?? MemoryLockoutStore(now: now)
        self.clock = SessionClock(now)
        self.timeouts = Timeouts(configuration)
    }

    /// What the gatekeeper is doing.
    public enum State: Sendable, Hashable {
        /// No session and no login in progress.
        case signedOut
        /// A login is in progress.
        case authenticating
        /// A session is open for `identity`; it ends at `expires` unless used (idle timeout) or ended sooner.
        /// `expires` is `nil` when neither timeout is configured.
        case signedIn(Identity, expires: ContinuousClock.Instant?)
    }

    /// The state now. A session past its timeout reads as signed out.
    public var state: State {
        let now = clock.now()
        return core.withLock { $0.state(at: now, clock: clock) }
    }

    /// The signed-in identity, if a valid session exists. Reading it does not count as use.
    public var identity: Identity? {
        let now = clock.now()
        return core.withLock { core in
            guard let session = core.session, !session.isExpired(at: now) else { return nil }
            return session.identity
        }
    }

    /// Returns an identity that meets `requirement`, signing in through `conversation` if there is no valid
    /// session. This is the check every protected action makes before it starts.
    ///
    /// - A valid session that meets the requirement is returned at once and counts as use (idle timeout).
    /// - A valid session that does not meet it is refused with ``AuthError/notAuthorized(requirement:)``;
    ///   the person is not asked to sign in as someone else.
    /// - Otherwise the person signs in (or joins a login already in progress), with up to
    ///   ``Configuration/Attempts/perLogin`` tries.
    ///
    /// - Throws: ``AuthError/cancelled`` when the person or the task cancels (returning promptly even if
    ///   the provider is still busy); ``AuthError/notAuthorized(requirement:)``; the last login error
    ///   when the attempts run out; ``AuthError/providerUnavailable(reason:)``.
    @inlinable
    public func authorize(_ requirement: Requirement, conversation: some Conversation) async throws(AuthError)
        -> Identity
    {
        if let identity = identityIfAdmitted(requirement) { return identity }
        return try await loginUntilAdmitted(requirement, conversation: conversation).outcome.get()
    }

    /// ``authorize(_:conversation:)``, answered with how the stack decided the login it took: which entry
    /// answered what, which one gave the identity, and the result, without secrets — the trace of the
    /// login's last attempt a stack answered (or of the expired password's change that followed it). The
    /// trace is `nil` when no login was needed, when the login was cancelled before a stack answered, and
    /// when the provider is no stack (``AuthProvider/authenticateWithTrace(_:)``). Each caller gets the
    /// trace of the login it waited for, whatever other logins of the gatekeeper answer meanwhile.
    @inlinable
    public func authorizeWithTrace(_ requirement: Requirement, conversation: some Conversation) async
        -> Traced<Result<Identity, AuthError>>
    {
        if let identity = identityIfAdmitted(requirement) { return Traced(.success(identity)) }
        return await loginUntilAdmitted(requirement, conversation: conversation)
    }

    /// The signed-in fast path: the identity of a valid session that meets `requirement`, counting as use,
    /// or `nil` when anything else is needed. Synchronous, so a caller pays no async call for it.
    @inlinable
    func identityIfAdmitted(_ requirement: Requirement) -> Identity? {
        if case .admitted(let identity) = admission(requirement) { return identity }
        return nil
    }

    /// Signs in until an identity meets `requirement`, answering with the trace of the last login taken.
    @usableFromInline
    func loginUntilAdmitted(_ requirement: Requirement, conversation: any Conversation) async
        -> Traced<Result<Identity, AuthError>>
    {
        // Bounded: each round either admits, refuses, or waits for a login that consumed attempts.
        var rounds = 0
        var trace: ProviderChain.Trace?
        while true {
            switch admission(requirement) {
            case .admitted(let identity):
                return Traced(.success(identity), trace: trace)
            case .refused(let identity):
                record(.accessDenied, identity.username, .notAuthorized(requirement: requirement.description))
                return Traced(.failure(.notAuthorized(requirement: requirement.description)), trace: trace)
            case .expired(let now):
                endExpiredSession(at: now)
                continue
            case .needsLogin:
                rounds += 1
                // A login that succeeded but whose session ended before this task could use it (signed out
                // at once by another task) is retried, up to the attempt limit.
                guard rounds <= max(configuration.attempts.perLogin, 1) else {
                    return Traced(.failure(.cancelled), trace: trace)
                }
                let answer = await login(
                    conversation: conversation, attempts: configuration.attempts.perLogin, joinExisting: true)
                trace = answer.trace
                if case .failure = answer.outcome { return answer }
            }
        }
    }

    /// Signs in with fixed credentials in one attempt, replacing any current session.
    /// - Throws: the login error, such as ``AuthError/invalidCredentials``, or ``AuthError/cancelled``.
    @discardableResult
    public func signIn(_ credentials: Credentials) async throws(AuthError) -> Identity {
        try await login(conversation: CredentialsConversation(credentials), attempts: 1, joinExisting: false).outcome
            .get()
    }

    /// Signs in through a conversation (asking for the user name, then whatever the provider asks), with
    /// up to ``Configuration/Attempts/perLogin`` tries, replacing any current session.
    /// - Throws: the last login error, or ``AuthError/cancelled``.
    @discardableResult
    public func signIn(conversation: any Conversation) async throws(AuthError) -> Identity {
        try await signInWithTrace(conversation: conversation).outcome.get()
    }

    /// ``signIn(conversation:)``, answered with how the stack decided it (as
    /// ``authorizeWithTrace(_:conversation:)`` answers).
    public func signInWithTrace(conversation: any Conversation) async -> Traced<Result<Identity, AuthError>> {
        await login(conversation: conversation, attempts: configuration.attempts.perLogin, joinExisting: false)
    }

    /// Ends the session and cancels any login in progress. Always succeeds locally; the provider is told
    /// on a best-effort basis.
    public func signOut() async {
        let now = clock.now()
        let ((ended, abandonedLogin), effects) = core.withLock { core in
            core.transition(at: now, clock: clock) { core -> (Identity?, Bool) in
                let ended = core.session?.identity
                core.session = nil
                guard core.login.isInFlight else { return (ended, false) }
                core.login.abandon()
                return (ended, true)
            }
        }
        effects.deliver()
        if abandonedLogin { record(.signInCancelled, nil) }
        guard let ended else { return }
        record(.signedOut, ended.username)
        await provider.signOut(ended)
    }

    /// Records an event about `username`, a name a backend has confirmed, or about no one.
    func record(
        _ kind: AuditEvent.Kind,
        _ username: String?,
        _ reason: AuthError? = nil,
        detail: String? = nil,
        stackEntry: String? = nil
    ) {
        audit.record(event(kind, username, reason, detail: detail, stackEntry: stackEntry))
    }

    /// The event of `kind` about the account `username`.
    func event(
        _ kind: AuditEvent.Kind, _ username: String?, _ reason: AuthError? = nil, detail: String? = nil,
        stackEntry: String? = nil
    ) -> AuditEvent {
        event(kind, reason, detail: detail, stackEntry: stackEntry) { $0.username = username }
    }

    /// Records an event about a name no backend has confirmed: only its keyed digest is kept.
    func record(_ kind: AuditEvent.Kind, unverified name: String, _ reason: AuthError? = nil, detail: String? = nil) {
        let digest = audit.digest(ofUnverifiedName: name)
        audit.record(event(kind, reason, detail: detail, stackEntry: nil) { $0.userDigest = digest })
    }

    func event(
        _ kind: AuditEvent.Kind,
        _ reason: AuthError?,
        detail: String?,
        stackEntry: String?,
        naming: (inout AuditEvent) -> Void
    ) -> AuditEvent {
        var event = AuditEvent(
            kind: kind, username: nil, provider: provider.name, stackEntry: stackEntry, reason: reason,
            detail: detail, terminal: configuration.origin.terminal, remoteHost: configuration.origin.remoteHost,
            service: configuration.clientProcessID != nil ? configuration.origin.service : nil,
            processID: configuration.clientProcessID)
        naming(&event)
        return event
    }
}
