import Testing

@testable import OfflineCache

/// The order of online answers one cache keeps per account, and what it knows once its record starts over.
struct LoginOrderTests {
    @Test func anAnswerInFlightWhenTheRecordStartsOverIsNoLongerTheNewest() {
        let order = OfflineCachingProvider.LoginOrder()
        let inFlight = order.take("alice", digest: [1])
        #expect(order.isLatest(inFlight, for: "alice"))
        // As many other names as the record keeps, and one more: it starts over.
        for index in 0..<OfflineCachingProvider.Writes.limit { order.take("name\(index)") }
        #expect(!order.isLatest(inFlight, for: "alice"), "a refusal since may have been forgotten")
        let next = order.take("alice", digest: [1])
        #expect(order.isLatest(next, for: "alice") && !order.isLatest(inFlight, for: "alice"))
        // A refusal of the password being saved supersedes it; of another password, it does not.
        order.supersede("alice", ifItsLatestLoginIs: [2])
        #expect(order.isLatest(next, for: "alice"))
        order.supersede("alice", ifItsLatestLoginIs: [1])
        #expect(!order.isLatest(next, for: "alice"))
    }
}
