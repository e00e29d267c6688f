/// Where a ``Gatekeeper`` counts failed logins per account and remembers who is locked out.
///
/// The gatekeeper asks before each login whether the account is locked out, records each failure (with
/// the threshold and duration of its ``Gatekeeper/Configuration``) and each success. Failures are
/// counted against the account's own spelling when the backend reports one
/// (``AuthOutcome/rejected(_:canonicalUsername:)``). ``MemoryLockoutStore`` keeps them in memory, per
/// process; a store may keep them anywhere (a file that survives restarts, a shared database), as long
/// as it is safe to call from many tasks at once and fails closed.
public protocol LockoutStore: Sendable {
    /// How much longer `username` is locked out, or `nil` when it is not.
    func remainingLockout(of username: String) -> Duration?

    /// Counts a failed login for `username`; after `threshold` in a row it is locked out for `duration`.
    /// - Returns: whether this failure locked the account out.
    func recordFailure(of username: String, threshold: Int, duration: Duration) -> Bool

    /// A successful login for `username`: its count of failures starts again.
    func recordSuccess(of username: String)
}
