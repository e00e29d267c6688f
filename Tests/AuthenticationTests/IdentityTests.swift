import Authentication
import GatekeeperSupport
import Testing

/// An identity's groups, given or looked up on their first read (a provider whose groups cost a lookup,
/// asked by a login that reads none).
@Suite(.timeLimit(.minutes(1)))
struct IdentityTests {
    static func lazy(_ lookups: Locked<Int>, groups: Set<String> = ["staff", "admin"]) -> Identity {
        Identity(username: "alice", displayName: "Alice", provider: "test", attributes: ["uid": "1000"]) {
            lookups.withLock { $0 += 1 }
            return groups
        }
    }

    @Test func groupsAreLookedUpOnTheirFirstReadAndOnlyThen() {
        let lookups = Locked(0)
        let identity = Self.lazy(lookups)
        #expect(!identity.groupsAreKnown)
        #expect(identity.username == "alice" && identity.attributes["uid"] == "1000")
        #expect(lookups.withLock { $0 } == 0, "read before anyone asked for the groups")
        #expect(identity.isMember(of: "admin"))
        #expect(identity.groups == ["staff", "admin"])
        #expect(identity.groupsAreKnown)
        #expect(lookups.withLock { $0 } == 1)
    }

    /// The lookup is shared by every copy, and made once however many read at once.
    @Test func copiesAndConcurrentReadersShareOneLookup() async {
        let lookups = Locked(0)
        let identity = Self.lazy(lookups)
        let copies = Array(repeating: identity, count: 16)
        await withTaskGroup(of: Set<String>.self) { group in
            for copy in copies { group.addTask { copy.groups } }
            for await groups in group { #expect(groups == ["staff", "admin"]) }
        }
        #expect(lookups.withLock { $0 } == 1)
    }

    /// Equal to, and hashed as, the identity given the same groups; a changed field copies the pending
    /// lookup, not the answer of another identity.
    @Test func aLazyIdentityIsTheIdentityItLooksUp() {
        let eager = Identity(
            username: "alice", displayName: "Alice", groups: ["staff", "admin"], provider: "test",
            attributes: ["uid": "1000"])
        let lookups = Locked(0)
        #expect(Self.lazy(lookups) == eager)
        #expect(Self.lazy(lookups).hashValue == eager.hashValue)
        #expect(Self.lazy(lookups, groups: ["staff"]) != eager)
        var renamed = Self.lazy(lookups)
        renamed.displayName = "A. Liddell"
        #expect(!renamed.groupsAreKnown)
        #expect(renamed.groups == ["staff", "admin"] && renamed.displayName == "A. Liddell")
        var regrouped = Self.lazy(lookups)
        regrouped.groups = ["ops"]
        #expect(regrouped.groups == ["ops"])
    }
}
