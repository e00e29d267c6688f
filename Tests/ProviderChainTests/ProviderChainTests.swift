import Authentication
import AuthenticationTesting
import DebugProvider
import Foundation
import GatekeeperHost
import MockProvider
import ProviderPlugins
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(3)))
struct ProviderChainTests {
    private func chain(_ stack: [(ChainControl, PAMResult)]) -> ProviderChain {
        ProviderChain(stack.map { ProviderChain.Entry($0.0, DebugAuthProvider(result: $0.1)) })
    }

    private func result(_ stack: [(ChainControl, PAMResult)]) async throws -> PAMResult {
        try await chain(stack).authenticate(AuthRequest(username: "alice", conversation: ScriptedConversation()))
            .pamResult
    }

    /// Every keyword against every result, alone and before a success.
    @Test(arguments: [ChainControl.required, .requisite, .sufficient, .optional])
    func everyKeywordAgainstEveryResult(_ control: ChainControl) async throws {
        for answer in PAMResult.allCases {
            let alone = try await result([(control, answer)])
            let before = try await result([(control, answer), (.required, .success)])
            let expectedAlone: PAMResult
            let expectedBefore: PAMResult
            switch (control.keyword, answer) {
            case (_, .incomplete):
                // The module waits for the application: the stack ends at once with its code.
                expectedAlone = .incomplete
                expectedBefore = .incomplete
            case (_, .success), (_, .newAuthenticationTokenRequired):
                expectedAlone = answer
                expectedBefore = answer
            case ("required", .ignore), ("requisite", .ignore), ("sufficient", _), ("optional", _):
                // Ignored: alone nothing counted (fails); before a success, the success decides.
                expectedAlone = .permissionDenied
                expectedBefore = .success
            default:
                // A failure is reported, whatever follows.
                expectedAlone = answer
                expectedBefore = answer
            }
            #expect(alone == expectedAlone, "\(control) \(answer.rawValue) alone")
            #expect(before == expectedBefore, "\(control) \(answer.rawValue) before required success")
        }
    }

