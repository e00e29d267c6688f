public import Authentication
import GatekeeperSupport

/// The checks every ``AuthProvider`` must pass, usable from any test framework.
///
/// Each check returns the problems it found; an empty list is a pass. With swift-testing:
///
/// ```swift
/// let suite = ProviderConformance(fixture: .init(username: "alice", password: "wonderland")) {
///     MockAuthProvider(users: …, delay: .zero)
/// }
///
/// @Test(arguments: ProviderConformance.checks)
/// func conformance(_ check: ProviderConformance.Check) async {
///     #expect(await suite.run(check) == [])
/// }
/// ```
public struct ProviderConformance: Sendable {
    /// An account the provider under test knows, and names it does not.
    public struct Fixture: Sendable {
        public var username: String
        public var password: String
        public var wrongPassword: String
        public var unknownUsername: String
        /// Whether the password is good for one login only (a one-time code): then, of concurrent logins
        /// with it, exactly one must be admitted and the others refused as a wrong password.
        public var singleUse: Bool
        /// Whether the provider asks with a visible prompt (a one-time code, which is no secret once used).
        public var asksVisibly: Bool

        public init(
            username: String,
            password: String,
            wrongPassword: String = "definitely-not-the-password",
            unknownUsername: String = "nobody-by-this-name",
            singleUse: Bool = false,
            asksVisibly: Bool = false
        ) {
            self.username = username
            self.password = password
            self.wrongPassword = wrongPassword
            self.unknownUsername = unknownUsername
            self.singleUse = singleUse
            self.asksVisibly = asksVisibly
        }
    }

    /// One named check.
    public struct Check: Sendable, CustomStringConvertible {
        public let description: String
        let body: @Sendable (ProviderConformance) async -> [String]
    }

    public let fixture: Fixture
    private let makeProvider: @Sendable () async throws -> any AuthProvider

    /// - Parameters:
    ///   - fixture: The account to sign in with.
    ///   - makeProvider: Builds a fresh provider for each check.
    public init(fixture: Fixture, makeProvider: @escaping @Sendable () async throws -> any AuthProvider) {
        self.fixture = fixture
        self.makeProvider = makeProvider
    }

    /// Runs one check; returns the problems found.
    public func run(_ check: Check) async -> [String] {
        await check.body(self)
    }

    /// Runs every check; returns the problems found, each prefixed with its check's name.
    public func runAll() async -> [String] {
        var problems: [String] = []
        for check in Self.checks {
            problems += await run(check).map { "\(check.description): \($0)" }
        }
        return problems
    }

