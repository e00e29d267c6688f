import Authentication
import BlockingPools
import FileProvider
import GatekeeperSupport
import OTPProvider
import PasswordHashing
import TerminalLogin
public import ToolSupport

/// gatekeeper-passwd: manages an htpasswd-compatible users file, as Apache's htpasswd does, with the extra
/// groups and display-name fields of swift-gatekeeper's file provider; and pam_oath's users file.
///
/// Exit statuses (ToolSupport's ``ExitStatus``, from sysexits.h): 0 done, 64 usage, 65 unusable input or
/// a change that does not fit the file, 69 the file or a library it needs unusable, 77 a password that
/// does not verify or a change refused, 130 cancelled.
public struct PasswdCommand {
    static let tool = "gatekeeper-passwd"

    let invocation: PasswdInvocation
    let output: ToolOutput

    /// The tool: reads the process's command line, does what it asks, and exits.
    public static func main() -> Never {
        let invocation: PasswdInvocation
        do throws(ToolExit) {
            guard let parsed = try PasswdInvocation.parse(CommandLine.arguments.dropFirst()) else {
                print(PasswdInvocation.usage)
                exitTool(.success)
            }
            invocation = parsed
        } catch {
            exitTool(ended(error, tool: tool, output: .standard))
        }
        exitTool(perform(invocation))
    }

    /// Does what `invocation` asks, saying what it has to say on `output`; answers the status the tool exits
    /// with. A change that fails leaves the file as it was.
    public static func perform(_ invocation: PasswdInvocation, output: ToolOutput = .standard) -> ExitStatus {
        do throws(ToolExit) {
            try PasswdCommand(invocation: invocation, output: output).perform()
            return .success
        } catch {
            return ended(error, tool: tool, output: output)
        }
    }

    var user: String { invocation.user ?? "" }

    func perform() throws(ToolExit) {
        let store = UsersFileStore(path: invocation.file)
        // A change the file cannot take (its lock cannot be made, it is refused, it is not the invoker's) is
        // said before any password is asked.
        if invocation.action.asksBeforeChanging {
            try change { () throws(UsersFileError) in
                try store.checkChangeable(create: invocation.action == .add && invocation.create)
            }
        }
        switch invocation.action {
        case .add:
            let newHash = try hash(try readPassword(confirm: true))
            try change { () throws(UsersFileError) in
                try store.addUser(
                    user, hash: newHash, groups: invocation.groups ?? [], displayName: invocation.name,
                    createFile: invocation.create)
            }
        case .set:
            let newHash = try hash(try readPassword(confirm: true))
            try change { () throws(UsersFileError) in
                try store.setPassword(of: user, to: newHash, groups: invocation.groups, displayName: invocation.name)
            }
        case .change: try changeOwnPassword()
        case .expire: try change { () throws(UsersFileError) in try store.expirePassword(of: user) }
        case .delete: try change { () throws(UsersFileError) in try store.deleteUser(user) }
        case .lock: try change { () throws(UsersFileError) in try store.lockUser(user) }
        case .unlock: try change { () throws(UsersFileError) in try store.unlockUser(user) }
        case .verify: try verify(try read(store))
        case .list: list(try read(store))
        case .otpAdd, .otpDelete, .otpList: try oneTimeCodes()
        }
    }

    // MARK: Passwords

