public import Authentication
import GatekeeperSupport
import TerminalLogin
public import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a command's words go and where a password given on standard input comes from: the process's
/// own streams for a tool (``standard``), anything a test or an embedding host chooses otherwise.
public struct ToolOutput: Sendable {
    /// A line for standard output (what the command reports: a stack, a list, a verification).
    public var print: @Sendable (String) -> Void
    /// A message for standard error, already prefixed with the tool's name when it is the tool's.
    public var error: @Sendable (String) -> Void
    /// The first line of standard input as a password (`--password-stdin`); `nil` when cancelled.
    public var passwordFromStandardInput: @Sendable () -> Secret?

    public init(
        print: @escaping @Sendable (String) -> Void,
        error: @escaping @Sendable (String) -> Void,
        passwordFromStandardInput: @escaping @Sendable () -> Secret?
    ) {
        self.print = print
        self.error = error
        self.passwordFromStandardInput = passwordFromStandardInput
    }

    /// Standard output, standard error (escaped: ``writeStandardError(_:)``) and standard input.
    public static let standard = ToolOutput(
        print: { Swift.print($0) },
        error: { writeStandardError($0 + "\n") },
        passwordFromStandardInput: { TerminalConversation.passwordFromStandardInput() })
}

/// What ends a command before its end: the status the tool exits with, and the message it says on standard
/// error (after its name), if any. Most are failures; gatekeeper-passwd ends some successes so too.
public struct ToolExit: Error, Sendable {
    public let status: ExitStatus
    public let message: String?

    public init(_ status: ExitStatus, _ message: String? = nil) {
        self.status = status
        self.message = message
    }
}

/// How a tool ends: every helper a login started (and whatever they started) stopped, the terminal as it
/// was, then the status.
public func exitTool(_ status: ExitStatus) -> Never {
    ChildProcesses.stopAll()
    TerminalRestoration.restoreBeforeExit()
    exit(status.code)
}

/// The status of a command that ended early, its message said on `output`'s standard error after the
/// tool's name — once the helpers are stopped and the terminal restored, so the message is the last
/// thing the terminal shows.
func ended(_ failure: ToolExit, tool: String, output: ToolOutput) -> ExitStatus {
    ChildProcesses.stopAll()
    TerminalRestoration.restoreBeforeExit()
    if let message = failure.message { output.error("\(tool): \(message)") }
    return failure.status
}
