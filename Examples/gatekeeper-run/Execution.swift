import Authentication
import GatekeeperSupport
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// gatekeeper-run's own exit statuses (the command's status is passed through by `exec`).
struct ExitStatus: Error, Hashable {
    let code: Int32

    static let usage = ExitStatus(code: 64)
    static let invalidInput = ExitStatus(code: 65)
    static let unavailable = ExitStatus(code: 69)
    static let denied = ExitStatus(code: 77)
    static let cannotExecute = ExitStatus(code: 126)
    static let notFound = ExitStatus(code: 127)
    static let cancelled = ExitStatus(code: 130)

    init(code: Int32) { self.code = code }

    /// The status for a backend that could not be built: a resource it needs is unusable (69), or the
    /// command line is wrong (64).
    init(configuration error: any Error) {
        if case ProviderConfigurationError.unusable = error { self = .unavailable } else { self = .usage }
    }

    /// A login that ended without running the command: cancelled (130), unusable input (65), the
    /// backend down (69), or refused for any other reason, including codes added later (77).
    init(dismissal reason: AuthError) {
        switch reason.code {
        case .cancelled: self = .cancelled
        case .missingUsername, .invalidUsername, .missingPassword, .invalidPassword: self = .invalidInput
        case .providerUnavailable: self = .unavailable
        default: self = .denied
        }
    }
}

/// Prints `message` on standard error and exits with `status`.
func fail(_ status: ExitStatus, _ message: String) -> Never {
    writeStandardError("gatekeeper-run: \(message)\n")
    exit(status.code)
}

/// Replaces this process with `command`, run for `identity`. Returns only by throwing.
func execute(_ command: [String], as identity: Identity) throws -> Never {
    setenv("GATEKEEPER_USER", identity.username, 1)
    setenv("GATEKEEPER_PROVIDER", identity.provider, 1)
    var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) }
    argv.append(nil)
    // The command gets the signal mask and dispositions gatekeeper-run started with, as a shell would
    // give them: not this worker thread's mask (which blocks nearly everything), nor the ignored SIGINT
    // of the login, nor the terminal handlers.
    LaunchSignals.restoreForExec()
    execvp(command[0], argv)
    let error = errno
    for pointer in argv { free(pointer) }
    let reason = errorDescription(error)
    throw CommandError(status: error == ENOENT ? .notFound : .cannotExecute, message: "\(command[0]): \(reason)")
}

/// The command could not be started.
struct CommandError: Error {
    let status: ExitStatus
    let message: String
}
