public import Authentication
import GatekeeperSupport
import TerminalLogin

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
    /// What is done before a command that ends early says why: for a tool, every helper a login started
    /// (and whatever they started) stopped and the terminal restored, so that the message is the last
    /// thing the terminal shows; nothing for a host that goes on.
    public var beforeLastWords: @Sendable () -> Void
    /// Whether the process ends with the command (a tool). A login's process-wide watch — the process a
    /// subreaper of its helpers, a thread handing SIGINT, SIGTERM and SIGHUP to the login — is then left
    /// for the exit, so that a signal that comes late still stops the helpers first; otherwise no subreaper
    /// is made and the watch ends when the command returns, the host's signals as they were.
    public var endsProcess: Bool

    public init(
        print: @escaping @Sendable (String) -> Void,
        error: @escaping @Sendable (String) -> Void,
        passwordFromStandardInput: @escaping @Sendable () -> Secret?,
        beforeLastWords: @escaping @Sendable () -> Void = {},
        endsProcess: Bool = false
    ) {
        self.print = print
        self.error = error
        self.passwordFromStandardInput = passwordFromStandardInput
        self.beforeLastWords = beforeLastWords
        self.endsProcess = endsProcess
    }

    /// Standard output, standard error (escaped: ``writeStandardError(_:)``) and standard input, for a tool.
    public static let standard = ToolOutput(
        print: { Swift.print($0) },
        error: { writeStandardError($0 + "\n") },
        passwordFromStandardInput: { TerminalConversation.passwordFromStandardInput() },
        beforeLastWords: {
            ChildProcesses.stopAll()
            TerminalRestoration.restoreBeforeExit()
        },
        endsProcess: true)
}

/// What ends a command before its end: the status the tool exits with, and the message it says on standard
/// error (after its name), if any. Most are failures; gatekeeper-passwd ends some successes so too.
public struct ToolExit: CodedError {
    public let status: ExitStatus
    public let message: String?

    /// The status is the code: what a caller acts on.
    public var code: ExitStatus { status }
    public var description: String { message ?? "exit status \(status.code)" }

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

/// The process's command line as `parse` reads it, or — refused — the tool ended with why and `usage` (64).
package func readCommandLine<Invocation>(
    of tool: String, usage: String, _ parse: (ArraySlice<String>) throws(UsageError) -> Invocation
) -> Invocation {
    do throws(UsageError) {
        return try parse(CommandLine.arguments.dropFirst())
    } catch {
        writeStandardError("\(tool): \(error)\n\(usage)\n")
        exitTool(.usage)
    }
}

/// The status of a command that ended early, its message said on `output`'s standard error after the
/// tool's name (once `output` made ready for its last words).
package func ended(_ failure: ToolExit, tool: String, output: ToolOutput) -> ExitStatus {
    output.beforeLastWords()
    if let message = failure.message { output.error("\(tool): \(message)") }
    return failure.status
}
