import Authentication
public import ProviderPlugins
import TerminalLogin
public import ToolSupport

/// What gatekeeper-run's command line asks for: one ``Action``, and the backend, the person and the
/// state directory it concerns.
public struct RunInvocation: Sendable {
    /// What gatekeeper-run does; ``RunCommand/perform(_:output:)`` does it.
    public enum Action: Hashable, Sendable {
        /// Print the help (`-h`, `--help`).
        case help
        /// Check a configuration file and print its stack (`--check-config`); run nothing.
        case checkConfig(String)
        /// Verify a JSON audit log's hash chain (`--verify-audit`); run nothing.
        case verifyAudit(String)
        /// Ask the directory about every offline-cached login (`--refresh-offline`); run nothing.
        case refreshOffline
        /// Forget an account's failed logins (`--unlock USER`); run nothing.
        case unlock(String)
        /// Only forget remembered logins (`-k`, `-K` without a command; ``forgetting`` says which).
        case forget
        /// Sign in, then change the password through the stack (`--change-password`); run nothing.
        case changePassword
        /// Sign in, then run the command (after forgetting remembered logins when ``forgetting`` says so).
        case run([String])
    }

    /// Which remembered logins `-k` and `-K` forget.
    public enum Forgetting: Hashable, Sendable {
        /// This terminal session's (`-k`).
        case session
        /// Every one, or with `--user` that user's (`-K`).
        case all
    }

    public var action: Action
    /// The backend named on the command line (`--provider` and its options), when no `--config` names it.
    public var selection: ProviderSelection
    /// A stack configuration file (`--config`), instead of `--provider`.
    public var configuration: String?
    /// Where failed logins and remembered logins are kept, where the configuration does not say.
    public var stateDirectory: String?
    public var user: String?
    public var passwordFromStdin = false
    public var group: String?
    /// Print the trace of the login on standard error (`--explain`).
    public var explains = false
    public var forgetting: Forgetting?

    public init(_ action: Action, selection: ProviderSelection) {
        self.action = action
        self.selection = selection
    }

    public static let shortUsage =
        "usage: gatekeeper-run (--provider NAME [options] | --config FILE) [--user U] [--password-stdin] [--group G]\n"
        + "                      [--explain] [--state-dir DIR] [-k | -K] -- COMMAND [ARGS...]\n"
        + "       gatekeeper-run (--provider NAME [options] | --config FILE) [--user U] --change-password\n"
        + "       gatekeeper-run [--config FILE | --state-dir DIR] (--unlock USER | -k | -K [--user U])\n"
        + "       gatekeeper-run (--provider NAME [options] | --config FILE) --refresh-offline\n"
        + "       gatekeeper-run (--check-config FILE | --verify-audit FILE)"

    public static func usage(registry: ProviderRegistry) -> String {
        """
        \(shortUsage)

        Runs COMMAND only after you sign in, and, with --group, only if you belong to G.
        The command runs with GATEKEEPER_USER and GATEKEEPER_PROVIDER set.

        Options:
          --user U            sign in as U instead of asking
          --password-stdin    read the password from the first line of standard input (one attempt)
          --group G           also require membership of group G
          --config FILE       the providers to stack and the session settings, from FILE
          --explain           print which provider answered what, and what decided, on standard error
          --change-password   sign in, then change your password through the stack (as passwd does:
                              each entry that keeps passwords checks first, then all change); run
                              nothing
          --check-config FILE check FILE, print its stack and what to worry about; run nothing
                              (exit 0 valid, 1 invalid)
          --state-dir DIR     keep failed logins (DIR/faillock) and remembered logins (DIR/cache)
                              here, where the configuration file does not say (not for a
                              configuration owned by root, unless you are root)
          --unlock USER       forget USER's failed logins (as faillock --reset); run nothing
          --refresh-offline   ask the directory about every login its offline cache keeps, and forget
                              those reset, locked or deleted since (exit 69 when it cannot be asked);
                              run nothing
          -k                  forget the login remembered for this terminal session
          -K                  forget every remembered login (with --user, only that user's)
          --verify-audit FILE check the hash chain of a JSON audit log; print the first record
                              edited, removed or moved (exit 0 intact, 1 broken)
          -h, --help          show this help

        After a login, further runs from the same terminal session (or parent, with the same standard
        input pipe) within 5 minutes (cache timeout= in the configuration) do not ask for the password of
        that user again, unless --password-stdin gives a password to check; the user name is still asked.
        A password that has expired is changed during the login, as login(1) has it changed (the new
        one twice); with --password-stdin it cannot be, and the login ends with status 75.
        Failed logins wait 2 s (delay) and are counted in pam_faillock's format; after 5 within 15
        minutes the account is locked for 10 minutes (lockout deny= interval= unlock=).

        \(ProviderSelection(registry: registry).help())

        Exit status: the command's own, or
          64 usage error        65 unusable user name or password   69 provider unavailable
          75 password expired, not changed (--password-stdin)
          77 login refused, or the password change refused
          126 command cannot run                127 command not found
          130 login cancelled (Ctrl-C, Ctrl-D, or an empty user name)
          129 stopped by SIGHUP 143 stopped by SIGTERM (helpers stopped first)
        """
    }

