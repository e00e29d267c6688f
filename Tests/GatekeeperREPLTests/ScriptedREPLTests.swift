import Foundation
import TestSupport
import Testing

let gatekeeperREPL = builtExecutable("gatekeeper-repl")

extension TerminalSession {
    /// Types `command`, then `user` and `password` at the login's two prompts, and waits until the
    /// provider is checking (the spinner).
    func logIn(_ command: String, _ user: String, _ password: String) throws {
        type(command + "\r")
        try waitFor("Username: ")
        type(user + "\r")
        try waitFor("Password: ")
        type(password + "\r")
        try waitFor("Checking")
    }
}

/// Runs the REPL with the given standard input and returns its transcript.
func session(_ input: String, _ arguments: [String] = ["--delay", "0"]) throws -> RunResult {
    try run(gatekeeperREPL, arguments, input: input)
}

/// The REPL driven by a script: standard input is not a terminal, so commands and answers are read line
/// by line, with no echo games, no spinner and no colour.
@Suite(.timeLimit(.minutes(1)))
struct ScriptedREPLTests {
    @Test func theBannerAndHelpTellEverythingNeeded() throws {
        let result = try session("help\ntabs\n")
        #expect(result.status == 0)
        #expect(result.stdout.contains("alice / wonderland (admin), bob / builder"))
        #expect(result.stdout.contains("login      sign in"))
        #expect(result.stdout.contains("* home     public\n  contact  public\n  courses  sign in"))
        #expect(!result.stdout.contains("\u{1B}["))
    }

