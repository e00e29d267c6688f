import Authentication
import ProviderPlugins
import Testing
import ToolSupport

/// The one parser of the three tools.
struct CommandLineSyntaxTests {
    let passwd = CommandLineSyntax(flags: ["--create", "-h"], valueOptions: ["groups", "name"])
    let run = CommandLineSyntax(flags: ["--password-stdin"], valueOptions: ["user"], commandFollows: true)

    @Test func readsFlagsValuesInBothSpellingsAndPositionals() throws {
        let parsed = try passwd.parse(["add", "--groups", "a,b", "FILE", "--name=Bob Builder", "-", "--create"])
        #expect(parsed.positionals == ["add", "FILE", "-"])
        #expect(parsed.values == ["groups": "a,b", "name": "Bob Builder"])
        #expect(parsed.has("--create") && !parsed.has("-h"))
        // An empty value and a value that looks like an option are values.
        #expect(try passwd.parse(["--groups=", "--name", "--create"]).values == ["groups": "", "name": "--create"])
    }

    @Test func theCommandAndWhatFollowsItAreLeftAlone() throws {
        let parsed = try run.parse(["--user", "alice", "sh", "-c", "echo --user"])
        #expect(parsed.trailing == ["sh", "-c", "echo --user"])
        #expect(try run.parse(["--password-stdin", "--", "--weird-command"]).trailing == ["--weird-command"])
    }

    @Test(arguments: [
        (["--bogus"], "Unknown option --bogus."),
        (["-x"], "Unknown option -x."),
        (["--groups"], "--groups needs a value."),
        (["--name", "a", "--name=b"], "--name is given twice."),
        (["-create"], "Unknown option -create."),
    ])
    func refusesWhatItDoesNotKnow(_ arguments: [String], _ message: String) {
        #expect {
            try passwd.parse(arguments)
        } throws: { error in
            "\(error)" == message && error is UsageError
        }
    }

    @Test func usageErrorsHaveCodes() {
        #expect(throws: UsageError(.unknownOption, "")) { try passwd.parse(["--bogus"]) }
        #expect(throws: UsageError(.missingValue, "")) { try passwd.parse(["--name"]) }
        #expect(throws: UsageError(.repeatedOption, "")) { try passwd.parse(["--name=a", "--name=b"]) }
    }
}

/// One mapping from what went wrong to an exit status.
struct ExitStatusTests {
    @Test func mapsEveryLoginErrorIncludingCodesAddedLater() {
        #expect(ExitStatus(dismissal: .cancelled) == .cancelled)
        #expect(ExitStatus(dismissal: .invalidUsername(.colon)) == .invalidInput)
        #expect(ExitStatus(dismissal: .missingPassword) == .invalidInput)
        #expect(ExitStatus(dismissal: .providerUnavailable(reason: "down")) == .unavailable)
        // A device sign-in code not approved in time: try again (75), not "unavailable" (69).
        #expect(ExitStatus(dismissal: .credentialsExpired).code == 75)
        for refused in [
            AuthError.invalidCredentials, .accountExpired, .refusedByPolicy, .tooManyAttempts(retryAfter: nil),
        ] {
            #expect(ExitStatus(dismissal: refused) == .denied)
        }
        #expect(
            ExitStatus(configuration: ConfigurationError.unusable(provider: "file", reason: "x"))
                == .unavailable)
        #expect(ExitStatus(configuration: UsageError("x")) == .usage)
    }
}
