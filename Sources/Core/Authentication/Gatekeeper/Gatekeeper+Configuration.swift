extension Gatekeeper {
    /// What a gatekeeper is told, grouped by what each part configures: how long a session lasts
    /// (``sessions``), how tries and failures are limited (``attempts``), where its logins come from
    /// (``origin``, and ``clientProcessID`` when serving another program), what a login does besides
    /// checking a password (``login``), and where the gatekeeper's own tasks run (``taskExecutor``).
    ///
    /// ```swift
    /// var configuration = Gatekeeper.Configuration()
    /// configuration.sessions.idleTimeout = .seconds(5 * 60)
    /// configuration.attempts.lockout = LockoutPolicy(deny: 3)
    /// configuration.origin.service = "deploy"
    /// configuration.login.requiresAudit = true
    /// ```
    public struct Configuration: Sendable {
        /// How long a session lasts once a login has made it.
        public struct Sessions: Sendable, Hashable {
            /// A session ends after this long without a protected action; `nil` for never.
            public var idleTimeout: Duration?
            /// A session ends this long after it began, however busy; `nil` for never.
            public var absoluteTimeout: Duration?

            public init(idleTimeout: Duration? = .seconds(15 * 60), absoluteTimeout: Duration? = .seconds(8 * 60 * 60))
            {
                self.idleTimeout = idleTimeout
                self.absoluteTimeout = absoluteTimeout
            }
        }

        /// How tries and failures are limited: tries per login, the wait before a refusal, the lockout, and
        /// what a refusal tells.
        public struct Attempts: Sendable, Hashable {
            /// How many tries an interactive login gets before it gives up.
            public var perLogin: Int
            /// How long a failed login waits before it answers, randomised by up to ±25 % as pam_faildelay's
            /// is (so the wait does not tell one failure from another); zero for none. It is measured from
            /// the moment the password was handed to the backend, so how long the backend took to refuse (an
            /// unknown name at once, a known one after its hash) is not what the clock tells. The wait is an
            /// async sleep: it holds no thread, and cancelling the login ends it
            /// (``Gatekeeper/delayRefusal(answeredAt:)``).
            public var failDelay: Duration
            /// When failed logins lock an account, under pam_faillock's rules; `nil` disables the lockout.
            public var lockout: LockoutPolicy?
            /// How long an attempt waits for a slot of its account's lockout when every one is held by
            /// attempts this process is still checking (``LockoutAttempt/waiting(_:)``): so many right
            /// passwords at once are each admitted, not refused as locked. Beyond it the attempt is refused
            /// with ``AuthError/loginsInFlight`` and counts nothing.
            public var lockoutWait: Duration
            /// Whether to tell the person that a user name is unknown. Off by default: unknown users get
            /// ``AuthError/invalidCredentials``, like a wrong password, so names cannot be probed.
            public var revealsUnknownUsers: Bool

            public init(
                perLogin: Int = 3, failDelay: Duration = .seconds(2), lockout: LockoutPolicy? = LockoutPolicy(),
                lockoutWait: Duration = .seconds(10), revealsUnknownUsers: Bool = false
            ) {
                self.perLogin = perLogin
                self.failDelay = failDelay
                self.lockout = lockout
                self.lockoutWait = lockoutWait
                self.revealsUnknownUsers = revealsUnknownUsers
            }
        }

        /// What a login does besides checking the password: the question it asks first, the expired
        /// password it changes, the groups it reads, the audit it insists on.
        public struct Login: Sendable, Hashable {
            /// The prompt for the user name in an interactive login.
            public var usernamePrompt: String
            /// Whether a person whose password has expired changes it during the login, as `login` and
            /// `sudo` have them do (``AuthRequest/mayChangeExpiredPassword``). On by default; turn it off
            /// where nobody can answer a new password's questions (a password read from a pipe): the login
            /// then fails with ``AuthError/passwordChangeRequired``. A login with fixed credentials
            /// (``Gatekeeper/signIn(_:)``) never changes a password.
            public var changesExpiredPasswords: Bool
            /// Whether anything reads the signed-in identity's groups (passed to providers as
            /// ``AuthRequest/readsGroups``). On by default; a tool that checks no group and hands the
            /// identity to nothing that reads them turns it off, and a provider may then leave their lookup
            /// to the first read, which never comes. Read after all (a requirement on a group), they are
            /// looked up then, on the reading thread.
            public var readsGroups: Bool
            /// Whether a login whose success no audit destination keeps (``AuditSink/keep(_:)``) is refused
            /// with ``AuthError/providerUnavailable(reason:)`` instead of admitted, as sudo refuses to run a
            /// command it cannot log when `ignore_audit_errors` is off. Off by default: the failure is
            /// reported and the login goes on. Failed logins are never refused on this ground (they are
            /// refused anyway).
            public var requiresAudit: Bool

            public init(
                usernamePrompt: String = "Username: ", changesExpiredPasswords: Bool = true, readsGroups: Bool = true,
                requiresAudit: Bool = false
            ) {
                self.usernamePrompt = usernamePrompt
                self.changesExpiredPasswords = changesExpiredPasswords
                self.readsGroups = readsGroups
                self.requiresAudit = requiresAudit
            }
        }

        /// How long a session lasts.
        public var sessions: Sessions
        /// How tries and failures are limited.
        public var attempts: Attempts
        /// Where the logins come from (``LoginOrigin``): passed to providers (``AuthRequest/origin``),
        /// recorded as a failure's source (the service when there is neither a remote host nor a terminal,
        /// as PAM's service name is) and in audit records.
        public var origin: LoginOrigin
        /// The process of the program a login is served for, when it is not this one (gatekeeperd serving
        /// sudo's): audit records name it and the ``origin``'s service, not the process that serves.
        public var clientProcessID: Int32?
        /// What a login does besides checking the password.
        public var login: Login
        /// The executor the gatekeeper's own tasks prefer (the login its callers share, a sign-out); `nil`
        /// for the global concurrent executor. A one-shot tool that runs its login on its main thread
        /// passes that thread's executor, so no thread of Swift's pool is started for a login that only
        /// waits on its provider (its providers must then not wait on the main actor, whose thread is
        /// busy running the login).
        public var taskExecutor: (any TaskExecutor)?

        /// A configuration of the settings most often changed, by name, every other one its default; set
        /// the rest on the parts (`maxAttempts` is ``Attempts/perLogin``).
        public init(
            idleTimeout: Duration? = .seconds(15 * 60),
            absoluteTimeout: Duration? = .seconds(8 * 60 * 60),
            maxAttempts: Int = 3,
            lockout: LockoutPolicy? = LockoutPolicy(),
            failDelay: Duration = .seconds(2),
            revealsUnknownUsers: Bool = false,
            usernamePrompt: String = "Username: ",
            origin: LoginOrigin = LoginOrigin(),
            changesExpiredPasswords: Bool = true,
            readsGroups: Bool = true
        ) {
            sessions = Sessions(idleTimeout: idleTimeout, absoluteTimeout: absoluteTimeout)
            attempts = Attempts(
                perLogin: maxAttempts, failDelay: failDelay, lockout: lockout, revealsUnknownUsers: revealsUnknownUsers)
            self.origin = origin
            login = Login(
                usernamePrompt: usernamePrompt, changesExpiredPasswords: changesExpiredPasswords,
                readsGroups: readsGroups)
        }
    }
}