    /// Reads a password: standard input's first line, or the terminal twice.
    func readPassword(confirm: Bool) throws(ToolExit) -> Secret {
        let secret: Secret
        if invocation.passwordFromStdin {
            guard let password = output.passwordFromStandardInput() else {
                throw ToolExit(.cancelled, "cancelled; nothing was changed.")
            }
            secret = password
        } else {
            guard let terminal = TerminalConversation.controllingTerminal() else {
                throw ToolExit(.usage, "no terminal to ask for the password; use --password-stdin.")
            }
            // Asked on this thread, lent to the questions' tasks: nothing of Swift's pool is started.
            let answers = ThreadExecutor.run { () async throws(AuthError) -> (Secret, Secret?) in
                let first = try await terminal.askSecret("Password: ")
                return (first, confirm ? try await terminal.askSecret("Password again: ") : nil)
            }
            guard case .success(let (first, again)) = answers else {
                throw ToolExit(.cancelled, "cancelled; nothing was changed.")
            }
            if let again, again != first {
                throw ToolExit(.invalidInput, "the passwords do not match; nothing was changed.")
            }
            secret = first
        }
        do throws(AuthError) {
            try Credentials.validatePassword(secret)
        } catch {
            throw ToolExit(.invalidInput, "\(error.description) Nothing was changed.")
        }
        if invocation.scheme == .bcrypt && secret.count > PasswordHash.bcryptMaxPasswordBytes {
            throw ToolExit(
                .invalidInput,
                "bcrypt uses only the first \(PasswordHash.bcryptMaxPasswordBytes) bytes of a password; "
                    + "this one is longer. Choose another scheme or a shorter password.")
        }
        return secret
    }

    func hash(_ secret: Secret) throws(ToolExit) -> PasswordHash {
        do {
            return try PasswordHash.make(secret, scheme: invocation.scheme)
        } catch {
            throw ToolExit(.unavailable, "cannot hash the password: \(error)")
        }
    }

    // MARK: The users file

    /// Runs one change of the file; an error ends the tool (65 or 69), the file unchanged.
    func change(_ body: () throws(UsersFileError) -> Void) throws(ToolExit) {
        do throws(UsersFileError) {
            try body()
        } catch {
            // A change that does not fit the file (the user there already, or not there) is the input's fault
            // (65); the file missing, refused or unwritable is the file's (69).
            throw ToolExit(error.code == .refused ? .invalidInput : .unavailable, error.description)
        }
    }

    func read(_ store: UsersFileStore) throws(ToolExit) -> UsersFile {
        do {
            return try store.read()
        } catch {
            throw ToolExit(.unavailable, error.description)
        }
    }

    /// The user's own change, as passwd does it.
    func changeOwnPassword() throws(ToolExit) {
        if invocation.passwordFromStdin {
            throw ToolExit(.usage, "change asks three passwords; it takes no --password-stdin.")
        }
        let provider: FileAuthProvider
        do {
            provider = try FileAuthProvider(.init(path: invocation.file, defaultScheme: invocation.scheme))
        } catch {
            throw ToolExit(.unavailable, error.description)
        }
        // The terminal, or standard input line by line when there is none (a script); every password
        // checked as a login's is (a NUL byte, which C would cut short, is refused).
        let conversation = CheckedConversation(
            TerminalConversation.controllingTerminal() ?? TerminalConversation(input: 0, output: 2))
        let user = user
        let changed = ThreadExecutor.run { () async throws(AuthError) -> PasswordChangeOutcome in
            await conversation.show("Changing password for \(TextSafety.escaped(user)).", as: .info)
            return try await provider.changePassword(of: user, conversation: conversation)
        }
        let outcome: PasswordChangeOutcome
        do throws(AuthError) {
            outcome = try changed.get()
        } catch  where error.code == .cancelled {
            throw ToolExit(.cancelled, "cancelled; nothing was changed.")
        } catch {
            throw ToolExit(.invalidInput, "\(error.description) Nothing was changed.")
        }
        switch outcome {
        case .changed: throw ToolExit(.success, "the password of \(TextSafety.escaped(user)) was changed.")
        case .notMine: throw ToolExit(.denied, "there is no user \(TextSafety.escaped(user)); nothing was changed.")
        case .unavailable(let reason): throw ToolExit(.unavailable, "\(sentence(reason)) Nothing was changed.")
        default: throw ToolExit(.denied, "\(outcome.error?.description ?? "refused.") Nothing was changed.")
        }
    }

