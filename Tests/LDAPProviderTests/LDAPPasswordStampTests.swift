import Testing

@testable import LDAPProvider

/// What an entry's password stamp is read from, with and without a password policy on the servers.
struct LDAPPasswordStampTests {
    @Test func theStampIsThePasswordTimeElseModifyTimestampOnlyWithoutAPolicy() {
        let set = LDAPEntry(
            dn: "uid=a", attributes: ["pwdChangedTime": ["20260101000000Z"], "modifyTimestamp": ["20261205000000Z"]])
        let plain = LDAPEntry(dn: "uid=b", attributes: ["modifyTimestamp": ["20261205000000Z"]])
        for advertised in [true, false, nil] as [Bool?] {
            #expect(LDAPLogin.passwordStamp(set, policyAdvertised: advertised) == "pwdChangedTime=20260101000000Z")
        }
        #expect(LDAPLogin.passwordStamp(plain, policyAdvertised: true) == nil)
        #expect(LDAPLogin.passwordStamp(plain, policyAdvertised: false) == "modifyTimestamp=20261205000000Z")
        #expect(LDAPLogin.passwordStamp(plain, policyAdvertised: nil) == "modifyTimestamp=20261205000000Z")
        let directory = LDAPEntry(dn: "cn=b", attributes: ["pwdLastSet": ["134000000000000000"]])
        #expect(LDAPLogin.passwordStamp(directory, policyAdvertised: true) == "pwdLastSet=134000000000000000")
    }
}
