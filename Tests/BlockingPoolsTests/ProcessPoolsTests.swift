import Authentication
import Testing

@testable import BlockingPools

/// The process's pools in one place: each role's defaults, sized or replaced by a host before first use,
/// never after, and never with a pool that would share threads a role must keep to itself.
struct ProcessPoolsTests {
    @Test func eachRoleHasItsDefaults() {
        let pools = ProcessPools.Pools()
        #expect(pools.pool(.shared).maxThreads == 64)
        #expect(pools.pool(.oneTimeCodes).maxThreads == 1)
        #expect(pools.pool(.passwordHashing).maxThreads == BlockingPool.processorCount)
        for role in ProcessPools.Role.allCases {
            let pool = pools.pool(role)
            #expect(pool === pools.pool(role), "\(role) is made once")
            #expect(pool.name == "gatekeeper.\(role.rawValue)")
            // Work that may change its thread (PAM, foreign code) keeps its threads to itself.
            #expect(pool.sharesThreads == ![.pam, .plugins, .pluginExport].contains(role))
        }
        // The process's own pools are the same kind, and BlockingPool.shared is the shared role's.
        #expect(BlockingPool.shared === ProcessPools.pool(.shared))
        #expect(!ProcessPools.pool(.pam).sharesThreads)
    }

    @Test func aHostSizesAPoolBeforeItsFirstUse() throws {
        let pools = ProcessPools.Pools()
        try pools.configure(.pam, maxThreads: 200, maxIdle: 8)
        let pam = pools.pool(.pam)
        #expect(pam.maxThreads == 200)
        #expect(pam.maxIdle == 8)
        #expect(!pam.sharesThreads)
        let own = BlockingPool(name: "service", maxThreads: 16, maxIdle: 2)
        try pools.replace(.shared, with: own)
        #expect(pools.pool(.shared) === own)
    }

    @Test func aPoolInUseOrUnsuitableIsNotReplaced() throws {
        let pools = ProcessPools.Pools()
        let first = pools.pool(.helpers)
        #expect(throws: ProcessPools.Refusal.alreadyInUse) {
            try pools.configure(.helpers, maxThreads: 4, maxIdle: nil)
        }
        #expect(pools.pool(.helpers) === first)
        // A sharing pool for PAM's transactions, two one-time code checks at once, no thread at all.
        let sharing = BlockingPool(name: "mixed", maxThreads: 8, maxIdle: 2)
        #expect(throws: ProcessPools.Refusal.unsuitable) { try pools.replace(.pam, with: sharing) }
        #expect(throws: ProcessPools.Refusal.unsuitable) {
            try pools.configure(.oneTimeCodes, maxThreads: 2, maxIdle: nil)
        }
        #expect(throws: ProcessPools.Refusal.unsuitable) { try pools.configure(.shared, maxThreads: 0, maxIdle: nil) }
        #expect(throws: ProcessPools.Refusal.unsuitable) { try pools.configure(.shared, maxThreads: 4, maxIdle: -1) }
        // Refused, nothing changed: the defaults come when first asked for.
        #expect(!pools.pool(.pam).sharesThreads)
        #expect(pools.pool(.oneTimeCodes).maxThreads == 1)
        // One pool for two roles: PAM's transactions beside plugins' code, or a plugin's questions behind its
        // own logins, is what separate roles are for.
        let fresh = ProcessPools.Pools()
        let own = BlockingPool(name: "own", maxThreads: 8, maxIdle: 2, sharesThreads: false)
        try fresh.replace(.plugins, with: own)
        #expect(throws: ProcessPools.Refusal.unsuitable) { try fresh.replace(.pluginExport, with: own) }
        #expect(throws: ProcessPools.Refusal.unsuitable) { try fresh.replace(.pam, with: own) }
        let hashing = fresh.pool(.passwordHashing)
        #expect(throws: ProcessPools.Refusal.unsuitable) { try fresh.replace(.shared, with: hashing) }
        #expect(fresh.pool(.pam) !== own && fresh.pool(.pluginExport) !== own && fresh.pool(.shared) !== hashing)
        // The refusal names the role, for the host's message.
        do {
            try pools.replace(.plugins, with: sharing)
            Issue.record("a sharing pool was taken for plugins")
        } catch {
            #expect(error.role == .plugins && error.description.contains("cannot serve plugins"))
        }
        // The process's pools: one in use is refused too.
        _ = ProcessPools.pool(.shared)
        #expect(throws: ProcessPools.Refusal.alreadyInUse) { try ProcessPools.configure(.shared, maxThreads: 8) }
    }
}
