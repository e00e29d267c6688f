import Authentication
import CLDAPLoader
import GatekeeperSupport
import OfflineCache

#if canImport(Glibc)
    import Glibc
#endif

/// An entry's DN and attributes, copied out of libldap's message.
struct LDAPEntry {
    let dn: String
    private var attributes: [String: [String]] = [:]

    /// What a login reads of an entry.
    static let loginAttributes = ["uid", "cn", "uidNumber", "gidNumber", "homeDirectory", "loginShell", "memberOf"]

    /// An entry as given: for tests of what is read from one.
    init(dn: String, attributes: [String: [String]]) {
        self.dn = dn
        self.attributes = attributes
    }

    init(handle: OpaquePointer, message: OpaquePointer, reading names: [String]) {
        if let pointer = gk_ldap_get_dn(handle, message) {
            dn = String(cString: pointer)
            gk_ldap_memfree(pointer)
        } else {
            dn = ""
        }
        for name in names {
            guard let values = gk_ldap_get_values_len(handle, message, name) else { continue }
            var index = 0
            var list: [String] = []
            while let value = values[index] {
                let bytes = UnsafeRawBufferPointer(start: value.pointee.bv_val, count: Int(value.pointee.bv_len))
                if let text = String(validating: bytes, as: UTF8.self) { list.append(text) }
                index += 1
            }
            gk_ldap_value_free_len(values)
            attributes[name] = list
        }
    }

    func values(_ name: String) -> [String] { attributes[name] ?? [] }
    func first(_ name: String) -> String? { attributes[name]?.first }

    /// Whether a password policy has recorded failed binds in it (`pwdFailureTime`, 389-ds's
    /// `passwordRetryCount`).
    var recordsFailedBinds: Bool { first("pwdFailureTime") != nil || first("passwordRetryCount") != nil }
}