    /// Every check, in order.
    public static let checks: [Check] = [
        Check(description: "authenticates the right password") { suite in
            await suite.withProvider { provider in
                let conversation = ScriptedConversation(.secret(suite.fixture.password))
                let outcome = try await provider.authenticate(suite.request(suite.fixture.username, conversation))
                guard case .authenticated(let identity) = outcome else {
                    return ["expected authenticated, got \(outcome)"]
                }
                var problems: [String] = []
                if identity.username != suite.fixture.username {
                    problems.append("identity user name is \(identity.username), not \(suite.fixture.username)")
                }
                // A chain's identity comes from the entry that admitted it.
                let names = (provider as? ProviderChain)?.providerNames ?? [provider.name]
                if !names.contains(identity.provider) {
                    problems.append("identity provider is \(identity.provider), not \(names.sorted())")
                }
                let hidden = conversation.events.contains { if case .askedSecret = $0 { true } else { false } }
                if !hidden && !suite.fixture.asksVisibly {
                    problems.append("the password was not asked through a hidden prompt")
                }
                return problems + suite.leaks(in: String(reflecting: identity) + identity.description)
            }
        },
        Check(description: "rejects a wrong password") { suite in
            await suite.withProvider { provider in
                let conversation = ScriptedConversation(.secret(suite.fixture.wrongPassword))
                let outcome = try await provider.authenticate(suite.request(suite.fixture.username, conversation))
                // The backend's own spelling of the account may come with it, and only that.
                guard
                    outcome == .rejected(.wrongCredentials)
                        || outcome == .rejected(.wrongCredentials, canonicalUsername: suite.fixture.username)
                else {
                    return ["expected rejected(wrongCredentials), got \(outcome)"]
                }
                return suite.leaks(in: String(reflecting: outcome))
            }
        },
        Check(description: "looks an account up without asking anything, and never knows an unknown name") { suite in
            await suite.withProvider { provider in
                var problems: [String] = []
                let known = await provider.lookUpAccount(suite.fixture.username)
                if known == .unknown { problems.append("the fixture's account was looked up as unknown") }
                if case .known(let name, _) = known, name != suite.fixture.username {
                    problems.append("the fixture's account was looked up as \(name)")
                }
                if case .known = await provider.lookUpAccount(suite.fixture.unknownUsername) {
                    problems.append("an unknown name was looked up as an account")
                }
                return problems
            }
        },
        Check(description: "asks an unknown user for a password and does not authenticate them") { suite in
            await suite.withProvider { provider in
                let conversation = ScriptedConversation(.secret(suite.fixture.password))
                let outcome = try await provider.authenticate(
                    suite.request(suite.fixture.unknownUsername, conversation)
                )
                var problems: [String] = []
                if outcome != .notMine && outcome != .rejected(.wrongCredentials) {
                    problems.append("expected notMine or rejected(wrongCredentials), got \(outcome)")
                }
                if conversation.questionCount == 0 {
                    problems.append("no password was asked, so the prompts reveal which names exist")
                }
                return problems
            }
        },
        Check(description: "a cancelled prompt ends the login with cancelled") { suite in
            await suite.expectThrows(.cancelled, answering: .cancel)
        },
        Check(description: "passes on the error a conversation throws") { suite in
            await suite.expectThrows(.invalidPassword(.nulByte), answering: .fail(.invalidPassword(.nulByte)))
        },
        Check(description: "a cancelled task ends the login with cancelled") { suite in
            await suite.withProvider { provider in
                let conversation = ScriptedConversation(.hang)
                let request = suite.request(suite.fixture.username, conversation)
                let login = Task { () async -> Result<AuthOutcome, AuthError> in
                    do throws(AuthError) {
                        return .success(try await provider.authenticate(request))
                    } catch {
                        return .failure(error)
                    }
                }
                await conversation.waitUntilHanging()
                login.cancel()
                switch await login.value {
                case .failure(.cancelled): return []
                case let result: return ["expected cancelled, got \(result)"]
                }
            }
        },
        Check(description: "serves concurrent logins, each with its own answer") { suite in
            await suite.withProvider { provider in
                try await withThrowingTaskGroup(of: (Int, AuthOutcome).self) { group in
                    for index in 0..<8 {
                        let password = index.isMultiple(of: 2) ? suite.fixture.password : suite.fixture.wrongPassword
                        let request = suite.request(suite.fixture.username, ScriptedConversation(.secret(password)))
                        group.addTask { (index, try await provider.authenticate(request)) }
                    }
                    var problems: [String] = []
                    var admitted = 0
                    for try await (index, outcome) in group {
                        switch (index.isMultiple(of: 2), outcome) {
                        case (true, .authenticated(let identity)) where identity.username == suite.fixture.username:
                            admitted += 1
                            if suite.fixture.singleUse && admitted > 1 {
                                problems.append("a single-use password admitted \(admitted) concurrent logins")
                            }
                            continue
                        case (true, .rejected(.wrongCredentials, _)) where suite.fixture.singleUse:
                            continue  // Used already by a concurrent login.
                        case (false, .rejected(.wrongCredentials, _)):
                            continue
                        case (let right, _):
                            let password = right ? "the right password" : "a wrong password"
                            problems.append("login \(index), with \(password), got \(outcome)")
                        }
                    }
                    if admitted == 0 { problems.append("no login with the right password was admitted") }
                    return problems
                }
            }
        },
        Check(description: "a password change that is refused, cancelled or only checked changes nothing") { suite in
            await suite.withProvider { provider in
                let fixture = suite.fixture
                let new = "Tq7#-vivid-Orchard-Lantern"
                guard provider.changesPasswords else {
                    let outcome = try await provider.changePassword(
                        of: fixture.username, conversation: ScriptedConversation(.secret(fixture.password)))
                    return outcome == .ignored || outcome.pamResult == .permissionDenied
                        ? [] : ["a provider that keeps no passwords answered a change with \(outcome)"]
                }
                var problems: [String] = []
                // The preliminary pass, with the right current password: ready, and nothing changed.
                let preliminary = try await provider.changePassword(
                    PasswordChangeRequest(
                        username: fixture.username, conversation: ScriptedConversation(.secret(fixture.password)),
                        pass: .preliminaryCheck))
                if preliminary != .changed { problems.append("the preliminary pass answered \(preliminary)") }
                // A wrong current password: refused as such.
                let wrong = try await provider.changePassword(
                    of: fixture.username,
                    conversation: ChangeConversation(current: fixture.wrongPassword, new: new, cancelsAtRetype: false))
                if wrong != .rejected(.wrongCurrentPassword) {
                    problems.append("a wrong current password answered \(wrong)")
                }
                // Cancelled at the repeated new password, and only there: a cancellation that came from
                // anywhere else would prove nothing of this one.
                let cancelling = ChangeConversation(current: fixture.password, new: new, cancelsAtRetype: true)
                do throws(AuthError) {
                    let outcome = try await provider.changePassword(of: fixture.username, conversation: cancelling)
                    problems.append("a change cancelled at its last question answered \(outcome)")
                } catch {
                    if error != .cancelled { problems.append("a cancelled change threw \(error)") }
                }
                if !cancelling.cancelledAtRetype {
                    problems.append("the change never asked the new password again, where it was to be cancelled")
                }
                let unknown = try await provider.changePassword(
                    of: fixture.unknownUsername, conversation: ScriptedConversation(.secret(fixture.password)))
                if unknown.pamResult == .success { problems.append("an unknown user's change answered \(unknown)") }
                // The old password is still the one.
                let login = try await provider.authenticate(
                    suite.request(fixture.username, ScriptedConversation(.secret(fixture.password))))
                if login.pamResult != .success {
                    problems.append("after the changes that should change nothing, the password answered \(login)")
                }
                return problems + suite.leaks(in: String(reflecting: [preliminary, wrong, unknown]))
            }
        },
    ]

