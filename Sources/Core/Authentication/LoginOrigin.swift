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
