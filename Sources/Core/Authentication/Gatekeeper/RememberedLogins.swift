/// Logins a host remembers across its runs, as sudo remembers them in its timestamp files: after a
/// login, further runs in the same place within a timeout need not ask again.
///
/// "The same place" is everything that made the login valid: the invoking Unix user, the terminal
/// session (or, without a terminal, the parent process), where the login's input comes from, and the
/// configuration it was made under. A ``Gatekeeper`` consults it only inside its admission path — after
/// the user name is read and the backend has named the account — and accepts a remembered login only when
/// the backend still vouches for the account (``AuthProvider/recheck(_:)``) and the lockout does not
/// refuse it; the requirement and the audit are the same as for any login.
public protocol RememberedLogins: Sendable {
    /// The login `account` (the backend's own spelling) made in this place recently, if there is one.
    func lookup(_ account: String) -> RememberedLogin?

    /// Remembers that `identity` signed in here now.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when it cannot be written (the login goes on;
    ///   the next one asks again).
    func remember(_ identity: Identity) throws(AuthError)
}

/// A login remembered by ``RememberedLogins``.
public struct RememberedLogin: Sendable, Hashable {
    public var username: String
    /// The provider that made it.
    public var provider: String
    /// How long ago it was made.
    public var age: Duration

    public init(username: String, provider: String, age: Duration) {
        self.username = username
        self.provider = provider
        self.age = age
    }
}
