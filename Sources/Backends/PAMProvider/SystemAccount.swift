import Authentication
import CPAMLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What the system's user database says about an account: for the identity of a PAM login.
enum SystemAccount {
    /// The first buffer size for `getpwnam_r` and `getgrgid_r`; doubled on `ERANGE` (a group with
    /// thousands of members needs more).
    static let initialBufferBytes = 16 * 1024

    /// Whether `user` is still an account that may sign in: present in the user database, and, when the
    /// shadow entry can be read, its password not locked (`!`), the account not expired, and the password
    /// neither to be changed at the next login (`chage -d 0`) nor past its maximum age — a remembered
    /// login is not taken for a password that must be changed first.
    static func recheck(_ user: String, provider: String) -> Recheck {
        guard SystemAccounts.uid(of: user) != nil else { return .refused(.userNotFound) }
        var entry = spwd()
        let shadow = withGrowingBuffer { buffer, result in
            getspnam_r(user, &entry, buffer.baseAddress!, buffer.count, &result)
        } read: { (_: UnsafeMutablePointer<spwd>) in
            (
                locked: entry.sp_pwdp.map { $0.pointee == CChar(UInt8(ascii: "!")) } ?? false,
                expires: entry.sp_expire, changed: entry.sp_lstchg, maximum: entry.sp_max
            )
        }
        if let shadow {
            if shadow.locked { return .refused(.accountLocked(until: nil)) }
            let today = Int(time(nil) / 86_400)
            if shadow.expires > 0 && today >= shadow.expires { return .refused(.accountExpired) }
            // As pam_unix: a last change of 0 means "change at the next login"; -1 fields are unset.
            if shadow.changed == 0 { return .refused(.passwordChangeRequired) }
            if shadow.changed > 0 && shadow.maximum >= 0 && shadow.maximum < 99_999
                && today > shadow.changed + shadow.maximum
            {
                return .refused(.passwordChangeRequired)
            }
        }
        return .valid(identity(of: user, provider: provider))
    }

    /// The identity of `user`: display name from GECOS, uid, gid, home, shell, and group names — looked
    /// up now, or, with `groupsNow` false (a login that reads no group), on their first read. A user PAM
    /// knows but the user database does not (a module with its own accounts) gets a bare identity.
    static func identity(
        of user: String, provider: String, groupsNow: Bool = true, bufferBytes: Int = initialBufferBytes
    ) -> Identity {
        var entry = passwd()
        let found = withGrowingBuffer(from: bufferBytes) { buffer, result in
            getpwnam_r(user, &entry, buffer.baseAddress!, buffer.count, &result)
        } read: { (_: UnsafeMutablePointer<passwd>) in
            let gecos = entry.pw_gecos.map { String(cString: $0) } ?? ""
            return (
                fullName: gecos.split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? "",
                uid: entry.pw_uid, gid: entry.pw_gid,
                home: entry.pw_dir.map { String(cString: $0) } ?? "",
                shell: entry.pw_shell.map { String(cString: $0) } ?? ""
            )
        }
        guard let found else { return Identity(username: user, provider: provider) }
        let displayName = found.fullName.isEmpty ? nil : found.fullName
        let attributes = [
            "uid": String(found.uid), "gid": String(found.gid), "home": found.home, "shell": found.shell,
        ]
        guard groupsNow else {
            // The name service's group lookup (a module of its own to load, every group file to read) is
            // the costliest part of an identity; a login that reads no group never pays for it.
            return Identity(username: user, displayName: displayName, provider: provider, attributes: attributes) {
                groups(of: user, primary: found.gid, bufferBytes: bufferBytes)
            }
        }
        return Identity(
            username: user, displayName: displayName,
            groups: groups(of: user, primary: found.gid, bufferBytes: bufferBytes),
            provider: provider, attributes: attributes)
    }

    /// The names of every group `user` belongs to, the primary one included.
    static func groups(of user: String, primary: gid_t, bufferBytes: Int = initialBufferBytes) -> Set<String> {
        var count: Int32 = 32
        var ids = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(user, primary, &ids, &count) < 0 {
            guard count < 65_536 else { return [] }
            count = max(count, Int32(ids.count) * 2)
            ids = [gid_t](repeating: 0, count: Int(count))
        }
        var names = Set<String>()
        for id in ids.prefix(Int(count)) {
            var group = Glibc.group()
            let name = withGrowingBuffer(from: bufferBytes) { buffer, result in
                getgrgid_r(id, &group, buffer.baseAddress!, buffer.count, &result)
            } read: { (_: UnsafeMutablePointer<Glibc.group>) in
                group.gr_name.map { String(cString: $0) }
            }
            names.insert((name ?? nil) ?? String(id))
        }
        return names
    }
}
