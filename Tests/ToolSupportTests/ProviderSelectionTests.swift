import Authentication
import ProviderPlugins
import Testing
import ToolSupport

struct ProviderSelectionTests {
    enum Fake: AuthProviderPlugin {
        static let name = "fake"
        static let summary = "a fake backend"
        static let options = [ProviderOption("delay", valueName: "SECONDS", help: "wait")]

        static func makeProvider(_ options: ProviderOptions) throws(ConfigurationError) -> any AuthProvider {
            _ = try options.duration("delay")
            return Stub()
        }

        struct Stub: AuthProvider {
            let name = "fake"
            func authenticate(_ request: AuthRequest) async throws(AuthError) -> AuthOutcome { .notMine }
        }
    }

    let registry = ProviderRegistry([Fake.self])

    /// Parses as gatekeeper-run does: its own `--user`, the providers' options, then a command.
    private func parse(_ arguments: [String]) throws -> (ProviderSelection, [String]) {
        var selection = ProviderSelection(registry: registry)
        let parsed = try CommandLineSyntax(valueOptions: ["user"], commandFollows: true)
            .selectingProviders(from: selection).parse(arguments)
        selection.take(from: parsed)
        return (selection, parsed.values["user"].map { ["--user", $0] } ?? [])
    }

    @Test func takesTheProviderAndItsOptionsInBothSpellings() throws {
        let (selection, others) = try parse(["--provider", "fake", "--user", "bob", "--delay=0.5"])
        #expect(selection.name == "fake")
        #expect(selection.options == ["delay": "0.5"])
        #expect(others == ["--user", "bob"])
        #expect(try selection.makeProvider().name == "fake")
    }

    @Test func defaultsToTheFirstProviderOnlyWhenAsked() throws {
        #expect(try parse([]).0.makeProvider(defaultsToFirst: true).name == "fake")
        #expect(throws: UsageError.self) { try parse([]).0.makeProvider() }
        #expect(ProviderSelection(registry: registry).help().contains("required"))
    }

    @Test(arguments: [
        ["--provider"], ["--delay"], ["--delay", "1", "--delay", "2"], ["--provider", "a", "--provider=b"],
    ])
    func refusesMissingAndRepeatedValues(_ arguments: [String]) {
        #expect(throws: UsageError.self) { try parse(arguments) }
    }

    @Test func refusesUnknownProvidersAndBadValues() throws {
        #expect(throws: ConfigurationError.unknownProvider("pam", available: ["fake"])) {
            try parse(["--provider", "pam"]).0.makeProvider()
        }
        #expect(
            throws: ConfigurationError.invalidValue(
                option: "delay", value: "nan", expected: "a number of seconds from 0 to 3600"
            )
        ) {
            try parse(["--delay", "nan"]).0.makeProvider(defaultsToFirst: true)
        }
    }

    @Test func optionsOfAnotherProviderAreRefused() {
        #expect(throws: ConfigurationError.unknownOption("users", provider: "fake")) {
            try registry.makeProvider(named: "fake", options: ["users": "/etc/x"])
        }
    }

    @Test func helpListsEveryOption() {
        let help = ProviderSelection(registry: registry).help()
        #expect(help.contains("fake"))
        #expect(help.contains("--delay SECONDS"))
    }
}
