import Authentication
import CGatekeeperPlugin
import PluginExport
import TestSupport
import Testing

/// A Swift provider exported through the C ABI (gatekeeper_plugin.h), driven through the table's function
/// pointers as a host drives it: what crosses is what the host reads.
@Suite(.timeLimit(.minutes(1)))
struct PluginExportTests {
    @Test func theTableDescribesThePlugin() {
        let entry = ExportedPlugin.table.entry
        #expect(entry.abi_version == UInt32(GK_PLUGIN_ABI_VERSION))
        #expect(entry.size == UInt32(MemoryLayout<gk_plugin>.size))
        #expect(String(cString: entry.name) == "export-test")
        #expect(String(cString: entry.summary) == "providers registered by the tests")
        let options = (0..<entry.option_count).map { index in
            let option = entry.options[index]
            return [option.name, option.value_name, option.help].map { String(cString: $0!) }
        }
        #expect(
            options == [
                ["double", "ID", "the registered provider"], ["fail", "TEXT", "refuse to start, with this message"],
            ])
        #expect(entry.create != nil && entry.authenticate != nil && entry.release_outcome != nil)
        #expect(entry.cancel != nil && entry.sign_out != nil && entry.destroy != nil)
        // One plugin per process: a second call gives the first table, whatever it is given.
        let again = PluginExport.table(name: "other", summary: "another", options: []) { _ in
            DoubleProvider.answering(.notMine)
        }
        #expect(again == UnsafeRawPointer(ExportedPlugin.table.pointer))
    }

    @Test func aSuccessfulLoginAnswersTheIdentity() async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("wonderland"))
        let answer = try #require(await instance.login("alice", host))
        #expect(answer.status == 0)
        #expect(answer.kind == ExportedAnswer.authenticated, "\(answer)")
        #expect(answer.username == "alice" && answer.displayName == "Alice Liddell")
        #expect(answer.groups == ["staff", "wheel"])
        #expect(answer.attributes == ["home": "/home/alice", "shell": "/bin/sh"])
        #expect(answer.reason == nil && answer.hasPluginData)
        #expect(host.events == [.asked(Style.hidden, "Password: ")])
        #expect(provider.requests.withLock { $0 } == ["alice"])
    }

    @Test func aWrongPasswordIsRefusedAndAnUnknownUserIsNotMine() async throws {
        let instance = try ExportedInstance(DoubleProvider.alice())
        let wrong = try #require(await instance.login("alice", HostConversation(.text("looking-glass"))))
        #expect(wrong.status == 0 && wrong.kind == ExportedAnswer.rejected, "\(wrong)")
        #expect(wrong.rejection == Int32(GK_REJECT_WRONG_CREDENTIALS.rawValue))
        #expect(wrong.username == nil && wrong.displayName == nil && wrong.groups.isEmpty && wrong.attributes.isEmpty)
        // Asked for a password all the same, and not let in with alice's.
        let bob = HostConversation(.text("wonderland"))
        let unknown = try #require(await instance.login("bob", bob))
        #expect(unknown.status == 0 && unknown.kind == ExportedAnswer.notMine, "\(unknown)")
        #expect(bob.events == [.asked(Style.hidden, "Password: ")])
    }

    @Test(
        arguments: zip(
            [
                Rejection.wrongCredentials, .locked(until: nil), .expiredAccount, .passwordChangeRequired,
                .refusedByPolicy, .tooManyTries, .activationRequired,
            ],
            [
                GK_REJECT_WRONG_CREDENTIALS, GK_REJECT_LOCKED, GK_REJECT_EXPIRED_ACCOUNT,
                GK_REJECT_PASSWORD_CHANGE_REQUIRED, GK_REJECT_POLICY, GK_REJECT_TOO_MANY_TRIES,
                GK_REJECT_ACTIVATION_REQUIRED,
            ].map { Int32($0.rawValue) }))
    func aRejectionCrossesAsItsCode(_ rejection: Rejection, _ code: Int32) async throws {
        let instance = try ExportedInstance(DoubleProvider.answering(.rejected(rejection)))
        let answer = try #require(await instance.login("alice", HostConversation()))
        #expect(answer.status == 0 && answer.kind == ExportedAnswer.rejected && answer.rejection == code, "\(answer)")
        #expect(answer.username == nil)
        // With the account's own spelling, when the backend gives one.
        let spelled = try ExportedInstance(
            DoubleProvider.answering(.rejected(rejection, canonicalUsername: "Alice")))
        let named = try #require(await spelled.login("alice", HostConversation()))
        #expect(named.kind == ExportedAnswer.rejected && named.rejection == code && named.username == "Alice")
    }

    @Test(
        arguments: [
            (AuthOutcome.notMine, ExportedAnswer.notMine, String?.none),
            (.ignored, ExportedAnswer.ignored, nil),
            (.unavailable(reason: "the directory is down"), ExportedAnswer.unavailable, "the directory is down"),
            (
                .failed(.systemError, reason: "the disk is full"), ExportedAnswer.unavailable,
                "system_err: the disk is full"
            ),
        ])
    func everyOtherAnswerCrossesAsItsKind(_ outcome: AuthOutcome, _ kind: Int32, _ reason: String?) async throws {
        let instance = try ExportedInstance(DoubleProvider.answering(outcome))
        let answer = try #require(await instance.login("alice", HostConversation()))
        #expect(answer.status == 0 && answer.kind == kind && answer.reason == reason, "\(answer)")
        #expect(answer.username == nil && answer.groups.isEmpty)
    }

    /// Questions and messages reach the host's callbacks in order, each with its style, and the host's
    /// answers reach the provider byte for byte.
    @Test func aConversationCrossesTheABI() async throws {
        let received = Locked<[[UInt8]]>([])
        let provider = DoubleProvider { request throws(AuthError) in
            await request.conversation.show("Welcome to the Looking-Glass", as: .info)
            let code = try await request.conversation.ask("Código: ")
            let password = try await request.conversation.askSecret("Password: ")
            await request.conversation.show("Careful now", as: .error)
            received.withLock { $0 = [Array(code.utf8), password.withUnsafeBytes { Array($0) }] }
            return .authenticated(Identity(username: request.username, provider: "double", attributes: ["code": code]))
        }
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("123 456"), .text("pässwörd ☃"))
        let answer = try #require(await instance.login("alice", host))
        #expect(answer.kind == ExportedAnswer.authenticated && answer.attributes == ["code": "123 456"], "\(answer)")
        #expect(
            host.events == [
                .shown(Style.info, "Welcome to the Looking-Glass"), .asked(Style.visible, "Código: "),
                .asked(Style.hidden, "Password: "), .shown(Style.error, "Careful now"),
            ])
        #expect(received.withLock { $0 } == [Array("123 456".utf8), Array("pässwörd ☃".utf8)])
    }

    /// Logins at once on one instance each get their own conversation's answer.
    @Test func concurrentLoginsKeepTheirOwnConversations() async throws {
        let instance = try ExportedInstance(DoubleProvider.alice())
        let calls = (0..<16).map { index in
            instance.start("alice", HostConversation(.text(index.isMultiple(of: 2) ? "wonderland" : "wrong")))
        }
        for (index, call) in calls.enumerated() {
            let answer = await call.value()
            let expected = index.isMultiple(of: 2) ? ExportedAnswer.authenticated : ExportedAnswer.rejected
            #expect(answer?.kind == expected, "login \(index): \(String(describing: answer))")
        }
    }
}
