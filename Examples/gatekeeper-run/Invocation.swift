import Authentication
import ProviderPlugins
import TerminalLogin
import ToolSupport

/// What the command line asked for.
struct Invocation {
    var selection: ProviderSelection
    var user: String?
    var passwordFromStdin = false
    var group: String?
    /// A stack configuration file (`--config`), instead of `--provider`.
    var configuration: String?
    /// Print the trace of the login on standard error (`--explain`).
    var explains = false
    /// Only check this configuration file (`--check-config`), and run nothing.
    var checksConfiguration: String?
    var command: [String] = []

    static let shortUsage =
        "usage: gatekeeper-run (--provider NAME [options] | --config FILE) [--user U] [--password-stdin] [--group G]\n"
        + "                      [--explain] -- COMMAND [ARGS...]"

    static func usage(registry: ProviderRegistry) -> String {
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
          --check-config FILE check FILE, print its stack and what to worry about; run nothing
                              (exit 0 valid, 1 invalid)
          -h, --help          show this help

        \(ProviderSelection(registry: registry).help())

        Exit status: the command's own, or
          64 usage error        65 unusable user name or password   69 provider unavailable
          77 login refused      126 command cannot run              127 command not found
          130 login cancelled (Ctrl-C, Ctrl-D, or an empty user name)
        """
    }

    /// Parses the arguments; `nil` means help was asked for.
    static func parse(_ arguments: ArraySlice<String>, registry: ProviderRegistry) throws(UsageError) -> Invocation? {
        var selection = ProviderSelection(registry: registry)
        let syntax = CommandLineSyntax(
            flags: ["-h", "--help", "--password-stdin", "--explain"],
            valueOptions: ["user", "group", "config", "check-config"],
            commandFollows: true
        ).selectingProviders(from: selection)
        let parsed = try syntax.parse(arguments)
        if parsed.has("-h", "--help") { return nil }
        selection.take(from: parsed)
        var invocation = Invocation(selection: selection)
        if let path = parsed.values["check-config"] {
            invocation.checksConfiguration = path
            return invocation
        }
        guard !parsed.trailing.isEmpty else { throw UsageError("No command given.") }
        invocation.user = parsed.values["user"]
        invocation.group = parsed.values["group"]
        invocation.passwordFromStdin = parsed.has("--password-stdin")
        invocation.explains = parsed.has("--explain")
        invocation.configuration = parsed.values["config"]
        if invocation.configuration != nil && (selection.name != nil || !selection.options.isEmpty) {
            throw UsageError("--config names the providers; give it without --provider or provider options.")
        }
        invocation.command = parsed.trailing
        return invocation
    }
}
