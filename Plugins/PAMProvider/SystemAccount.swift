import Authentication

#if canImport(Glibc)
    import Glibc
#endif

/// What the system's user database says about an account: for the identity of a PAM login.
enum SystemAccount {
    /// The identity of `user`: display name from GECOS, uid, gid, home, shell, and group names. A user
    /// PAM knows but the user database does not (a module with its own accounts) gets a bare identity.
    static func identity(of user: String, provider: String) -> Identity {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        guard getpwnam_r(user, &entry, &buffer, buffer.count, &found) == 0, found != nil else {
            return Identity(username: user, provider: provider)
        }
        let gecos = entry.pw_gecos.map { String(cString: $0) } ?? ""
        let fullName = gecos.split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return Identity(
            username: user,
            displayName: fullName.isEmpty ? nil : fullName,
            groups: groups(of: user, primary: entry.pw_gid),
            provider: provider,
            attributes: [
                "uid": String(entry.pw_uid),
                "gid": String(entry.pw_gid),
                "home": entry.pw_dir.map { String(cString: $0) } ?? "",
                "shell": entry.pw_shell.map { String(cString: $0) } ?? "",
            ]
        )
    }

    /// The names of every group `user` belongs to, the primary one included.
    static func groups(of user: String, primary: gid_t) -> Set<String> {
        var count: Int32 = 32
        var ids = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(user, primary, &ids, &count) < 0 {
            guard count < 65_536 else { return [] }
            count = max(count, Int32(ids.count) * 2)
            ids = [gid_t](repeating: 0, count: Int(count))
        }
        var names = Set<String>()
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        for id in ids.prefix(Int(count)) {
            var group = Glibc.group()
            var found: UnsafeMutablePointer<Glibc.group>?
            if getgrgid_r(id, &group, &buffer, buffer.count, &found) == 0, found != nil, let name = group.gr_name {
                names.insert(String(cString: name))
            } else {
                names.insert(String(id))
            }
        }
        return names
    }
}