    @Test func theFirstFailureIsReportedAndDoneEndsOnlyWhenNothingFailed() async throws {
        #expect(
            try await result([(.required, .authenticationError), (.required, .maximumTries)]) == .authenticationError)
        #expect(try await result([(.required, .authenticationError), (.sufficient, .success)]) == .authenticationError)
        #expect(try await result([(.sufficient, .success), (.required, .authenticationError)]) == .success)
        #expect(try await result([(.requisite, .userUnknown), (.required, .success)]) == .userUnknown)
        // reset forgets a failure; a jump skips entries.
        let resetOnFailure = ChainControl(actions: [.authenticationError: .reset], default: .ok)
        #expect(
            try await result([
                (.required, .authenticationError), (resetOnFailure, .authenticationError), (.required, .success),
            ]) == .success)
        let skipOne = ChainControl(actions: [.success: .jump(1)], default: .bad)
        #expect(
            try await result([(skipOne, .success), (.required, .authenticationError), (.required, .success)])
                == .success)
    }

    /// Cancellation stops the chain at once: no later entry asks anything, and the login is cancelled.
    /// The backends of a stack are its leaves, nested stacks' included, in order — two of one kind being two
    /// (what gatekeeperd's account phase asks, each once).
    @Test func theBackendsAreTheLeaves() {
        let inner = ProviderChain(
            name: "inner",
            [
                .init(.required, StubAuthProvider(name: "two") { _ in .notMine }),
                .init(.required, StubAuthProvider(name: "one") { _ in .notMine }),
            ])
        let outer = ProviderChain(
            name: "outer", [.init(.required, StubAuthProvider(name: "one") { _ in .notMine }), .init(.required, inner)])
        #expect(outer.backends.map(\.name) == ["one", "two", "one"])
    }

    @Test func cancellationStopsTheWholeChain() async throws {
        let asked = Counter()
        let stack = ProviderChain([
            .init(.optional, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .seconds(3600))),
            .init(.required, AskingProvider(asked: asked)),
        ])
        let conversation = ScriptedConversation(.secret("wonderland"), .secret("again"))
        let login = Task { try await stack.authenticate(AuthRequest(username: "alice", conversation: conversation)) }
        #expect(await eventually { conversation.questionCount == 1 })
        login.cancel()
        await #expect(throws: AuthError.cancelled) { try await login.value }
        #expect(asked.count == 0)
    }

    /// The password is asked once per login, whatever the stack: a later entry asking the same hidden
    /// question gets the same answer (as PAM modules share PAM_AUTHTOK).
    @Test func theSameQuestionIsAskedOncePerLogin() async throws {
        let stack = ProviderChain([
            .init(.optional, MockAuthProvider(users: [], delay: .zero)),
            .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)),
        ])
        let conversation = ScriptedConversation(.secret("builder"))
        guard
            case .authenticated = try await stack.authenticate(
                AuthRequest(username: "bob", conversation: conversation))
        else {
            Issue.record("bob was not admitted")
            return
        }
        #expect(conversation.questionCount == 1)
    }

    /// A chain is a provider: the conformance suite passes on one (users in the mock, behind a provider
    /// that knows nobody, in a login as in a password change).
    @Test(arguments: ProviderConformance.checks)
    func aChainConforms(_ check: ProviderConformance.Check) async {
        let suite = ProviderConformance(fixture: .init(username: "bob", password: "builder")) {
            ProviderChain([
                .init(
                    ChainControl(actions: [.success: .done, .userUnknown: .ignore, .authinfoUnavailable: .ignore]),
                    DebugAuthProvider(
                        result: .userUnknown, preliminaryChangeResult: .userUnknown, changeResult: .userUnknown)),
                .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .milliseconds(20))),
            ])
        }
        #expect(await suite.run(check) == [])
    }

    /// The trace says which entry answered what, and the result; the identity is the deciding entry's.
    @Test func theTraceAndTheIdentityComeFromTheEntryThatDecided() async throws {
        let stack = ProviderChain([
            .init(.sufficient, DebugAuthProvider(result: .userUnknown)),
            .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)),
        ])
        let answer = try await stack.authenticateWithTrace(
            AuthRequest(username: "bob", conversation: ScriptedConversation(.secret("builder"))))
        let identity = try expectAuthenticated(answer.outcome, "expected bob, got \(answer.outcome)")
        #expect(identity.provider == "mock")
        #expect(
            answer.trace?.description
                == "1. sufficient debug: user_unknown -> ignore\n2. required mock: success -> ok\nidentity: 2:mock\nresult: success"
        )
    }

    /// The audit sink gets each login's trace, and no secret in it.
    @Test func theAuditGetsTheTrace() async throws {
        let audit = RecordingAuditSink()
        let stack = ProviderChain([
            .init(.sufficient, DebugAuthProvider(result: .userUnknown)),
            .init(.required, MockAuthProvider(users: MockAuthProvider.demoUsers, delay: .zero)),
        ])
        let gatekeeper = Gatekeeper(provider: stack, configuration: .init(failDelay: .zero), audit: audit)
        _ = try await gatekeeper.signIn(try credentials("bob", "builder"))
        let decision = try #require(audit.events.first { $0.kind == .stackDecision })
        #expect(decision.username == "bob")
        #expect(
            decision.detail
                == "1. sufficient debug: user_unknown -> ignore\n2. required mock: success -> ok\nidentity: 2:mock\nresult: success"
        )
        #expect(!audit.events.map(\.description).joined().contains("builder"))
    }

    /// The differential oracle: random stacks of random controls (keywords, and brackets with every
    /// action and jumps) and random results agree with libpam, run on the same stack of pam_debug.so.
    @Test func randomStacksAgreeWithLibpam() async throws {
        let oracle = try LibpamOracle()
        defer { oracle.remove() }
        // A fixed seed in `make test`, so every run checks the same 10,000 stacks; `make fuzz-stacks` draws one.
        var generator = SeededGenerator(for: "randomStacksAgreeWithLibpam", fixedSeed: 20_261_130)
        let count = Int(getenv("GATEKEEPER_STACKS").flatMap { Int(String(cString: $0)) } ?? 10_000)
        var disagreements: [String] = []
        for round in 0..<count {
            let length = Int.random(in: 1...5, using: &generator)
            var stack: [(ChainControl, PAMResult)] = []
            var written: [(control: String, result: PAMResult)] = []
            for position in 0..<length {
                let control = Self.randomControl(remaining: length - position - 1, using: &generator)
                let answer = PAMResult.allCases.randomElement(using: &generator)!
                stack.append((control, answer))
                written.append((control.description, answer))
            }
            let expected = try oracle.result(of: written, service: "stack")
            let got = try await result(stack)
            if got != expected {
                let lines = written.map { "\($0.control) \($0.result.rawValue)" }.joined(separator: " | ")
                disagreements.append("round \(round): libpam \(expected.rawValue), chain \(got.rawValue): \(lines)")
                if disagreements.count >= 5 { break }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }

    /// A password change is dispatched as `pam_chauthtok` dispatches it: the preliminary pass over the
    /// whole stack, and the update pass only when that succeeded, each with the stack's controls. Random
    /// stacks (every control keyword, brackets, jumps) of entries answering random codes in each pass
    /// agree with libpam on the same stack of pam_debug.so (`prechauthtok=`, `chauthtok=`).
    @Test func randomPasswordChangesAgreeWithLibpam() async throws {
        let oracle = try LibpamOracle()
        defer { oracle.remove() }
        var generator = SeededGenerator(for: "randomPasswordChangesAgreeWithLibpam", fixedSeed: 20_261_202)
        let count = Int(getenv("GATEKEEPER_STACKS").flatMap { Int(String(cString: $0)) } ?? 10_000) / 2
        var disagreements: [String] = []
        var updates = 0
        for round in 0..<count {
            let length = Int.random(in: 1...5, using: &generator)
            var entries: [ProviderChain.Entry] = []
            var written: [(control: String, preliminary: PAMResult, update: PAMResult)] = []
            for position in 0..<length {
                let control = Self.randomControl(remaining: length - position - 1, using: &generator)
                // Success often enough that the update pass is reached in many rounds.
                let pool = PAMResult.allCases + Array(repeating: .success, count: 24)
                let preliminary = pool.randomElement(using: &generator)!
                let update = pool.randomElement(using: &generator)!
                entries.append(
                    .init(control, DebugAuthProvider(preliminaryChangeResult: preliminary, changeResult: update)))
                written.append((control.description, preliminary, update))
            }
            let expected = try oracle.changeResult(of: written, service: "change")
            let chain = ProviderChain(entries)
            let preliminary = try await chain.changePassword(
                PasswordChangeRequest(username: "alice", conversation: ScriptedConversation(), pass: .preliminaryCheck))
            if preliminary.pamResult == .success { updates += 1 }
            let got = try await chain.changePassword(of: "alice", conversation: ScriptedConversation()).pamResult
            if got != expected {
                let lines = written.map { "\($0.control) \($0.preliminary.rawValue)/\($0.update.rawValue)" }
                disagreements.append(
                    "round \(round): libpam \(expected.rawValue), chain \(got.rawValue): \(lines.joined(separator: " | "))"
                )
                if disagreements.count >= 5 { break }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // The update pass was reached in a good share of the rounds.
        #expect(updates > count / 5, "\(updates) of \(count) rounds reached the update pass")
    }

    /// A refusal in the preliminary pass by an entry the stack requires changes nothing: no entry is
    /// asked to update, the earlier ones included.
    @Test func aRefusalInThePreliminaryPassUpdatesNoEntry() async throws {
        let first = RecordingChanger(preliminary: .changed)
        let second = RecordingChanger(preliminary: .rejected(.unacceptable("it is too short")))
        let chain = ProviderChain([.init(.required, first), .init(.required, second)])
        let outcome = try await chain.changePassword(of: "alice", conversation: ScriptedConversation())
        #expect(outcome == .rejected(.unacceptable("it is too short")))
        #expect(outcome.error?.code == .passwordNotChanged && outcome.error?.reason == "it is too short")
        #expect(first.passes == [.preliminaryCheck] && second.passes == [.preliminaryCheck])
        // With both ready, both update, in order.
        let ready = RecordingChanger(preliminary: .changed)
        let again = ProviderChain([.init(.required, first), .init(.required, ready)])
        #expect(try await again.changePassword(of: "alice", conversation: ScriptedConversation()) == .changed)
        #expect(
            first.passes == [.preliminaryCheck, .preliminaryCheck, .update]
                && ready.passes == [.preliminaryCheck, .update])
    }

    /// An entry that keeps no password (a one-time code) does not stand in the way of a change, and a
    /// stack of none refuses it.
    @Test func anEntryWithoutPasswordsIsIgnoredByAChange() async throws {
        let changer = RecordingChanger(preliminary: .changed)
        let chain = ProviderChain([.init(.required, changer), .init(.required, CodeOnly())])
        #expect(chain.changesPasswords)
        #expect(try await chain.changePassword(of: "alice", conversation: ScriptedConversation()) == .changed)
        let none = ProviderChain([.init(.required, CodeOnly())])
        #expect(!none.changesPasswords)
        let outcome = try await none.changePassword(of: "alice", conversation: ScriptedConversation())
        #expect(outcome.pamResult == .permissionDenied && outcome.error?.code == .passwordNotChanged)
    }

    /// Every one of PAM's 32 codes has libpam's number, and a provider answering it is that code to a stack.
    @Test func everyReturnCodeHasLibpamsNumber() async throws {
        #expect(PAMResult.allCases.count == 32)
        for result in PAMResult.allCases {
            #expect(LibpamOracle.headerCodes[result] == result.code, "\(result.rawValue)")
            #expect(PAMResult(code: result.code) == result)
            #expect(DebugAuthProvider(result: result).authenticateQuietly().pamResult == result, "\(result.rawValue)")
        }
        #expect(PAMResult(code: 32) == nil && PAMResult(code: -1) == nil)
    }

    /// No backend can make a wrong password the lockout does not count: a `failed` answer naming a code
    /// that has an answer of its own is that answer.
    @Test func aFailureNamingACodeWithItsOwnAnswerIsThatAnswer() {
        #expect(AuthOutcome.failed(.authenticationError, reason: "x").normalized == .rejected(.wrongCredentials))
        #expect(AuthOutcome.failed(.userUnknown, reason: "x").normalized == .notMine)
        #expect(AuthOutcome.failed(.success, reason: "x").normalized == .rejected(.refusedByPolicy))
        #expect(AuthOutcome.failed(.success, reason: "x").pamResult == .permissionDenied)
        #expect(
            AuthOutcome.failed(.credentialsError, reason: "x").normalized == .failed(.credentialsError, reason: "x"))
    }

    /// The differential oracle over the whole language: random files of pam.d lines that include each
    /// other and name each other as substacks, with brackets in any order (spaces around `=`, `default`
    /// first or last), jumps that cross include and substack boundaries or go past the end, and answers
    /// among all 32 codes, read by libpam and — the same text with `pam_debug.so auth=` written
    /// `debug result=` — by the configuration parser; the PAM return codes must be equal.
    @Test func randomFilesWithIncludesAndSubstacksAgreeWithLibpam() async throws {
        let oracle = try LibpamOracle()
        defer { oracle.remove() }
        var generator = SeededGenerator(
            for: "randomFilesWithIncludesAndSubstacksAgreeWithLibpam", fixedSeed: 20_261_201)
        let count = Int(getenv("GATEKEEPER_STACKS").flatMap { Int(String(cString: $0)) } ?? 10_000) / 2
        let registry = ProviderRegistry([DebugProviderPlugin.self])
        var disagreements: [String] = []
        var substacks = 0
        var pastTheEnd = 0
        for round in 0..<count {
            var files = RandomFiles(module: oracle.module, directory: oracle.directory)
            // A few codes per round, so that brackets name the codes the entries answer.
            let pool = (0..<4).map { _ in PAMResult.allCases.randomElement(using: &generator)! } + [.success, .ignore]
            files.write(name: "stack", depth: 0, pool: pool, using: &generator)
            substacks += files.substacks
            let expected = try oracle.result(files: files.pam, service: "stack")
            let got: PAMResult
            do {
                let configuration = try StackConfiguration.parse(
                    Array(files.ours["stack"]!.utf8), file: "stack", registry: registry
                ) { path throws(ConfigurationError) in
                    let name = String(path.dropFirst(oracle.directory.count + 1))
                    guard path.hasPrefix(oracle.directory + "/"), let text = files.ours[name] else {
                        throw ConfigurationError(
                            .file, at: .init(file: path, line: 0, column: 0), word: path, "missing")
                    }
                    return Array(text.utf8)
                }
                if !ProviderChain.jumpsPastTheEnd(configuration.layout).isEmpty { pastTheEnd += 1 }
                got = try await configuration.makeChain(registry: registry).authenticate(
                    AuthRequest(username: "alice", conversation: ScriptedConversation())
                ).pamResult
            } catch {
                disagreements.append("round \(round): refused: \(error)\n\(files.listing)")
                break
            }
            if got != expected {
                disagreements.append(
                    "round \(round): libpam \(expected.rawValue), chain \(got.rawValue):\n\(files.listing)")
                if disagreements.count >= 3 { break }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // The rounds did reach what they are for.
        #expect(substacks > count / 4 && pastTheEnd > count / 20, "\(substacks) substacks, \(pastTheEnd) bad jumps")
    }

    /// The walk over distinct states (`explore`, what --check-config uses past six entries) finds exactly
    /// the ends that trying every combination of answers finds: the same set of (result, entries that
    /// ran), on random stacks of up to five entries with brackets, jumps, resets and substacks.
    @Test func exploringStatesFindsWhatEveryCombinationFinds() {
        var generator = SeededGenerator(for: "exploringStatesFindsWhatEveryCombinationFinds", fixedSeed: 20_261_204)
        let values: [PAMResult] = [
            .success, .ignore, .authenticationError, .userUnknown, .newAuthenticationTokenRequired,
        ]
        func layout(_ count: Int, depth: Int) -> [ProviderChain.Layout] {
            (0..<count).map { position in
                if depth < 2, Int.random(in: 0..<5, using: &generator) == 0 {
                    return .substack(layout(Int.random(in: 1...2, using: &generator), depth: depth + 1))
                }
                return .entry(Self.randomControl(remaining: count - position - 1, using: &generator))
            }
        }
        func entries(_ layout: [ProviderChain.Layout]) -> Int {
            layout.reduce(0) { count, element in
                if case .substack(let inner) = element { count + entries(inner) } else { count + 1 }
            }
        }
        struct End: Hashable {
            var result: PAMResult
            var ran: [Int]
        }
        var disagreements: [String] = []
        for round in 0..<400 {
            let stack = layout(Int.random(in: 1...4, using: &generator), depth: 0)
            let count = entries(stack)
            guard count <= 5 else { continue }
            var tried: Set<End> = []
            var answers = [PAMResult](repeating: .success, count: count)
            func enumerate(_ position: Int) {
                guard position < count else {
                    let (result, ran) = ProviderChain.dispatch(stack, answers: answers)
                    tried.insert(End(result: result, ran: ran))
                    return
                }
                for value in values {
                    answers[position] = value
                    enumerate(position + 1)
                }
            }
            enumerate(0)
            var explored: Set<End> = []
            let complete = ProviderChain.explore(
                stack, values: values, start: [Int](), step: { ran, entry, _ in ran + [entry] },
                ended: { result, ran, path in
                    explored.insert(End(result: result, ran: ran))
                    // The answers given lead to that end.
                    var replay = [PAMResult](repeating: .success, count: count)
                    for (entry, answer) in path() { replay[entry] = answer }
                    if ProviderChain.dispatch(stack, answers: replay) != (result, ran) {
                        disagreements.append("round \(round): the answers given do not lead to \(result)")
                    }
                    return true
                })
            if !complete || tried != explored {
                disagreements.append("round \(round): \(stack)\ntried \(tried)\nexplored \(explored)")
                if disagreements.count >= 3 { break }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }

    static func randomControl(remaining: Int, using generator: inout SeededGenerator) -> ChainControl {
        let keywords: [ChainControl] = [.required, .requisite, .sufficient, .optional]
        if Bool.random(using: &generator) { return keywords.randomElement(using: &generator)! }
        var actions: [ChainControl.Action] = [.ignore, .bad, .die, .ok, .done, .reset]
        // Jumps up to two past the end: libpam fails the stack when one is taken.
        actions += (1...remaining + 2).map { .jump($0) }
        var chosen: [PAMResult: ChainControl.Action] = [:]
        for value in PAMResult.allCases where Int.random(in: 0..<3, using: &generator) == 0 {
            chosen[value] = actions.randomElement(using: &generator)!
        }
        let defaultAction = actions.randomElement(using: &generator)!
        return ChainControl(actions: chosen, default: defaultAction)
    }
}

/// Counts how often it was asked; answers by asking for a password.
private struct AskingProvider: AuthProvider {
    let name = "asking"
    let asked: Counter

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome {
        asked.increment()
        _ = try await request.conversation.askSecret("Code: ")
        return .ignored
    }
}

/// Random service files for the oracle and the same files in the configuration's grammar.
private struct RandomFiles {
    let module: String
    var pam: [String: String] = [:]
    var ours: [String: String] = [:]
    var listing = ""
    var substacks = 0
    private var files = 0

    /// Where the files are: named by absolute path, as Debian's libpam looks a relative include up in
    /// /etc/pam.d even with `pam_start_confdir`.
    let directory: String

    init(module: String, directory: String) {
        self.module = module
        self.directory = directory
    }

    mutating func write(name: String, depth: Int, pool: [PAMResult], using generator: inout SeededGenerator) {
        let length = Int.random(in: 1...4, using: &generator)
        var pamLines: [String] = []
        var ourLines: [String] = []
        for position in 0..<length {
            let roll = Int.random(in: 0..<10, using: &generator)
            if depth < 2 && roll < 3 {
                files += 1
                let inner = "f\(files)"
                let kind = roll == 0 ? "include" : "substack"
                if kind == "substack" { substacks += 1 }
                write(name: inner, depth: depth + 1, pool: pool, using: &generator)
                pamLines.append("auth \(kind) \(directory)/\(inner)")
                ourLines.append("\(kind) \(directory)/\(inner)")
                continue
            }
            let control = Self.control(remaining: length - position - 1, pool: pool, using: &generator)
            let answer = pool.randomElement(using: &generator)!.rawValue
            pamLines.append("auth \(control) \(module) auth=\(answer)")
            ourLines.append("\(control) debug result=\(answer)")
        }
        pam[name] = pamLines.map { $0 + "\n" }.joined()
        ours[name] = ourLines.map { $0 + "\n" }.joined()
        listing += "[\(name)]\n" + ours[name]!
    }

    /// A keyword, or a bracket whose pairs come in random order, `default` anywhere (or not at all), and
    /// now and then spaces around `=`.
    static func control(remaining: Int, pool: [PAMResult], using generator: inout SeededGenerator) -> String {
        let keywords = ["required", "requisite", "sufficient", "optional"]
        if Int.random(in: 0..<3, using: &generator) == 0 { return keywords.randomElement(using: &generator)! }
        let actions = ["ignore", "bad", "die", "ok", "done", "reset"] + (1...remaining + 2).map(String.init)
        let candidates = Set((pool + [PAMResult.allCases.randomElement(using: &generator)!]).map(\.rawValue)).sorted()
        var keys = candidates.filter { _ in Bool.random(using: &generator) }
        if Bool.random(using: &generator) { keys.append("default") }
        let pairs = keys.map { key in
            let equals = Int.random(in: 0..<8, using: &generator) == 0 ? " = " : "="
            return key + equals + actions.randomElement(using: &generator)!
        }.shuffled(using: &generator)
        return "[" + pairs.joined(separator: " ") + "]"
    }
}

extension DebugAuthProvider {
    fileprivate func authenticateQuietly() -> AuthOutcome {
        guard result != .success else { return .authenticated(Identity(username: "alice", provider: name)) }
        return AuthOutcome(pamResult: result, reason: "")
    }
}

/// A second factor: it keeps no password.
private struct CodeOnly: AuthProvider {
    let name = "code"
    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome { .ignored }
}

/// A provider that records the passes of a password change it is asked, and answers the preliminary
/// pass as told and the update with `changed`.
private final class RecordingChanger: AuthProvider, @unchecked Sendable {
    let name = "recording"
    private let preliminary: PasswordChangeOutcome
    private let lock = NSLock()
    private var recorded: [PasswordChangeRequest.Pass] = []

    init(preliminary: PasswordChangeOutcome) { self.preliminary = preliminary }

    var passes: [PasswordChangeRequest.Pass] { lock.withLock { recorded } }

    func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome { .notMine }

    var changesPasswords: Bool { true }

    func changePassword(_ request: PasswordChangeRequest) async throws(AuthError) -> PasswordChangeOutcome {
        lock.withLock { recorded.append(request.pass) }
        return request.pass == .preliminaryCheck ? preliminary : .changed
    }
}
