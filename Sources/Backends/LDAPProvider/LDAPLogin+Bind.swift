import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// The binds themselves, with the password policy's controls, the password change, and libldap's errors.
extension LDAPLogin {
    /// A password change on a connection: the user's entry, a bind with the current password, and, when
    /// `new` is given, RFC 3062's Password Modify of the entry with the password-policy control.
    func change(on handle: OpaquePointer, _ username: String, current: Secret, new: Secret?, expiredOnly: Bool)
        -> Result<PasswordChangeOutcome, Failure>
    {
        let found: LDAPEntry?
        switch find(on: handle, username, forBind: true) {
        case .success(let entry): found = entry
        case .failure(let failure): return .failure(failure)
        }
        guard let entry = found else { return .success(.notMine) }
        let (status, policy) = bindWithPolicy(handle, entry.dn, current)
        // A change makes what was read of the entry old (its password's stamp): the next login searches afresh.
        pool.forget(foundKey(username))
        switch (status, policy.error) {
        case (LDAP_SUCCESS, _): break
        case (LDAP_INVALID_CREDENTIALS, PP_accountLocked?), (LDAP_INVALID_CREDENTIALS, PP_passwordExpired?):
            // The server takes no bind with this password any more: only an administrator can set another.
            return .success(.rejected(.refusedByPolicy))
        case (LDAP_INVALID_CREDENTIALS, _): return .success(.rejected(.wrongCurrentPassword))
        default: return .failure(Self.failure(status, "bind"))
        }
        if expiredOnly && policy.error != PP_changeAfterReset && policy.grace < 0 { return .success(.ignored) }
        guard let new else { return .success(.changed) }
        var request: UnsafeMutablePointer<LDAPControl>?
        guard gk_ldap_create_passwordpolicy_control(handle, &request) == LDAP_SUCCESS, let request else {
            return .failure(.unavailable("the password-policy control could not be made"))
        }
        defer { gk_ldap_control_free(request) }
        var controls: [UnsafeMutablePointer<LDAPControl>?] = [request, nil]
        var messageID: Int32 = 0
        let sent = entry.dn.withCString { dn in
            current.withUnsafeBytes { old in
                new.withUnsafeBytes { replacement in
                    var user = CLDAPLoader.berval(
                        bv_len: ber_len_t(strlen(dn)), bv_val: UnsafeMutablePointer(mutating: dn))
                    var oldValue = Self.value(old)
                    var newValue = Self.value(replacement)
                    return controls.withUnsafeMutableBufferPointer {
                        gk_ldap_passwd(handle, &user, &oldValue, &newValue, $0.baseAddress, nil, &messageID)
                    }
                }
            }
        }
        guard sent == LDAP_SUCCESS else { return .failure(Self.failure(sent, "password modify")) }
        let (result, diagnostic, modifyPolicy) = awaitResult(handle, messageID)
        if result == LDAP_SUCCESS { return .success(.changed) }
        if let error = modifyPolicy.error, let text = gk_ldap_passwordpolicy_err2txt(error) {
            // ppolicy's own words: "Password is too short for policy", "Password has been changed too
            // recently", "New password is in list of old passwords", "Password fails quality checks".
            return .success(.rejected(.unacceptable(TextSafety.escaped(String(cString: text)))))
        }
        switch result {
        case LDAP_CONSTRAINT_VIOLATION, LDAP_UNWILLING_TO_PERFORM:
            let said = diagnostic.map { TextSafety.escaped($0) } ?? ""
            return .success(.rejected(.unacceptable(said.isEmpty ? "the directory refused it" : said)))
        case LDAP_INSUFFICIENT_ACCESS: return .success(.rejected(.refusedByPolicy))
        default: return .failure(Self.failure(result, "password modify"))
        }
    }

