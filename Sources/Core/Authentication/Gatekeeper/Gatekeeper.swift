import GatekeeperSupport

/// Runs protected actions only for an authenticated, and where asked authorized, identity.
///
/// A gatekeeper holds at most one session. Protected actions ask it for an identity that meets their
/// ``Requirement`` with ``authorize(_:conversation:)`` (or, more often, through ``RequiresAuthentication``):
/// when a valid session meets the requirement the answer is immediate; otherwise the person is asked to
/// sign in through the conversation. Concurrent actions that find no session share one login instead of
/// prompting twice.
///
/// Sessions end on ``signOut()``, after ``Configuration/idleTimeout`` without a protected action, and
/// after ``Configuration/absoluteTimeout``, both measured on a clock that keeps counting while the
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
    ///   ``Configuration/maxAttempts`` tries.
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
                guard rounds <= max(configuration.maxAttempts, 1) else {
                    return Traced(.failure(.cancelled), trace: trace)
                }
                let answer = await login(
                    conversation: conversation, attempts: configuration.maxAttempts, joinExisting: true)
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
    /// up to ``Configuration/maxAttempts`` tries, replacing any current session.
    /// - Throws: the last login error, or ``AuthError/cancelled``.
    @discardableResult
    public func signIn(conversation: any Conversation) async throws(AuthError) -> Identity {
        try await signInWithTrace(conversation: conversation).outcome.get()
    }

    /// ``signIn(conversation:)``, answered with how the stack decided it (as
    /// ``authorizeWithTrace(_:conversation:)`` answers).
    public func signInWithTrace(conversation: any Conversation) async -> Traced<Result<Identity, AuthError>> {
        await login(conversation: conversation, attempts: configuration.maxAttempts, joinExisting: false)
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

extension Gatekeeper {
    /// How long sessions last and how failed logins are limited.
    public struct Configuration: Sendable {
        /// A session ends after this long without a protected action; `nil` for never.
        public var idleTimeout: Duration?
        /// A session ends this long after it began, however busy; `nil` for never.
        public var absoluteTimeout: Duration?
        /// How many tries an interactive login gets before it gives up.
        public var maxAttempts: Int
        /// When failed logins lock an account, under pam_faillock's rules; `nil` disables the lockout.
        public var lockout: LockoutPolicy?
        /// How long a failed login waits before it answers, randomised by up to ±25 % as pam_faildelay's
        /// is (so the wait does not tell one failure from another); zero for none. It is measured from the
        /// moment the password was handed to the backend, so how long the backend took to refuse (an
        /// unknown name at once, a known one after its hash) is not what the clock tells. The wait is an
        /// async sleep: it holds no thread, and cancelling the login ends it.
        public var failDelay: Duration
        /// Whether to tell the person that a user name is unknown. Off by default: unknown users get
        /// ``AuthError/invalidCredentials``, like a wrong password, so names cannot be probed.
        public var revealsUnknownUsers: Bool
        /// The prompt for the user name in an interactive login.
        public var usernamePrompt: String
        /// Where the logins come from (``LoginOrigin``): passed to providers (``AuthRequest/origin``),
        /// recorded as a failure's source (the service when there is neither a remote host nor a terminal,
        /// as PAM's service name is) and in audit records.
        public var origin: LoginOrigin
        /// The ``origin``'s terminal.
        public var terminal: String? {
            get { origin.terminal }
            set { origin.terminal = newValue }
        }
        /// The ``origin``'s remote host.
        public var remoteHost: String? {
            get { origin.remoteHost }
            set { origin.remoteHost = newValue }
        }
        /// The ``origin``'s requesting user.
        public var requestingUser: String? {
            get { origin.requestingUser }
            set { origin.requestingUser = newValue }
        }
        /// The ``origin``'s service.
        public var service: String {
            get { origin.service }
            set { origin.service = newValue }
        }
        /// The process of the program a login is served for, when it is not this one (gatekeeperd serving
        /// sudo's): audit records name it and the ``service``, not the process that serves.
        public var clientProcessID: Int32?
        /// Whether a person whose password has expired changes it during the login, as `login` and
        /// `sudo` have them do (``AuthRequest/mayChangeExpiredPassword``). On by default; turn it off where
        /// nobody can answer a new password's questions (a password read from a pipe): the login then
        /// fails with ``AuthError/passwordChangeRequired``. A login with fixed credentials
        /// (``Gatekeeper/signIn(_:)``) never changes a password.
        public var changesExpiredPasswords: Bool
        /// The executor the gatekeeper's own tasks prefer (the login its callers share, a sign-out); `nil`
        /// for the global concurrent executor. A one-shot tool that runs its login on its main thread
        /// passes that thread's executor, so no thread of Swift's pool is started for a login that only
        /// waits on its provider (its providers must then not wait on the main actor, whose thread is
        /// busy running the login).
        public var taskExecutor: (any TaskExecutor)?
        /// Whether anything reads the signed-in identity's groups (passed to providers as
        /// ``AuthRequest/readsGroups``). On by default; a tool that checks no group and hands the identity
        /// to nothing that reads them turns it off, and a provider may then leave their lookup to the first
        /// read, which never comes. Read after all (a requirement on a group), they are looked up then, on
        /// the reading thread.
        public var readsGroups: Bool
        /// Whether a login whose success no audit destination keeps (``AuditSink/keep(_:)``) is refused
        /// with ``AuthError/providerUnavailable(reason:)`` instead of admitted, as sudo refuses to run a
        /// command it cannot log when `ignore_audit_errors` is off. Off by default: the failure is reported
        /// and the login goes on. Failed logins are never refused on this ground (they are refused anyway).
        public var requiresAudit = false
        /// How long an attempt waits for a slot of its account's lockout when every one is held by attempts
        /// this process is still checking (``LockoutAttempt/waiting(_:)``): so many right passwords at once
        /// are each admitted, not refused as locked. Beyond it the attempt is refused with
        /// ``AuthError/loginsInFlight`` and counts nothing.
        public var lockoutWait: Duration = .seconds(10)

        public init(
            idleTimeout: Duration? = .seconds(15 * 60),
            absoluteTimeout: Duration? = .seconds(8 * 60 * 60),
            maxAttempts: Int = 3,
            lockout: LockoutPolicy? = LockoutPolicy(),
            failDelay: Duration = .seconds(2),
            revealsUnknownUsers: Bool = false,
            usernamePrompt: String = "Username: ",
            terminal: String? = nil,
            remoteHost: String? = nil,
            requestingUser: String? = nil,
            service: String = "gatekeeper",
            changesExpiredPasswords: Bool = true,
            taskExecutor: (any TaskExecutor)? = nil,
            readsGroups: Bool = true
        ) {
            self.idleTimeout = idleTimeout
            self.absoluteTimeout = absoluteTimeout
            self.maxAttempts = maxAttempts
            self.lockout = lockout
            self.failDelay = failDelay
            self.revealsUnknownUsers = revealsUnknownUsers
            self.usernamePrompt = usernamePrompt
            self.origin = LoginOrigin(
                service: service, terminal: terminal, remoteHost: remoteHost, requestingUser: requestingUser)
            self.changesExpiredPasswords = changesExpiredPasswords
            self.taskExecutor = taskExecutor
            self.readsGroups = readsGroups
        }
    }
}
