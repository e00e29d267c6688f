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

/// A login remembered for this terminal session, accepted only if the account may still sign in.
enum RememberedLogin {
    /// The identity to run the command for, or `nil` when the login must be made again: the backend no
    /// longer vouches for the account (deleted, locked, expired, or it cannot tell), or the account is
    /// locked out. Accepting it is audited.
    static func accept(
        _ remembered: LoginCache.Login,
        provider: any AuthProvider,
        lockout: any LockoutStore,
        policy: LockoutPolicy?,
        audit: any AuditSink,
        settings: Gatekeeper.Configuration
    ) async -> Identity? {
        guard
            case .valid(let identity) = await provider.recheck(
                Identity(username: remembered.username, provider: remembered.provider))
        else { return nil }
        if let policy {
            guard let status = try? lockout.status(of: identity.username, policy: policy), !status.isLocked else {
                return nil
            }
        }
        audit.record(
            AuditEvent(
                kind: .cachedLogin, username: identity.username, provider: identity.provider,
                detail: "remembered \(remembered.age.components.seconds) s ago", terminal: settings.terminal,
                remoteHost: settings.remoteHost))
        return identity
    }
}