    static func value(_ bytes: UnsafeRawBufferPointer) -> berval {
        CLDAPLoader.berval(
            bv_len: ber_len_t(bytes.count),
            bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
    }

    /// What the password-policy response control said: its error, grace logins left (-1 when none were
    /// used), seconds to expiry (-1 when not said).
    struct Policy {
        var error: LDAPPasswordPolicyError?
        var grace: Int32 = -1
        var expire: Int32 = -1
    }

    /// A simple bind as `dn` asking for the password-policy control (slapd's ppolicy overlay answers it).
    func bindWithPolicy(_ handle: OpaquePointer, _ dn: String, _ password: Secret) -> (Int32, Policy) {
        pool.noteServiceBound(handle, false)
        var request: UnsafeMutablePointer<LDAPControl>?
        guard gk_ldap_create_passwordpolicy_control(handle, &request) == LDAP_SUCCESS, let request else {
            return (bind(handle, dn, password), Policy())
        }
        defer { gk_ldap_control_free(request) }
        var controls: [UnsafeMutablePointer<LDAPControl>?] = [request, nil]
        var messageID: Int32 = 0
        let sent = password.withUnsafeBytes { bytes in
            var credential = berval(
                bv_len: ber_len_t(bytes.count),
                bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
            return controls.withUnsafeMutableBufferPointer {
                gk_ldap_sasl_bind(handle, dn, nil, &credential, $0.baseAddress, nil, &messageID)
            }
        }
        guard sent == LDAP_SUCCESS else { return (sent, Policy()) }
        let (status, _, policy) = awaitResult(handle, messageID)
        return (status, policy)
    }

    /// Waits (up to the timeout) for the result of the operation `messageID`: its status, the server's
    /// diagnostic message, and what its password-policy response control said.
    func awaitResult(_ handle: OpaquePointer, _ messageID: Int32) -> (Int32, String?, Policy) {
        var timeout = timeval(tv_sec: Int(configuration.timeout.components.seconds), tv_usec: 0)
        var result: OpaquePointer?
        let kind = gk_ldap_result(handle, messageID, LDAP_MSG_ALL, &timeout, &result)
        guard kind > 0, let result else {
            if let result { gk_ldap_msgfree(result) }
            return (kind == 0 ? LDAP_TIMEOUT : LDAP_SERVER_DOWN, nil, Policy())
        }
        var status: Int32 = 0
        var diagnostic: UnsafeMutablePointer<CChar>?
        var responses: UnsafeMutablePointer<UnsafeMutablePointer<LDAPControl>?>?
        guard gk_ldap_parse_result(handle, result, &status, nil, &diagnostic, nil, &responses, 1) == LDAP_SUCCESS
        else {
            return (LDAP_SERVER_DOWN, nil, Policy())
        }
        defer {
            if let responses { gk_ldap_controls_free(responses) }
            if let diagnostic { gk_ldap_memfree(diagnostic) }
        }
        let said = diagnostic.flatMap { String(validatingCString: $0) }
        var policy = Policy()
        if let responses, let response = gk_ldap_control_find(LDAP_CONTROL_PASSWORDPOLICYRESPONSE, responses, nil) {
            var expire: ber_int_t = -1
            var grace: ber_int_t = -1
            var error = PP_noError
            if gk_ldap_parse_passwordpolicy_control(handle, response, &expire, &grace, &error) == LDAP_SUCCESS {
                policy = Policy(error: error == PP_noError ? nil : error, grace: grace, expire: expire)
            }
        }
        return (status, said, policy)
    }

    func bind(_ handle: OpaquePointer, _ dn: String?, _ password: Secret?) -> Int32 {
        guard let dn, let password, password.count > 0 else {
            var empty = berval(bv_len: 0, bv_val: nil)
            return gk_ldap_sasl_bind_s(handle, "", nil, &empty, nil, nil, nil)
        }
        return password.withUnsafeBytes { bytes in
            var credential = berval(
                bv_len: ber_len_t(bytes.count),
                bv_val: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)))
            return gk_ldap_sasl_bind_s(handle, dn, nil, &credential, nil, nil, nil)
        }
    }

    func search(
        _ handle: OpaquePointer, base: String, filter: String, limit: Int32, attributes: [String]? = nil
    ) -> Result<[LDAPEntry], Failure> {
        var result: OpaquePointer?
        // libldap's list of names: C strings, then a null pointer.
        var names: [UnsafeMutablePointer<CChar>?] = (attributes ?? []).map { strdup($0) } + [nil]
        defer { for name in names { free(name) } }
        let status = names.withUnsafeMutableBufferPointer { list in
            gk_ldap_search_ext_s(
                handle, base, LDAP_SCOPE_SUBTREE, filter, attributes == nil ? nil : list.baseAddress, 0, nil, nil,
                nil, limit, &result)
        }
        defer { if let result { gk_ldap_msgfree(result) } }
        guard status == LDAP_SUCCESS || status == LDAP_SIZELIMIT_EXCEEDED, let result else {
            return .failure(Self.failure(status, "search"))
        }
        var entries: [LDAPEntry] = []
        var message = gk_ldap_first_entry(handle, result)
        while let current = message {
            entries.append(
                LDAPEntry(handle: handle, message: current, reading: attributes ?? LDAPEntry.loginAttributes))
            message = gk_ldap_next_entry(handle, current)
        }
        if status == LDAP_SIZELIMIT_EXCEEDED && entries.count < Int(limit) { entries.append(entries.last!) }
        return .success(entries)
    }

    static func failure(_ status: Int32, _ step: String) -> Failure {
        let message = gk_ldap_err2string(status).map { String(cString: $0) } ?? "error \(status)"
        switch status {
        case LDAP_TIMEOUT:
            return .timedOut("\(step): \(message)")
        case LDAP_SERVER_DOWN, LDAP_CONNECT_ERROR:
            return .unreachable("\(step): \(message)")
        case LDAP_UNAVAILABLE, LDAP_BUSY:
            return .unavailable("\(step): \(message)")
        default:
            return .refused("\(step): \(message)")
        }
    }

    /// `cn=staff,ou=groups,…` → `staff`.
    static func firstRDNValue(_ dn: String) -> String? {
        guard let equals = dn.firstIndex(of: "="), let comma = dn.firstIndex(of: ",") ?? Optional(dn.endIndex),
            equals < comma
        else { return nil }
        return String(dn[dn.index(after: equals)..<comma])
    }
}
