import Authentication
import CGatekeeperPlugin
import TestSupport
import Testing

/// What the ABI says of an instance's and an outcome's end: `release_outcome`, `sign_out`, `destroy`.
@Suite(.timeLimit(.minutes(1)))
struct PluginExportTeardownTests {
    @Test func destroyFreesTheProvider() throws {
        let freed = Locked(false)
        let instance = try ExportedInstance(DoubleProvider.alice(freed: freed))
        #expect(!freed.withLock { $0 })
        instance.destroy()
        #expect(freed.withLock { $0 }, "destroy left the provider alive")
        ExportedPlugin.table.entry.destroy(nil)
    }

    /// The table outlives its instances: one destroyed, the next made works.
    @Test func aNewInstanceWorksAfterAnotherIsDestroyed() async throws {
        try ExportedInstance(DoubleProvider.alice()).destroy()
        let instance = try ExportedInstance(DoubleProvider.alice())
        let answer = await instance.login("alice", HostConversation(.text("wonderland")))
        #expect(answer?.kind == ExportedAnswer.authenticated)
    }

    /// What `authenticate` filled in is the plugin's until `release_outcome`, which takes it back once;
    /// released again, or never filled in, there is nothing to free.
    @Test func releaseOutcomeFreesOnce() async throws {
        let instance = try ExportedInstance(DoubleProvider.answering(.unavailable(reason: "down")))
        let host = HostConversation()
        let released = await RunningCall { () -> [Bool] in
            var conversation = host.conversation
            var outcome = gk_outcome()
            let status = ExportedPlugin.table.entry.authenticate(instance.pointer, "alice", &conversation, &outcome)
            let filled = status == 0 && outcome.plugin_data != nil && String(cString: outcome.reason) == "down"
            ExportedPlugin.table.entry.release_outcome(instance.pointer, &outcome)
            let cleared = outcome.plugin_data == nil
            ExportedPlugin.table.entry.release_outcome(instance.pointer, &outcome)
            var empty = gk_outcome()
            ExportedPlugin.table.entry.release_outcome(instance.pointer, &empty)
            ExportedPlugin.table.entry.release_outcome(instance.pointer, nil)
            return [filled, cleared]
        }.value()
        #expect(released == [true, true])
    }

    /// `sign_out` tells the provider of a name a login could have given, and of nothing else.
    @Test func signOutReachesTheProvider() async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let done = await RunningCall { () -> Bool in
            ExportedPlugin.table.entry.sign_out(instance.pointer, "alice")
            ExportedPlugin.table.entry.sign_out(instance.pointer, nil)
            ExportedPlugin.table.entry.sign_out(nil, "bob")
            // Names no account can have, which no login of this plugin gave: the provider is not told.
            for hostile in [
                "", "   ", "a:b", "\u{7}bell", "evil\u{202E}", " alice", String(repeating: "n", count: 10_000),
            ] {
                ExportedPlugin.table.entry.sign_out(instance.pointer, hostile)
            }
            return true
        }.value()
        #expect(done == true)
        let signedOut = provider.signOuts.withLock { $0 }
        #expect(signedOut.map(\.username) == ["alice"], "\(signedOut.map { $0.username.prefix(16) })")
        #expect(signedOut.map(\.provider) == [ExportedPlugin.name])
    }
}
