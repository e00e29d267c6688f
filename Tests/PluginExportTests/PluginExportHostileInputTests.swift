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
