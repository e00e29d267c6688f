/// Where a ``Gatekeeper`` counts failed logins per account and remembers who is locked out.
///
/// The gatekeeper asks before each login — before any provider is asked or any password hashed —
/// whether the account is locked out under its ``LockoutPolicy``, records each failure and each
/// success. Failures are counted against the account's own spelling when the backend reports one
/// (``AuthOutcome/rejected(_:canonicalUsername:)``).
///
/// Two stores ship: ``MemoryLockoutStore`` keeps the count in memory, for the life of a process; the
/// host-protection module's `FaillockStore` keeps it in files in pam_faillock's format, shared by every
/// process and by pam_faillock itself. A store must be safe to call from many tasks at once and must
/// fail closed: when it cannot tell whether an account is locked it throws, and the login is refused.
public protocol LockoutStore: Sendable {
    /// Whether `account` may try to sign in now.
    /// - Throws: ``AuthError/providerUnavailable(reason:)`` when the state cannot be read; the login is
    ///   then refused.
    func status(of account: String, policy: LockoutPolicy) throws(AuthError) -> LockoutStatus

    /// Counts a failed login for `account`.
    /// - Parameters:
    ///   - known: Whether a backend knows the account. Names that match no account must not let anyone
    ///     fill memory or disk, nor learn which names exist: they are counted alike, within a bound.
    ///   - source: Where the attempt came from.
    /// - Returns: The account's status after the failure.
    func recordFailure(
        of account: String,
        known: Bool,
        source: LoginSource,
        policy: LockoutPolicy
    ) throws(AuthError) -> LockoutStatus

    /// A successful login for `account`: its count starts again.
    func recordSuccess(of account: String) throws(AuthError)

    /// An administrator unlocks `account`: its failures are forgotten.
    func unlock(_ account: String) throws(AuthError)
}
