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
    var command: [String] = []

    static let shortUsage =
        "usage: gatekeeper-run --provider NAME [options] [--user U] [--password-stdin] [--group G] -- COMMAND [ARGS...]"

    static func usage(registry: ProviderRegistry) -> String {
        """
        \(shortUsage)

        Runs COMMAND only after you sign in, and, with --group, only if you belong to G.
        The command runs with GATEKEEPER_USER and GATEKEEPER_PROVIDER set.

        Options:
          --user U            sign in as U instead of asking
          --password-stdin    read the password from the first line of standard input (one attempt)
          --group G           also require membership of group G
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
        var invocation = Invocation(selection: ProviderSelection(registry: registry))
        var rest = arguments
        while let argument = rest.first {
            if try invocation.selection.consume(&rest) { continue }
            rest.removeFirst()
            switch argument {
            case "-h", "--help":
                return nil
            case "--":
                invocation.command = Array(rest)
                rest = []
            case "--password-stdin":
                invocation.passwordFromStdin = true
            case "--user", "--group":
                guard let value = rest.popFirst() else { throw UsageError("\(argument) needs a value.") }
                if argument == "--user" { invocation.user = value } else { invocation.group = value }
            case _ where argument.hasPrefix("-"):
                throw UsageError("Unknown option \(argument).")
            default:
                invocation.command = [argument] + rest
                rest = []
            }
        }
        guard !invocation.command.isEmpty else { throw UsageError("No command given.") }
        return invocation
    }
}