    /// Says whether the password read is the user's; 77 when it is not.
    func verify(_ file: UsersFile) throws(ToolExit) {
        let secret = try readPassword(confirm: false)
        guard let entry = file[user] else { throw ToolExit(.denied, "password verification failed for \(user).") }
        // A hash whose library cannot be loaded is not checked: that is no wrong password.
        switch entry.password {
        case .hash(let hash), .expired(let hash):
            if let problem = hash.libraryProblem {
                throw ToolExit(.unavailable, "\(user)'s password cannot be checked: \(problem)")
            }
        case .locked: break
        }
        switch entry.password {
        case .locked: throw ToolExit(.denied, "\(user) is locked.")
        case .expired(let hash):
            guard hash.verify(secret) else { throw ToolExit(.denied, "password verification failed for \(user).") }
            throw ToolExit(.success, "password correct for \(user), but it has expired: the next login changes it.")
        case .hash(let hash):
            guard hash.verify(secret) else { throw ToolExit(.denied, "password verification failed for \(user).") }
            if hash.scheme.isWeak {
                throw ToolExit(
                    .success,
                    "password correct for \(user), but its \(hash.scheme.rawValue) hash is weak; set it again.")
            }
            throw ToolExit(.success, "password correct for \(user).")
        }
    }

    func list(_ file: UsersFile) {
        for warning in file.warnings { output.error("\(Self.tool): warning: \(warning)") }
        for entry in file.entries {
            let state: String =
                switch entry.password {
                case .locked: "locked"
                case .expired(let hash): "\(hash.scheme.rawValue) (expired)"
                case .hash(let hash): hash.scheme.isWeak ? "\(hash.scheme.rawValue) (weak)" : hash.scheme.rawValue
                }
            let groups = entry.groups.isEmpty ? "-" : entry.groups.joined(separator: ",")
            // Fields come from a file anyone with write access could have edited by hand: escaped, so a
            // control sequence in them cannot rewrite the terminal, and a tab cannot shift the columns.
            let fields = [entry.username, state, groups, entry.displayName ?? ""].map { TextSafety.escaped($0) }
            output.print(fields.joined(separator: "\t"))
        }
    }

    // MARK: pam_oath's users file

    /// The one-time code actions, on pam_oath's users file.
    func oneTimeCodes() throws(ToolExit) {
        let codes = OATHUsersFileStore(path: invocation.file)
        do throws(OATHFileError) {
            switch invocation.action {
            case .otpAdd:
                if invocation.algorithm != .sha1 {
                    // pam_oath's file (liboath 2.6) has SHA-1 entries only; the others are this package's.
                    output.error(
                        "\(Self.tool): warning: a \(invocation.algorithm.rawValue) entry is read by gatekeeper's otp "
                            + "provider only; pam_oath skips it.")
                }
                let secret = OATHUsersFileStore.newSecret()
                try codes.add(
                    user, kind: invocation.codeKind, digits: invocation.digits, algorithm: invocation.algorithm,
                    secret: secret, createFile: invocation.create)
                let uri = Enrolment.uri(
                    username: user, secret: secret, kind: invocation.codeKind, digits: invocation.digits,
                    algorithm: invocation.algorithm)
                output.print("Scan this with an authenticator app, or enter the URI by hand:\n")
                for line in Enrolment.qrCode(uri) ?? [] { output.print(line) }
                output.print("\n\(uri)")
            case .otpDelete:
                try codes.delete(user)
            default:
                for entry in try codes.list() {
                    output.print([entry.username, entry.type].map { TextSafety.escaped($0) }.joined(separator: "\t"))
                }
            }
        } catch {
            throw ToolExit(error.isRefusal ? .invalidInput : .unavailable, error.description)
        }
    }
}

/// `reason` as a sentence: one full stop at its end, never two marks.
func sentence(_ reason: String) -> String {
    var text = Substring(reason)
    while let last = text.last, last == "." || last == ";" || last == " " { text = text.dropLast() }
    return text + "."
}

/// The terminal's answers, each password refused as a login refuses it before a provider sees it.
struct CheckedConversation: Conversation {
    let base: TerminalConversation

    init(_ base: TerminalConversation) { self.base = base }

    func ask(_ prompt: String) async throws(AuthError) -> String { try await base.ask(prompt) }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        let secret = try await base.askSecret(prompt)
        try Credentials.validatePassword(secret)
        return secret
    }

    func show(_ message: String, as kind: MessageKind) async { await base.show(message, as: kind) }
}