    /// erin's password has expired: opening a protected tab, she is told so, gives the current password
    /// and the new one twice, and the tab opens; `passwd` then changes it again, asking the current one first.
    @Test func anExpiredPasswordIsChangedAtTheLoginAndPasswdChangesItOnRequest() throws {
        let result = try session(
            "courses\nerin\nerin-2026\nerin-2026\nfresh-erin-1\nfresh-erin-1\npasswd\nfresh-erin-1\nfresh-erin-2\nfresh-erin-2\n"
                + "logout\nerin\nfresh-erin-2\n")
        #expect(result.status == 0)
        #expect(
            result.stdout.contains(
                "Password: \nYou are required to change your password immediately (administrator enforced).\n"
                    + "Changing password for erin.\nCurrent password: \nNew password: \nRetype new password: \n"
                    + "Courses for Erin:"),
            "\(result.stdout)")
        #expect(
            result.stdout.contains(
                "Current password: \nNew password: \nRetype new password: \nPassword changed for erin."),
            "\(result.stdout)")
        // Signed out on a protected tab, she is asked to sign in again, and the newest password opens it.
        #expect(result.stdout.components(separatedBy: "Courses for Erin:").count == 3, "\(result.stdout)")
        #expect(!result.stdout.contains("fresh-erin"))
    }

    /// A password change refused (the current password wrong) or cancelled says so and changes nothing.
    @Test func aRefusedOrCancelledPasswdChangesNothing() throws {
        let result = try session(
            "login\nalice\nwonderland\npasswd\nnot-it\nlooking-glass\nlooking-glass\npasswd\nwonderland\n")
        #expect(result.stdout.contains("The password was not changed: the current password is incorrect."))
        #expect(result.stdout.contains("Password change cancelled; the password is unchanged."))
    }

    @Test func publicTabsNeedNoLogin() throws {
        let result = try session("contact\nhome\n")
        #expect(result.stdout.contains("[home]› \nRegistrar's office"))
        #expect(result.stdout.contains("[contact]› \nWelcome to Gatekeeper University."))
        #expect(!result.stdout.contains("Username:"))
    }

    @Test func aProtectedTabOpensAfterALoginAndThePromptShowsTheUser() throws {
        let result = try session("courses\nalice\nwonderland\nprofile\nwhoami\n", ["--delay", "0.2"])
        // No spinner without a terminal: the transcript goes straight from the prompt to the content.
        #expect(result.stdout.contains("Username: \nPassword: \nCourses for Alice Liddell:"))
        #expect(!result.stdout.contains("Checking"))
        #expect(result.stdout.contains("[courses · alice]› \nName:      Alice Liddell"))
        #expect(result.stdout.contains("Groups:    admin, staff\nProvider:  mock"))
        #expect(result.stdout.contains("[profile · alice]› \nalice (Alice Liddell)"))
        let afterBanner = try #require(result.stdout.components(separatedBy: "Type 'help'.").last)
        #expect(!afterBanner.contains("wonderland"))
    }

    @Test(arguments: [
        ("an empty user name", "\n"),
        ("end of input at the user name", ""),
        ("end of input at the password", "alice\n"),
    ])
    func cancellingFallsBackToThePreviousTab(_ name: String, _ answers: String) throws {
        let script = "contact\ncourses\n" + answers
        let result = try session(script)
        #expect(result.status == 0, "\(name)")
        #expect(result.stdout.contains("Login cancelled. Back to contact."), "\(name)")
        #expect(!result.stdout.contains("Courses for"), "\(name)")
        if !answers.isEmpty && answers != "alice\n" {
            #expect(result.stdout.hasSuffix("[contact]› \n"), "\(name)")
        }
    }

    @Test func threeWrongPasswordsFallBack() throws {
        let result = try session("contact\nprofile\nalice\none\nalice\ntwo\nalice\nthree\nwhoami\n")
        #expect(result.stdout.components(separatedBy: "The user name or password is incorrect.").count == 4)
        #expect(result.stdout.contains("No attempts left. Back to contact."))
        #expect(result.stdout.contains("[contact]› \nNot signed in."))
        #expect(!result.stdout.contains("Name:"))
    }

    @Test func logoutOnAProtectedTabAsksAgainOrGoesHome() throws {
        let result = try session("courses\nbob\nbuilder\nlogout\n\nwhoami\n")
        #expect(result.stdout.contains("[courses · bob]› \nSigned out.\ncourses needs you to sign in.\nUsername: \n"))
        #expect(result.stdout.contains("Login cancelled. Back to home.\n[home]› \nNot signed in."))
    }

    @Test func logoutOnAProtectedTabCanSignInAgain() throws {
        let result = try session("profile\nbob\nbuilder\nlogout\nalice\nwonderland\n")
        #expect(result.stdout.contains("courses needs you to sign in.") == false)
        #expect(
            result.stdout.contains("profile needs you to sign in.\nUsername: \nPassword: \nName:      Alice Liddell"))
        #expect(result.stdout.hasSuffix("[profile · alice]› \n"))
    }

    @Test func adminRefusesAUserOutsideTheGroup() throws {
        let result = try session("contact\nadmin\nbob\nbuilder\nadmin\nlogin\nalice\nwonderland\nadmin\n")
        #expect(result.stdout.contains("admin requires membership of \"admin\"; bob is not allowed. Back to contact."))
        #expect(result.stdout.contains("Signed in as Alice Liddell (alice)."))
        #expect(result.stdout.contains("[contact · alice]› \nAdmin console (signed in as alice)."))
        #expect(result.stdout.components(separatedBy: "Admin console").count == 2)
    }

    @Test func statusShowsStateProviderAndExpiry() throws {
        let result = try session("status\nlogin\nbob\nbuilder\nstatus\n")
        #expect(result.stdout.contains("Signed out. Provider: mock."))
        #expect(result.stdout.contains("Signed in as bob via mock. Session expires in 1"))
        #expect(result.stdout.contains("(idle 15m, at most 8h)."))
    }

    @Test func unknownCommandsGetAOneLineHint() throws {
        let result = try session("frobnicate\nopen\nopen nowhere\n\n   \n")
        #expect(result.stdout.contains("Unknown command 'frobnicate'. Type 'help' to see the commands.\n[home]› "))
        #expect(result.stdout.components(separatedBy: "Usage: open TAB").count == 3)
        #expect(result.status == 0)
    }

    @Test func veryLongLinesAreCutNotFatal() throws {
        let result = try session(String(repeating: "x", count: 200_000) + "\nwhoami\n")
        #expect(result.status == 0)
        #expect(result.stdout.contains("Unknown command '\(String(repeating: "x", count: 32))…'"))
        #expect(result.stdout.contains("Not signed in."))
        // One character: a letter under thousands of accents.
        let accented = try session("a" + String(repeating: "\u{301}", count: 3_000) + "\nwhoami\n")
        #expect(accented.stdout.contains("Not signed in."))
        #expect(accented.stdout.utf8.count < 1_000)
    }

    @Test func binaryGarbageIsHarmless() throws {
        var generator = SeededGenerator(for: "binaryGarbageIsHarmless")
        let garbage = (0..<64 * 1024).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let result = try run(gatekeeperREPL, ["--delay", "0"], bytes: garbage + Array("\nwhoami\n".utf8))
        #expect(result.status == 0)
        #expect(result.stdout.contains("Not signed in."))
        #expect(result.stderr.isEmpty)
    }

    @Test func endOfInputQuitsWithSuccess() throws {
        #expect(try session("").status == 0)
        #expect(try session("quit\nwhoami\n").stdout.contains("Not signed in.") == false)
    }

    @Test func choosesTheProviderByName() throws {
        let unknown = try session("", ["--provider", "nope"])
        #expect(unknown.status == 64)
        #expect(
            unknown.stderr.contains(
                "Unknown provider 'nope'; available: mock, pam, file, debug, checkpassword, helper, otp, ldap, oidc."))
        let badOption = try session("", ["--delay", "-1"])
        #expect(badOption.status == 64)
        let help = try session("", ["--help"])
        #expect(help.stdout.contains("--delay DURATION"))
    }
}

