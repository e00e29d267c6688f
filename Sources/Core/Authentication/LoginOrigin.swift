/// Where a login comes from, as PAM's items say it: the service it is made for (`PAM_SERVICE`), the
/// terminal (`PAM_TTY`), the remote host (`PAM_RHOST`) and the account of whoever asked for it
/// (`PAM_RUSER`). One value, from the tool or the daemon that knows it, to the providers
/// (``AuthRequest/origin``), the lockout's record of a failure (`pam_faillock`'s source) and the audit.
public struct LoginOrigin: Sendable, Hashable {
    /// The service's name: a tool's own, or the PAM service of the program a daemon serves.
    public var service: String
    /// The terminal the person is on, if any.
    public var terminal: String?
    /// The remote host the person connects from, if any.
    public var remoteHost: String?
    /// The account of whoever asked for the login, if known: the user running a local tool (as `sudo`
    /// sets `PAM_RUSER`).
    public var requestingUser: String?

    public init(
        service: String = "gatekeeper", terminal: String? = nil, remoteHost: String? = nil,
        requestingUser: String? = nil
    ) {
        self.service = service
        self.terminal = terminal
        self.remoteHost = remoteHost
        self.requestingUser = requestingUser
    }
}

/// A request that carries a login's ``LoginOrigin`` — ``AuthRequest``, ``PasswordChangeRequest`` — and so
/// answers for its parts by name, as a PAM module reads `PAM_TTY` or `PAM_RHOST` off its handle:
/// `request.terminal` is `request.origin.terminal`.
public protocol LoginOriginCarrying {
    var origin: LoginOrigin { get set }
}

extension LoginOriginCarrying {
    /// The service the login is made for (PAM's `PAM_SERVICE`): the ``origin``'s.
    public var service: String {
        get { origin.service }
        set { origin.service = newValue }
    }
    /// The terminal the person is on, if any (PAM's `PAM_TTY`): the ``origin``'s.
    public var terminal: String? {
        get { origin.terminal }
        set { origin.terminal = newValue }
    }
    /// The remote host the person connects from, if any (PAM's `PAM_RHOST`): the ``origin``'s.
    public var remoteHost: String? {
        get { origin.remoteHost }
        set { origin.remoteHost = newValue }
    }
    /// The account of whoever asked for the login, if known: the user running a local tool (PAM's
    /// `PAM_RUSER`, as `sudo` sets it): the ``origin``'s.
    public var requestingUser: String? {
        get { origin.requestingUser }
        set { origin.requestingUser = newValue }
    }
}
