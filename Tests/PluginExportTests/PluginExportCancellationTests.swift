import Authentication
import CGatekeeperPlugin
import TestSupport
import Testing

/// The host's `cancel` and `is_cancelled`: a cancelled login returns GK_OUTCOME_CANCELLED soon, whatever
/// the provider was doing, and no other login is touched.
@Suite(.timeLimit(.minutes(1)))
struct PluginExportCancellationTests {
    /// A provider that waits at `gate` (after asking nothing), then signs alice in.
    static func waiting(at gate: Gate) -> DoubleProvider {
        DoubleProvider { request throws(AuthError) in
            guard await gate.wait() else { throw .cancelled }
            return .authenticated(Identity(username: request.username, provider: "double"))
        }
    }

    /// The provider is busy (not in a question): the host's `cancel` cancels its task.
    @Test func cancelEndsALoginTheProviderIsWorkingOn() async throws {
        let gate = Gate()
        let instance = try ExportedInstance(Self.waiting(at: gate))
        let host = HostConversation()
        let call = instance.start("alice", host)
        defer { gate.open() }
        #expect(await eventually { gate.waitingCount == 1 })
        #expect(!call.hasReturned)
        host.cancel(instance)
        let answer = await call.value()
        #expect(answer?.kind == ExportedAnswer.cancelled, "\(String(describing: answer))")
        #expect(gate.cancelledWaits == 1)
    }

    /// A login the host has cancelled already when it calls `authenticate` (`is_cancelled` says so, its
    /// `cancel` came before there was a login to cancel) ends at once.
    @Test func aLoginCancelledBeforeItStartsEndsAtOnce() async throws {
        let gate = Gate()
        let instance = try ExportedInstance(Self.waiting(at: gate))
        let host = HostConversation()
        host.cancel(instance)
        defer { gate.open() }
        let answer = await instance.login("alice", host)
        #expect(answer?.kind == ExportedAnswer.cancelled, "\(String(describing: answer))")
        #expect(gate.cancelledWaits == 1)
    }

    /// The person cancels at the prompt: the host's question answers GK_CANCELLED.
    @Test(arguments: [HostConversation.Reply.cancelled, .untilCancelled])
    func aCancelledQuestionEndsTheLogin(_ reply: HostConversation.Reply) async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let host = HostConversation(reply)
        let call = instance.start("alice", host)
        #expect(await eventually { host.events.count == 1 })
        host.cancel(instance)
        let answer = await call.value()
        #expect(answer?.kind == ExportedAnswer.cancelled, "\(String(describing: answer))")
        #expect(host.events == [.asked(Style.hidden, "Password: ")])
    }

    /// The conversation is the host's only while `authenticate` runs (gatekeeper_plugin.h): a login
    /// cancelled while the host is still in its question returns only once the host's callback has.
    @Test func aCancelledLoginReturnsOnlyAfterTheHostsQuestionHas() async throws {
        let instance = try ExportedInstance(DoubleProvider.alice())
        let host = HostConversation(.lingeringAfterCancel)
        let call = instance.start("alice", host)
        #expect(await eventually { host.callbacksRunning == 1 })
        host.cancel(instance)
        let answer = await call.value()
        #expect(answer?.kind == ExportedAnswer.cancelled, "\(String(describing: answer))")
        #expect(host.callbacksRunning == 0)
    }

    /// Two logins at once: cancelling one leaves the other to finish.
    @Test func cancelEndsOnlyTheLoginOfItsContext() async throws {
        let gate = Gate()
        let instance = try ExportedInstance(Self.waiting(at: gate))
        let (first, second) = (HostConversation(), HostConversation())
        let firstCall = instance.start("alice", first)
        let secondCall = instance.start("alice", second)
        defer { gate.open() }
        #expect(await eventually { gate.waitingCount == 2 })
        first.cancel(instance)
        #expect(await firstCall.value()?.kind == ExportedAnswer.cancelled)
        #expect(!secondCall.hasReturned && gate.waitingCount == 1)
        gate.open()
        #expect(await secondCall.value()?.kind == ExportedAnswer.authenticated)
    }

    /// Two logins given one context (a host that keeps one for all its logins): the first ending does not
    /// put the second out of reach of a cancel for that context.
    @Test func aCancelReachesEveryLoginOfItsContext() async throws {
        let gates = ["alice": Gate(), "bob": Gate()]
        let provider = DoubleProvider { request throws(AuthError) in
            guard await gates[request.username]!.wait() else { throw .cancelled }
            return .authenticated(Identity(username: request.username, provider: "double"))
        }
        let instance = try ExportedInstance(provider)
        let host = HostConversation()
        let alice = instance.start("alice", host)
        let bob = instance.start("bob", host)
        defer { gates.values.forEach { $0.open() } }
        #expect(await eventually { gates.values.allSatisfy { $0.waitingCount == 1 } })
        gates["alice"]!.open()
        #expect(await alice.value()?.kind == ExportedAnswer.authenticated)
        host.cancel(instance)
        let answer = await bob.value()
        #expect(answer?.kind == ExportedAnswer.cancelled, "\(String(describing: answer))")
    }

    /// A cancel for no login in progress — before its login, for an unknown context, with no context
    /// or instance — changes nothing: the next login with that context runs to its end.
    @Test func aCancelWithoutItsLoginChangesNothing() async throws {
        let instance = try ExportedInstance(DoubleProvider.alice())
        let host = HostConversation(.text("wonderland"))
        ExportedPlugin.table.entry.cancel(instance.pointer, host.context)
        ExportedPlugin.table.entry.cancel(instance.pointer, nil)
        ExportedPlugin.table.entry.cancel(nil, host.context)
        let answer = await instance.login("alice", host)
        #expect(answer?.kind == ExportedAnswer.authenticated, "\(String(describing: answer))")
        // And after it.
        ExportedPlugin.table.entry.cancel(instance.pointer, host.context)
        let again = await instance.login("alice", HostConversation(.text("wonderland")))
        #expect(again?.kind == ExportedAnswer.authenticated)
    }
}