/// `status` shows what protects the next login: the failed logins counted, and a login gatekeeper-run
/// remembers for this session.
@Suite(.timeLimit(.minutes(1)))
struct REPLProtectionStatusTests {
    let directory = temporaryDirectory("gatekeeper-repl-status")

    func configuration() throws -> String {
        let path = directory + "/gatekeeper.conf"
        try """
        lockout deny=2 unlock=10m dir=\(directory)/tally
        delay 0
        cache timeout=5m dir=\(directory)/cache
        required mock delay=0

        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func statusShowsTheLockoutCount() throws {
        let config = try configuration()
        let counted = try session("login\nbob\nwrong\n\nstatus bob\n", ["--config", config])
        #expect(counted.stdout.contains("Lockout: bob has 1 of 2 failed logins counted."))
        // The count is kept in the directory: the next session sees it, and locks at the second.
        let locked = try session("login\nbob\nwrong\n\nstatus bob\n", ["--config", config])
        #expect(locked.stdout.contains("Lockout: bob is locked after 2 failed logins, for "))
        let signedIn = try session("login\nalice\nwonderland\nstatus\n", ["--config", config])
        #expect(signedIn.stdout.contains("Lockout: alice has 0 of 2 failed logins counted."))
    }

    /// A real backend counts where gatekeeper-run counts: two REPL sessions of three wrong passwords each
    /// lock bob (deny=5) for gatekeeper-run on the same state directory, and `status` says where.
    @Test func theREPLCountsWhereGatekeeperRunCounts() throws {
        let state = ScratchDirectory("gatekeeper-repl-tally")
        let users = state.path + "/users"
        // bob / builder (htpasswd -nbB bob builder).
        let hash = "$2y$05$979LHktMLEEEN8Oo4VlI3eGfVhUCOzuHM77lB5jmN9pAsy03saWeG"
        #expect(FileManager.default.createFile(atPath: users, contents: Data("bob:\(hash)\n".utf8)))
        chmod(users, 0o600)
        let arguments = ["--provider", "file", "--users", users, "--state-dir", state.path]
        for _ in 0..<2 {
            let wrong = try session("login\nbob\nwrong\nbob\nwrong\nbob\nwrong\nstatus bob\n", arguments)
            #expect(wrong.stdout.contains("Failed logins are counted in \(state.path)/faillock"), "\(wrong.stdout)")
        }
        let run = try TestSupport.run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "file", "--users", users, "--state-dir", state.path, "--user", "bob", "--password-stdin",
                "--", "true",
            ],
            input: "builder\n")
        #expect(run.status != 0 && run.stderr.contains("Too many failed attempts"), "\(run.status): \(run.stderr)")
        // The demo backend alone counts in memory, and says so.
        let demo = try session("status\n")
        #expect(demo.stdout.contains("Failed logins are counted in memory, for this session only"), "\(demo.stdout)")
    }

    @Test func statusShowsTheRememberedLogin() throws {
        let config = try configuration()
        let before = try session("status\n", ["--config", config])
        #expect(before.stdout.contains("Remembered login: none for this terminal session."))
        // gatekeeper-run, started by this same process, remembers alice.
        let ran = try run(
            builtExecutable("gatekeeper-run"), ["--config", config, "--", "true"], input: "alice\nwonderland\n")
        #expect(ran.status == 0)
        let after = try session("status\n", ["--config", config])
        #expect(after.stdout.contains("Remembered login: alice via mock"))
    }
}