    private func request(_ username: String, _ conversation: any Conversation) -> AuthRequest {
        AuthRequest(username: username, conversation: conversation)
    }

    private func withProvider(_ body: (any AuthProvider) async throws -> [String]) async -> [String] {
        do {
            return try await body(try await makeProvider())
        } catch {
            return ["unexpected error: \(error)"]
        }
    }

    private func expectThrows(_ expected: AuthError, answering answer: ScriptedConversation.Answer) async -> [String] {
        await withProvider { provider in
            do {
                let outcome = try await provider.authenticate(request(fixture.username, ScriptedConversation(answer)))
                return ["expected \(expected) to be thrown, got \(outcome)"]
            } catch let error as AuthError {
                return error == expected ? [] : ["expected \(expected) to be thrown, got \(error)"]
            }
        }
    }

    /// Any fixture password that appears in `text`.
    private func leaks(in text: String) -> [String] {
        [fixture.password, fixture.wrongPassword].filter { text.contains($0) }.map { _ in
            "a password appears in \(text)"
        }
    }
}

/// The answers of a password change, by what each question asks rather than by its place, so that a
/// backend asking with prompts of its own (pam_matrix's "Old password: ", "Verify New Password :") is
/// answered as one asking with ``PasswordPrompt``'s: the current password, the new one, and its
/// repetition, which is cancelled when asked to.
private final class ChangeConversation: Conversation, Sendable {
    private let current: Secret
    private let new: Secret
    private let cancelsAtRetype: Bool
    private let cancelled = Locked(false)

    init(current: String, new: String, cancelsAtRetype: Bool) {
        self.current = Secret(copying: current.utf8)
        self.new = Secret(copying: new.utf8)
        self.cancelsAtRetype = cancelsAtRetype
    }

    /// Whether the change was cancelled where this conversation was to cancel it.
    var cancelledAtRetype: Bool { cancelled.withLock { $0 } }

    /// A password change asks nothing visibly: refused, as a conversation failing (not as the person
    /// cancelling, which the check of a cancelled change would take for its own).
    func ask(_ prompt: String) async throws(AuthError) -> String {
        throw .providerUnavailable(reason: "asked \(prompt)")
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let asked = prompt.lowercased()
        if asked.contains("retype") || asked.contains("verify") || asked.contains("again") {
            if cancelsAtRetype {
                cancelled.withLock { $0 = true }
                throw .cancelled
            }
            return new
        }
        return asked.contains("new") ? new : current
    }

    func show(_ message: String, as kind: MessageKind) async {}
}
