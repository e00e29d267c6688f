/// The two questions a stack answers about an account without a password, side by side.
///
/// ``ProviderChain/recheck(_:)`` asks whether a login remembered for an identity still stands: the entry
/// that signed the person in decides, and only an entry that keeps passwords may say no against it (locked,
/// expired, must change). ``AuthProvider/accountCheck(_:)`` is `pam_sm_acct_mgmt`'s question, asked with no
/// login before it and so no owner known: every backend of the stack is asked, and one that refuses
/// decides.
extension AuthProvider {
    /// `pam_sm_acct_mgmt`: whether `username` may log in now, asked without a password. Every backend of a
    /// stack is asked once (``AuthProvider/recheck(_:)``), whatever its kind's name (two users files are two
    /// backends); one that refuses decides (locked, expired, not activated, must change its password) — a
    /// locked account is `perm_denied` here, no password having been given to tell apart; else one that keeps
    /// the account valid says `success`; one that cannot be reached, `authinfo_unavail`; backends that do not
    /// have it, `user_unknown`; none that can tell (a device login's): `ignore`, for the program's other
    /// account modules.
    public func accountCheck(_ username: String) async -> PAMResult {
        let canonical: String
        switch await lookUpAccount(username) {
        case .unknown: return .userUnknown
        case .known(let name, _): canonical = name
        case .cannotTell: canonical = username
        }
        let backends = (self as? ProviderChain)?.backends ?? [self]
        var answer = PAMResult.ignore
        for backend in backends {
            switch await backend.recheck(Identity(username: canonical, provider: backend.name)) {
            case .valid: answer = .success
            case .refused(let why) where why.code == .userNotFound:
                // Not this backend's account: another may keep it.
                if answer == .ignore { answer = .userUnknown }
            case .refused(let why):
                return why.code == .accountLocked ? .permissionDenied : why.pamResult
            case .unavailable: if answer == .ignore || answer == .userUnknown { answer = .authinfoUnavailable }
            case .unverifiable: continue
            }
        }
        return answer
    }
}
