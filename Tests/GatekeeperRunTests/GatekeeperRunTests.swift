import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the built `gatekeeper-run` binary, as a person or a script would.
@Suite(.timeLimit(.minutes(1)))
struct GatekeeperRunTests {
    @Test func theDemoAccountRunsTheCommandAndKeepsItsStatus() throws {
        let result = try run(
            gatekeeperRun,
            mock + [
                "--user", "alice", "--password-stdin", "--delay", "0", "--", "sh", "-c",
                "echo \"$GATEKEEPER_USER/$GATEKEEPER_PROVIDER\"; exit 3",
            ],
            input: "wonderland\n"
        )
        #expect(result.status == 3)
        #expect(result.stdout == "alice/mock\n")
    }

    @Test func theDefaultDelayIsOneRoundTrip() throws {
        let result = try run(
            gatekeeperRun, mock + ["--user", "bob", "--password-stdin", "--", "true"], input: "builder\n")
        #expect(result.status == 0)
    }

    @Test func aWrongPasswordDoesNotRunTheCommand() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("gatekeeper-run-\(UUID())")
        let result = try run(
            gatekeeperRun, mock + ["--user", "alice", "--password-stdin", "--delay", "0", "--", "touch", marker.path],
            input: "not-wonderland\n"
        )
        #expect(result.status == 77)
        #expect(result.stderr.contains("The user name or password is incorrect."))
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(!result.stderr.contains("not-wonderland"))
    }

    /// An endless first line (`/dev/zero`) is refused as too long once past the limit, not read forever.
    @Test(.timeLimit(.minutes(1))) func anEndlessPasswordLineIsRefused() throws {
        let result = try run(
            gatekeeperRun, mock + ["--user", "alice", "--password-stdin", "--delay", "0", "--", "true"],
            inputFile: "/dev/zero")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("longer than 4096 bytes"), "\(result.stderr)")
    }

    @Test func anEmptyUserNameCancels() throws {
        let result = try run(
            gatekeeperRun, mock + ["--user", "", "--password-stdin", "--", "echo", "ran"], input: "wonderland\n")
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
    }

    struct Outcome: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let options: [String]
        let password: String
        let status: Int32
    }

    static let outcomes = [
        Outcome(
            testDescription: "colon in the user name", options: ["--user", "a:b"], password: "wonderland\n", status: 65),
        Outcome(testDescription: "empty password", options: ["--user", "alice"], password: "\n", status: 65),
        Outcome(testDescription: "no input at all", options: ["--user", "alice"], password: "", status: 65),
        Outcome(
            testDescription: "5000-byte password",
            options: ["--user", "alice"],
            password: String(repeating: "x", count: 5000) + "\n",
            status: 65
        ),
        Outcome(testDescription: "not activated", options: ["--user", "carol"], password: "carol-2026\n", status: 77),
        Outcome(testDescription: "locked", options: ["--user", "dave"], password: "dave-2026\n", status: 77),
        Outcome(
            testDescription: "not in the group",
            options: ["--user", "bob", "--group", "admin"],
            password: "builder\n",
            status: 77
        ),
        Outcome(
            testDescription: "in the group",
            options: ["--user", "alice", "--group", "admin"],
            password: "wonderland\n",
            status: 0
        ),
    ]

    @Test(arguments: outcomes)
    func mapsEveryOutcomeToItsStatus(_ outcome: Outcome) throws {
        let result = try run(
            gatekeeperRun, mock + outcome.options + ["--password-stdin", "--delay", "0", "--", "true"],
            input: outcome.password)
        #expect(result.status == outcome.status, "\(result.stderr)")
        let password = outcome.password.trimmingCharacters(in: .newlines)
        if !password.isEmpty {
            #expect(!result.stderr.contains(password))
        }
    }

    @Test(arguments: [
        [String](),
        ["--bogus", "--", "true"],
        ["--user"],
        ["--provider", "nope", "--", "true"],
        ["--delay", "soon", "--", "true"],
        ["--delay", "-1", "--", "true"],
        ["--provider", "mock", "--provider", "mock", "--", "true"],
    ])
    func refusesBadCommandLines(_ arguments: [String]) throws {
        let result = try run(gatekeeperRun, mock + arguments, input: "")
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("gatekeeper-run: "))
    }

    @Test func helpListsProvidersAndStatuses() throws {
        let result = try run(gatekeeperRun, mock + ["--help"], input: "")
        #expect(result.status == 0)
        #expect(result.stdout.contains("--delay DURATION"))
        #expect(result.stdout.contains("130 login cancelled"))
    }

    @Test func reportsAMissingCommand() throws {
        let result = try run(
            gatekeeperRun,
            mock + ["--user", "alice", "--password-stdin", "--delay", "0", "--", "/nonexistent/command"],
            input: "wonderland\n"
        )
        #expect(result.status == 127)
    }

    /// Without a terminal, prompts are answered line by line from standard input, with retries.
    @Test func promptsCanBeScripted() throws {
        let result = try run(
            gatekeeperRun, mock + ["--delay", "0", "--", "echo", "ran"], input: "alice\nwrong\nalice\nwonderland\n")
        #expect(result.status == 0)
        #expect(result.stdout == "ran\n")
        #expect(result.stderr.contains("Username: \nPassword: \nThe user name or password is incorrect.\n"))
        #expect(!result.stderr.contains("wonderland"))
    }

    @Test func endOfInputAtAPromptCancels() throws {
        let result = try run(gatekeeperRun, mock + ["--delay", "0", "--", "echo", "ran"], input: "alice\n")
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
    }

    /// Ctrl-C while the provider works (a one-hour delay here) cancels the login instead of waiting.
    @Test(.timeLimit(.minutes(1)))
    func anInterruptDuringTheDelayCancels() throws {
        let process = try Spawned(gatekeeperRun, mock + ["--delay", "3600", "--", "echo", "ran"])
        process.write("alice\n")
        try process.waitForStderr(containing: "Password: ")
        process.write("wonderland\n")
        // Once the password is read, the login is in the provider's hour-long delay: interrupt then.
        #expect(eventually { process.unreadInput == 0 })
        process.interrupt()
        let result = process.finish()
        #expect(result.status == 130)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("The login was cancelled."))
    }
}

let gatekeeperRun = builtExecutable("gatekeeper-run")

/// The demo backend, which gatekeeper-run never picks by itself.
let mock = ["--provider", "mock"]
