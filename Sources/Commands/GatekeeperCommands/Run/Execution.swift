import Authentication
import GatekeeperSupport
import HostProtection
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Replaces this process with `command`, run for `identity`. Returns only by throwing: the command could
/// not be started, or `lastSignal` — asked once every helper is stopped — names a signal that came before
/// the `exec` (the login was stopped, so the command never starts).
func execute(_ command: [String], as identity: Identity, lastSignal: () -> Int32?) throws(ToolExit) -> Never {
    setenv("GATEKEEPER_USER", identity.username, 1)
    setenv("GATEKEEPER_PROVIDER", identity.provider, 1)
    var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) }
    argv.append(nil)
    // The command gets the signal mask and dispositions gatekeeper-run started with, as a shell would
    // give them: not the mask that blocked SIGINT, SIGTERM and SIGHUP during the login, nor the handlers
    // that handed them on, nor the terminal's.
    // Nothing the login started is left for the command to inherit.
    ChildProcesses.prepareForExec()
    if let number = lastSignal() {
        for pointer in argv { free(pointer) }
        if number == SIGINT { throw ToolExit(.cancelled, AuthError.cancelled.description) }
        throw ToolExit(ExitStatus(code: 128 + number), "stopped by signal \(number)")
    }
    LaunchSignals.restoreForExec()
    execvp(command[0], argv)
    let error = errno
    for pointer in argv { free(pointer) }
    let reason = errorDescription(error)
    throw ToolExit(error == ENOENT ? .notFound : .cannotExecute, "\(command[0]): \(reason)")
}
