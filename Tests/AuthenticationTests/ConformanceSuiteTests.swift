import AuthenticationTesting
import GatekeeperSupport
import Testing

@testable import Authentication

/// The conformance suite fails providers broken in the ways it checks: a suite that passed them would
/// pass every provider.
@Suite(.timeLimit(.minutes(1)))
struct ConformanceSuiteTests {
    /// alice's password, and how the provider is broken.
    struct Broken: AuthProvider {
        enum Fault: Sendable {
            /// Not broken: the control, which passes every check.
            case none
            /// Admits anyone who answers.
            case admitsAnyPassword
            /// Takes a cancelled question for a wrong password.
            case swallowsCancellation
            /// Puts the password in the identity's display name.
            case leaksThePassword
            /// Changes the password without asking the new one again.
            case changesWithoutTheRetype
        }

        let fault: Fault
        let password = Locked("wonderland")
        var name: String { "broken" }
        var changesPasswords: Bool { true }

        func lookUpAccount(_ username: String) async -> AccountLookup {
            username == "alice" ? .known(canonicalName: "alice", isSystemAdministrator: false) : .unknown
        }

        func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
            let answer: Secret
            do throws(AuthError) {
                answer = try await request.conversation.askSecret("Password: ")
            } catch  where error == .cancelled && fault == .swallowsCancellation {
                return .rejected(.wrongCredentials)
            }
            guard request.username == "alice" else { return .notMine }
            let right = answer == Secret(copying: password.withLock { $0 }.utf8)
            guard right || fault == .admitsAnyPassword else { return .rejected(.wrongCredentials) }
            let shown = fault == .leaksThePassword ? password.withLock { $0 } : "Alice"
            return .authenticated(Identity(username: "alice", displayName: shown, provider: name))
        }

        func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
            guard request.username == "alice" else { return .notMine }
            let current = try await request.conversation.askSecret(PasswordPrompt.current)
            guard current == Secret(copying: password.withLock { $0 }.utf8) else {
                return .rejected(.wrongCurrentPassword)
            }
            guard request.pass == .update else { return .changed }
            let new = try await request.conversation.askSecret(PasswordPrompt.new)
            if fault != .changesWithoutTheRetype {
                guard try await request.conversation.askSecret(PasswordPrompt.retype) == new else {
                    return .rejected(.unacceptable("the passwords do not match"))
                }
            }
            password.withLock { $0 = new.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
            return .changed
        }
    }

    static let cases: [(Broken.Fault, String)] = [
        (.admitsAnyPassword, "rejects a wrong password"),
        (.swallowsCancellation, "a cancelled prompt ends the login with cancelled"),
        (.leaksThePassword, "authenticates the right password"),
        (.changesWithoutTheRetype, "a password change that is refused, cancelled or only checked changes nothing"),
    ]

    /// The same provider unbroken passes every check, so each failure above is its fault's.
    @Test func theProviderUnbrokenPassesEveryCheck() async {
        let suite = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
            Broken(fault: .none)
        }
        #expect(await suite.runAll() == [])
    }

    @Test(arguments: cases)
    func aBrokenProviderFailsItsCheck(_ fault: Broken.Fault, _ check: String) async throws {
        let suite = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
            Broken(fault: fault)
        }
        let found = try #require(ProviderConformance.checks.first { $0.description == check })
        #expect(await suite.run(found) != [], "the suite passed a provider that \(fault)")
    }
}
