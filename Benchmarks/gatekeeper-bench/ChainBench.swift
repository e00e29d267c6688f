import Authentication
import AuthenticationTesting
import DebugProvider

/// A stack of five `debug` entries (each answering success, `required`) against a stack of one: what
/// each further entry costs a login, best of 5 rounds of 20,000 logins each, interleaved.
enum ChainBench {
    struct Figures {
        var one: Double
        var five: Double
    }

    static func run() async throws -> Figures {
        let one = ProviderChain([.init(.required, DebugAuthProvider(result: .success))])
        let five = ProviderChain((0..<5).map { _ in .init(.required, DebugAuthProvider(result: .success)) })
        let request = AuthRequest(username: "alice", conversation: ScriptedConversation())
        func perLogin(_ chain: ProviderChain, _ count: Int) async throws -> Double {
            let start = clock.now
            for _ in 0..<count {
                guard case .authenticated = try await chain.authenticate(request) else {
                    fatalError("a debug login failed")
                }
            }
            return nanoseconds(start.duration(to: .now)) / Double(count)
        }
        _ = try await perLogin(one, scaled(2_000))
        _ = try await perLogin(five, scaled(2_000))
        var figures = Figures(one: .infinity, five: .infinity)
        for _ in 0..<5 {
            figures.one = min(figures.one, try await perLogin(one, scaled(20_000)))
            figures.five = min(figures.five, try await perLogin(five, scaled(20_000)))
        }
        return figures
    }
}

func chainTable(_ result: Result<ChainBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "stacks: not measured (\(result))\n" }
    return """
        a login through a stack of one debug entry      \(fixed(f.one / 1000, 3)) µs
        the same through five entries                   \(fixed(f.five / 1000, 3)) µs
        ratio five / one                                \(fixed(f.five / f.one))         \(Goals.atMost("stack of five debug entries / one", f.five / f.one, 1.10))

        """
}

func chainJSON(_ result: Result<ChainBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "null" }
    return """
        {"one_us":\(fixed(f.one / 1000, 3)),"five_us":\(fixed(f.five / 1000, 3)),"ratio":\(fixed(f.five / f.one)),"goal_ratio":1.10}
        """
}