    /// Reads the arguments (without the program's name).
    public static func parse(_ arguments: ArraySlice<String>, registry: ProviderRegistry) throws(UsageError)
        -> RunInvocation
    {
        var selection = ProviderSelection(registry: registry)
        let syntax = CommandLineSyntax(
            flags: [
                "-h", "--help", "--password-stdin", "--explain", "-k", "-K", "--change-password", "--refresh-offline",
            ],
            valueOptions: ["user", "group", "config", "check-config", "state-dir", "unlock", "verify-audit"],
            commandFollows: true
        ).selectingProviders(from: selection)
        let parsed = try syntax.parse(arguments)
        selection.take(from: parsed)
        if parsed.has("-h", "--help") { return RunInvocation(.help, selection: selection) }
        if let path = parsed.values["check-config"] { return RunInvocation(.checkConfig(path), selection: selection) }
        if let path = parsed.values["verify-audit"] { return RunInvocation(.verifyAudit(path), selection: selection) }
        var invocation = RunInvocation(.forget, selection: selection)
        invocation.stateDirectory = parsed.values["state-dir"]
        if let directory = invocation.stateDirectory, !directory.hasPrefix("/") {
            throw UsageError("--state-dir needs an absolute path.")
        }
        invocation.configuration = parsed.values["config"]
        if parsed.has("--refresh-offline") {
            // --state-dir is accepted and has no bearing: the offline cache is where its backend says.
            let selects = { (name: String) in
                ["config", "provider", "state-dir"].contains(name) || selection.options[name] != nil
            }
            guard parsed.trailing.isEmpty, parsed.values.keys.allSatisfy(selects),
                parsed.flags.subtracting(["--refresh-offline"]).isEmpty
            else {
                throw UsageError("--refresh-offline takes --config FILE or a provider and its options, nothing else.")
            }
            guard (invocation.configuration != nil) != (selection.name != nil) else {
                throw UsageError("--refresh-offline needs --config FILE or --provider NAME (one of them).")
            }
            invocation.action = .refreshOffline
            return invocation
        }
        invocation.user = parsed.values["user"]
        if parsed.has("-k") && parsed.has("-K") { throw UsageError("Give -k or -K, not both.") }
        invocation.forgetting = parsed.has("-k") ? .session : parsed.has("-K") ? .all : nil
        if let name = parsed.values["unlock"] {
            invocation.action = .unlock(name)
            return invocation
        }
        if invocation.forgetting != nil && parsed.trailing.isEmpty { return invocation }
        if parsed.has("--change-password") {
            guard parsed.trailing.isEmpty else { throw UsageError("--change-password runs no command.") }
            guard !parsed.has("--password-stdin") else {
                throw UsageError("--change-password asks the new password twice; it cannot come from standard input.")
            }
            invocation.action = .changePassword
        } else {
            guard !parsed.trailing.isEmpty else { throw UsageError("No command given.") }
            invocation.action = .run(parsed.trailing)
        }
        invocation.group = parsed.values["group"]
        invocation.passwordFromStdin = parsed.has("--password-stdin")
        invocation.explains = parsed.has("--explain")
        if invocation.configuration != nil && (selection.name != nil || !selection.options.isEmpty) {
            throw UsageError("--config names the providers; give it without --provider or provider options.")
        }
        return invocation
    }
}
