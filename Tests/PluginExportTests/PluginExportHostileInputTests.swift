import Authentication
import CGatekeeperPlugin
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a host hands the plugin that the ABI forbids or allows only just: null pointers, a conversation
/// not filled in, names no account can have, answers the ABI rules out, numbers past any bound. The
/// plugin refuses each without reading past what it was given, and the provider never sees it.
@Suite(.timeLimit(.minutes(1)))
struct PluginExportHostileInputTests {
    /// A provider that asks one question of `style` and records what the conversation threw.
    static func asking(_ style: Int32, thrown: Locked<[AuthError]>) -> DoubleProvider {
        DoubleProvider { request throws(AuthError) in
            do throws(AuthError) {
                if style == Style.hidden {
                    _ = try await request.conversation.askSecret("Password: ")
                } else {
                    _ = try await request.conversation.ask("Code: ")
                }
            } catch {
                thrown.withLock { $0.append(error) }
                throw error
            }
            return .authenticated(Identity(username: request.username, provider: "double"))
        }
    }

    /// `authenticate` with each pointer it needs missing, on a thread of its own: refused with a nonzero
    /// status, the outcome left as it was, the provider never called.
    @Test func nullArgumentsAreRefused() async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("wonderland"))
        let results = await RunningCall { () -> [Int32] in
            var conversation = host.conversation
            var outcome = gk_outcome()
            let authenticate = ExportedPlugin.table.entry.authenticate!
            let statuses = [
                authenticate(nil, "alice", &conversation, &outcome),
                authenticate(instance.pointer, nil, &conversation, &outcome),
                authenticate(instance.pointer, "alice", nil, &outcome),
                authenticate(instance.pointer, "alice", &conversation, nil),
            ]
            return statuses + [outcome.kind, outcome.plugin_data == nil ? 0 : 1]
        }.value()
        let statuses = try #require(results)
        #expect(statuses.prefix(4).allSatisfy { $0 != 0 }, "\(statuses)")
        #expect(statuses.suffix(2) == [0, 0], "the outcome was written")
        #expect(provider.logins.count == 0 && host.events.isEmpty)
    }

    /// A conversation shorter than version 1's, or without one of its callbacks, is refused before
    /// anything is called through it.
    @Test(arguments: ["shorter than version 1", "no ask", "no show", "no is_cancelled"])
    func aConversationNotFilledInIsRefused(_ what: String) async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("wonderland"))
        let answer = await RunningCall { () -> ExportedAnswer in
            var conversation = host.conversation
            switch what {
            case "shorter than version 1": conversation.size = 8
            case "no ask": conversation.ask = nil
            case "no show": conversation.show = nil
            default: conversation.is_cancelled = nil
            }
            return instance.authenticate(Array("alice".utf8), conversation: &conversation)
        }.value()
        #expect(answer?.status != 0 && answer?.kind == 0, "\(String(describing: answer))")
        #expect(provider.logins.count == 0 && host.events.isEmpty)
    }

    /// The provider may rely on the name passing `Username.validate`, as behind a `Gatekeeper`: a name
    /// no account can have is answered "not mine" without the provider, and nothing is asked.
    @Test(
        arguments: [
            [], Array(repeating: 0x61, count: 257), Array(repeating: 0x61, count: 1 << 20), Array("ali\nce".utf8),
            Array("ali\u{1B}ce".utf8), [0x61, 0xFF, 0x62], Array(" alice".utf8), Array("ali:ce".utf8),
            Array("\u{202E}ecila".utf8),
        ] as [[UInt8]])
    func aNameNoAccountCanHaveIsNotMine(_ name: [UInt8]) async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("wonderland"))
        let answer = await RunningCall { instance.authenticate(name, host) }.value()
        #expect(answer?.status == 0 && answer?.kind == ExportedAnswer.notMine, "\(String(describing: answer))")
        #expect(provider.logins.count == 0 && host.events.isEmpty)
    }

    /// The longest name there may be reaches the provider as it was given.
    @Test func aNameAtTheBoundReachesTheProvider() async throws {
        let provider = DoubleProvider.alice()
        let instance = try ExportedInstance(provider)
        let name = String(repeating: "é", count: Username.maxBytes / 2)
        let answer = await instance.login(name, HostConversation(.text("wonderland")))
        #expect(answer?.kind == ExportedAnswer.notMine)
        #expect(provider.requests.withLock { $0 } == [name])
    }

    /// An answer the ABI rules out (a NUL inside it, not UTF-8 where text is asked, longer than any
    /// answer may be, a length that would be negative, none at all) or that a `Gatekeeper` would refuse
    /// (an empty or over-long password) fails the question: the provider gets an error that is not a
    /// cancellation, and the host an unavailable outcome — never a read past the answer, never a trap.
    @Test(arguments: [
        ("a hidden answer with a NUL", Style.hidden, HostConversation.Reply.bytes(Array("wonder\0land".utf8))),
        ("an empty hidden answer", Style.hidden, .bytes([])),
        ("a hidden answer past its bound", Style.hidden, .bytes(Array(repeating: 0x61, count: 4097))),
        ("a length past every bound", Style.hidden, .claiming(length: 1 << 40, Array("wonderland".utf8))),
        ("a length of SIZE_MAX", Style.hidden, .claiming(length: -1, Array("wonderland".utf8))),
        ("a length of SIZE_MAX, visible", Style.visible, .claiming(length: -1, Array("123456".utf8))),
        ("a visible answer with a NUL", Style.visible, .bytes(Array("123\0456".utf8))),
        ("a visible answer not UTF-8", Style.visible, .bytes([0x31, 0xC3, 0x28])),
        ("a visible answer past its bound", Style.visible, .bytes(Array(repeating: 0x31, count: 65_537))),
        ("GK_OK without an answer", Style.hidden, .noAnswer),
        ("GK_FAILED", Style.hidden, .failed),
        ("an unknown status", Style.visible, .status(42)),
    ])
    func anAnswerTheABIRulesOutFailsTheQuestion(
        _ what: String, _ style: Int32, _ reply: HostConversation.Reply
    ) async throws {
        let thrown = Locked<[AuthError]>([])
        let instance = try ExportedInstance(Self.asking(style, thrown: thrown))
        let answer = await instance.login("alice", HostConversation(reply))
        #expect(answer?.kind == ExportedAnswer.unavailable, "\(what): \(String(describing: answer))")
        #expect(answer?.reason?.isEmpty == false)
        let errors = thrown.withLock { $0 }
        #expect(errors.count == 1 && !errors.contains(.cancelled), "\(what): \(errors)")
    }

    /// Answers at their bounds are taken whole.
    @Test(arguments: [(Style.hidden, 4096), (Style.visible, 65_536)])
    func anAnswerAtItsBoundIsTaken(_ style: Int32, _ count: Int) async throws {
        let received = Locked<Int>(0)
        let provider = DoubleProvider { request throws(AuthError) in
            let length =
                style == Style.hidden
                ? try await request.conversation.askSecret("Password: ").count
                : try await request.conversation.ask("Code: ").utf8.count
            received.withLock { $0 = length }
            return .authenticated(Identity(username: request.username, provider: "double"))
        }
        let instance = try ExportedInstance(provider)
        let answer = await instance.login("alice", HostConversation(.bytes(Array(repeating: 0x61, count: count))))
        #expect(answer?.kind == ExportedAnswer.authenticated, "\(String(describing: answer))")
        #expect(received.withLock { $0 } == count)
    }

    /// C strings end at the first NUL: text with one inside is never handed over cut short. A prompt is
    /// not asked, an identity or account name is not answered (the host would read another name), and a
    /// message or reason crosses with the NUL replaced.
    @Test(arguments: [
        "a prompt", "a user name", "a display name", "a group", "an attribute", "an account's spelling",
    ])
    func textWithANulIsNeverCutShort(_ what: String) async throws {
        let provider = DoubleProvider { request throws(AuthError) in
            switch what {
            case "a prompt":
                _ = try await request.conversation.askSecret("Password for alice\0 (the demo account): ")
                return .authenticated(Identity(username: "alice", provider: "double"))
            case "a user name": return .authenticated(Identity(username: "alice\0root", provider: "double"))
            case "a display name":
                return .authenticated(Identity(username: "alice", displayName: "Alice\0Root", provider: "double"))
            case "a group":
                return .authenticated(Identity(username: "alice", groups: ["staff\0wheel"], provider: "double"))
            case "an attribute":
                return .authenticated(
                    Identity(username: "alice", provider: "double", attributes: ["role": "user\0admin"]))
            default: return .rejected(.wrongCredentials, canonicalUsername: "alice\0root")
            }
        }
        let instance = try ExportedInstance(provider)
        let host = HostConversation(.text("wonderland"))
        let answer = await instance.login("alice", host)
        #expect(answer?.kind == ExportedAnswer.unavailable, "\(what): \(String(describing: answer))")
        #expect(host.events.isEmpty, "\(host.events)")
    }

    @Test func aMessageOrReasonWithANulCrossesWhole() async throws {
        let provider = DoubleProvider { request throws(AuthError) in
            await request.conversation.show("Your account\0 expires tomorrow", as: .info)
            return .unavailable(reason: "the directory\0 is down")
        }
        let instance = try ExportedInstance(provider)
        let host = HostConversation()
        let answer = await instance.login("alice", host)
        #expect(answer?.kind == ExportedAnswer.unavailable && answer?.reason == "the directory\u{FFFD} is down")
        #expect(host.events == [.shown(Style.info, "Your account\u{FFFD} expires tomorrow")])
    }

    /// `create` with a count that is not a count, or arrays missing for it, refuses with a message and
    /// without reading them; with no options and no arrays it is the provider's own refusal; without a
    /// place for the message it refuses all the same.
    @Test func createRefusesWhatItCannotRead() async throws {
        let create = ExportedPlugin.table.entry.create!
        let results = await RunningCall { () -> [String?] in
            var messages: [String?] = []
            let name = UnsafePointer(strdup("double"))
            let value = UnsafePointer(strdup("unregistered"))
            defer {
                free(UnsafeMutableRawPointer(mutating: name))
                free(UnsafeMutableRawPointer(mutating: value))
            }
            let names: [UnsafePointer<CChar>?] = [name]
            let values: [UnsafePointer<CChar>?] = [value]
            for (count, withArrays) in [(-1, true), (Int.max, true), (2, false), (0, false)] {
                var error: UnsafeMutablePointer<CChar>?
                let made = names.withUnsafeBufferPointer { names in
                    values.withUnsafeBufferPointer { values in
                        create(
                            withArrays ? names.baseAddress : nil, withArrays ? values.baseAddress : nil, count, &error)
                    }
                }
                messages.append(made == nil ? error.map { String(cString: $0) } ?? "no message" : nil)
                free(error)
                if let made { ExportedPlugin.table.entry.destroy(made) }
            }
            messages.append(create(nil, nil, 0, nil) == nil ? "refused" : nil)
            return messages
        }.value()
        let messages = try #require(results)
        #expect(messages.allSatisfy { $0 != nil && $0 != "no message" }, "\(messages)")
        #expect(messages[0]?.contains("at most 1024") == true && messages[1]?.contains("at most 1024") == true)
        #expect(messages[2]?.contains("option 1 of 2 has no name") == true, "\(messages)")
        #expect(messages[3]?.contains("double") == true, "\(messages)")
        // A provider's own refusal crosses whole.
        let (refused, message) = ExportedInstance.create(["fail": "the users file is missing"])
        #expect(refused == nil && message?.contains("the users file is missing") == true)
    }

    /// Nothing the ABI hands back — identities, refusals, reasons of its own making — holds the password,
    /// whether it was right, wrong, or an answer the plugin refused.
    @Test func noSecretReachesAnythingTheABIReturns() async throws {
        let secret = "correct-horse-battery-staple"
        let provider = DoubleProvider { request throws(AuthError) in
            let password = try await request.conversation.askSecret("Password: ")
            guard password == Secret(copying: secret.utf8) else { return .rejected(.wrongCredentials) }
            return .authenticated(
                Identity(username: "alice", displayName: "Alice", groups: ["staff"], provider: "double"))
        }
        let instance = try ExportedInstance(provider)
        var texts: [String] = []
        for reply in [
            HostConversation.Reply.text(secret), .text(secret + "!"), .bytes(Array((secret + "\0x").utf8)),
            .bytes(Array(String(repeating: secret, count: 200).utf8)),
            .claiming(length: -1, Array(secret.utf8)),
        ] {
            let host = HostConversation(reply)
            let answer = try #require(await instance.login("alice", host))
            texts += answer.texts
            texts += host.events.map { "\($0)" }
        }
        #expect(texts.contains("Alice"), "the login did not succeed: \(texts)")
        #expect(!texts.contains { $0.contains("horse") }, "\(texts)")
    }
}
