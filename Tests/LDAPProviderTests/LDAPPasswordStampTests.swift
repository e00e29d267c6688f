import Testing

@testable import LDAPProvider

/// What an entry's password stamp is read from, and when two stamps still mean the same password.
struct LDAPPasswordStampTests {
    @Test func theStampIsThePasswordTimeElseModifyTimestampMarkedWhenFailedBindsAreRecorded() {
        let set = LDAPEntry(
            dn: "uid=a", attributes: ["pwdChangedTime": ["20260101000000Z"], "modifyTimestamp": ["20261205000000Z"]])
        #expect(LDAPLogin.passwordStamp(set) == "pwdChangedTime=20260101000000Z")
        let plain = LDAPEntry(dn: "uid=b", attributes: ["modifyTimestamp": ["20261205000000Z"]])
        #expect(LDAPLogin.passwordStamp(plain) == "modifyTimestamp=20261205000000Z")
        let guessed = LDAPEntry(
            dn: "uid=b", attributes: ["modifyTimestamp": ["20261205000100Z"], "pwdFailureTime": ["20261205000100.5Z"]])
        #expect(LDAPLogin.passwordStamp(guessed) == "modifyTimestamp=20261205000100Z (failed binds recorded)")
        let retried = LDAPEntry(dn: "uid=b", attributes: ["modifyTimestamp": ["1Z"], "passwordRetryCount": ["2"]])
        #expect(LDAPLogin.passwordStamp(retried) == "modifyTimestamp=1Z (failed binds recorded)")
        let directory = LDAPEntry(dn: "cn=b", attributes: ["pwdLastSet": ["134000000000000000"]])
        #expect(LDAPLogin.passwordStamp(directory) == "pwdLastSet=134000000000000000")
        #expect(LDAPLogin.passwordStamp(LDAPEntry(dn: "uid=c", attributes: [:])) == nil)
    }

    /// A modification time that moved to one with failed binds recorded (the guesses came) is no new password;
    /// one that moved with none recorded — none ever (no policy applies: a password set moves it), or the
    /// recorded ones cleared (a password deleted, or a good bind elsewhere) — or a password time that appeared
    /// or moved, is.
    @Test func failedBindsDoNotReadAsANewPassword() {
        let provider = LDAPAuthProvider(.init(uris: ["ldap://127.0.0.1:1"], base: "dc=example,dc=test"))
        let before = "modifyTimestamp=20261205000000Z"
        let guessed = "modifyTimestamp=20261205000100Z (failed binds recorded)"
        let cleared = "modifyTimestamp=20261205000200Z"
        #expect(provider.passwordUnchanged(saved: before, current: before))
        #expect(provider.passwordUnchanged(saved: before, current: guessed))
        #expect(
            provider.passwordUnchanged(
                saved: guessed, current: "modifyTimestamp=20261205000150Z (failed binds recorded)"))
        #expect(!provider.passwordUnchanged(saved: guessed, current: cleared))
        #expect(!provider.passwordUnchanged(saved: before, current: cleared))
        #expect(!provider.passwordUnchanged(saved: guessed, current: "pwdChangedTime=20261205000300Z"))
        #expect(!provider.passwordUnchanged(saved: "pwdChangedTime=1Z", current: "pwdChangedTime=2Z"))
        #expect(!provider.passwordUnchanged(saved: nil, current: "pwdChangedTime=2Z"))
        #expect(provider.passwordUnchanged(saved: nil, current: nil))
    }

    /// Across one login (the stamp its search read, and the one read once it answered): a good bind clears the
    /// failed binds a policy recorded, which moves a `modifyTimestamp` — that is the login's own doing; any other
    /// move (a reset: a password time appearing or moving, or a plain time moving) is a new password.
    @Test func aLoginsOwnBindMayClearRecordedFailures() {
        let provider = LDAPAuthProvider(.init(uris: ["ldap://127.0.0.1:1"], base: "dc=example,dc=test"))
        let guessed = "modifyTimestamp=20261205000100Z (failed binds recorded)"
        let cleared = "modifyTimestamp=20261205000200Z"
        #expect(provider.passwordUnchangedByLogin(before: guessed, after: cleared))
        #expect(provider.passwordUnchangedByLogin(before: "pwdChangedTime=1Z", after: "pwdChangedTime=1Z"))
        #expect(!provider.passwordUnchangedByLogin(before: "pwdChangedTime=1Z", after: "pwdChangedTime=2Z"))
        #expect(!provider.passwordUnchangedByLogin(before: guessed, after: "pwdChangedTime=20261205000200Z"))
        #expect(!provider.passwordUnchangedByLogin(before: "modifyTimestamp=20261205000000Z", after: cleared))
        #expect(!provider.passwordUnchangedByLogin(before: nil, after: cleared))
    }

    /// The stamp kept is the entry's identity and its password stamp: another entry under the name is never the
    /// same password, whatever its stamps; a stamp kept before entries were told apart must match exactly.
    @Test func anotherEntryUnderTheNameIsNeverTheSamePassword() {
        let provider = LDAPAuthProvider(.init(uris: ["ldap://127.0.0.1:1"], base: "dc=example,dc=test"))
        let first = LDAPEntry(
            dn: "uid=kim", attributes: ["entryUUID": ["1111"], "modifyTimestamp": ["20261205000000Z"]])
        let second = LDAPEntry(
            dn: "uid=kim",
            attributes: [
                "entryUUID": ["2222"], "modifyTimestamp": ["20261205000100Z"], "pwdFailureTime": ["20261205000100Z"],
            ])
        #expect(LDAPLogin.stamp(first) == "entryUUID=1111\nmodifyTimestamp=20261205000000Z")
        #expect(!provider.passwordUnchanged(saved: LDAPLogin.stamp(first), current: LDAPLogin.stamp(second)))
        let guessed = LDAPEntry(
            dn: "uid=kim",
            attributes: [
                "entryUUID": ["1111"], "modifyTimestamp": ["20261205000100Z"], "pwdFailureTime": ["20261205000100Z"],
            ])
        #expect(provider.passwordUnchanged(saved: LDAPLogin.stamp(first), current: LDAPLogin.stamp(guessed)))
        // Without entryUUID or nsUniqueId: the DN and the time the entry was made.
        let made = LDAPEntry(dn: "uid=kim", attributes: ["createTimestamp": ["20261201000000Z"]])
        #expect(LDAPLogin.stamp(made) == "dn=uid=kim createTimestamp=20261201000000Z\n")
        // Kept before entries were told apart: only the same password stamp.
        #expect(
            provider.passwordUnchanged(
                saved: "modifyTimestamp=20261205000000Z", current: "entryUUID=1\nmodifyTimestamp=20261205000000Z"))
        #expect(
            !provider.passwordUnchanged(
                saved: "modifyTimestamp=20261205000000Z",
                current: "entryUUID=2\nmodifyTimestamp=20261205000100Z (failed binds recorded)"))
        #expect(
            !provider.passwordUnchangedByLogin(
                before: "entryUUID=1\nmodifyTimestamp=1Z (failed binds recorded)",
                after: "entryUUID=2\nmodifyTimestamp=2Z"))
    }
}
