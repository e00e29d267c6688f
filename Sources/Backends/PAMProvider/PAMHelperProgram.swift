import Authentication
import HelperPrograms

#if canImport(Glibc)
    import Glibc
#endif

/// gatekeeper-pam-helper: one PAM transaction in a process of its own, for the PAM provider's `isolated`
/// mode. It speaks the helper conversation protocol on standard input and output (HelperPrograms'
/// `HelperSide`): a module that crashes or hangs takes down this process, not the host, and cancelling a
/// login kills this process instead of abandoning a thread inside libpam.
///
/// usage: gatekeeper-pam-helper --service NAME [--pam-dir DIR] [--no-account-check]
public enum PAMHelperProgram {
    /// The program: reads its arguments and the login's first line, runs the transaction, writes its
    /// outcome, and exits.
    public static func main() async -> Never {
        // Before anything else runs: the protocol on descriptors of its own, standard input and output on
        // /dev/null, so what a PAM module prints or reads never reaches the protocol. (A module that goes
        // looking for the descriptors can still write to them, as it could set PAM_USER and succeed: a PAM
        // stack's modules are trusted with the login's outcome either way; the host looks the identity up
        // itself.)
        HelperSide.protectChannels()
        var arguments = CommandLine.arguments.dropFirst()[...]
        var service: String?
        var directory: String?
        var checksAccount = true
        while let argument = arguments.popFirst() {
            switch argument {
            case "--service": service = arguments.popFirst()
            case "--pam-dir": directory = arguments.popFirst()
            case "--no-account-check": checksAccount = false
            default:
                HelperSide.write(.unavailable(reason: "gatekeeper-pam-helper: unknown argument"))
                exit(64)
            }
        }
        guard let service, let start = HelperSide.readStart(), let username = try? Username.validate(start.user)
        else {
            HelperSide.write(.unavailable(reason: "gatekeeper-pam-helper: no service, or an unusable first line"))
            exit(64)
        }
        do {
            let provider = try PAMAuthProvider(
                .init(service: service, configurationDirectory: directory, checksAccount: checksAccount))
            let outcome = try await provider.authenticate(
                AuthRequest(
                    username: username, conversation: HelperSide.ProtocolConversation(), terminal: start.tty,
                    remoteHost: start.rhost, requestingUser: start.ruser))
            HelperSide.write(outcome)
            exit(0)
        } catch let error as AuthError where error.code == .cancelled {
            exit(0)  // The host cancelled; it expects nothing more.
        } catch {
            HelperSide.write(.unavailable(reason: "gatekeeper-pam-helper: \(error)"))
            exit(0)
        }
    }
}
