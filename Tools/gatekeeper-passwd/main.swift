// gatekeeper-passwd: manages an htpasswd-compatible users file, as Apache's htpasswd does, with the extra
// groups and display-name fields of swift-gatekeeper's file provider.
import Authentication
import FileProvider
import GatekeeperSupport
import OTPProvider
import PasswordHashing
import ProviderPlugins
import TerminalLogin
import ToolSupport

#if canImport(Glibc)
    import Glibc
#endif

let usage = """
    usage: gatekeeper-passwd add|set|change|expire|delete|lock|unlock|verify|list FILE [USER]
                             [--scheme yescrypt|bcrypt|sha512] [--groups a,b] [--name "Display Name"]
                             [--password-stdin] [--create]
           gatekeeper-passwd otp-add FILE USER [--totp|--hotp] [--digits 6|7|8] [--algorithm sha1|sha256|sha512]
                             [--create]
           gatekeeper-passwd otp-delete FILE USER
           gatekeeper-passwd otp-list FILE

    otp-* manage pam_oath's users file (/etc/users.oath): otp-add makes a random secret, writes the entry
    and prints the otpauth:// URI and a QR code for an authenticator app to scan.

    change asks USER's current password, then the new one twice, as passwd does: the new one must pass
    libpwquality's checks (/etc/security/pwquality.conf) and keeps the entry's scheme and cost. It needs
    no root, only a file you may write (yours, not writable by others). expire marks USER's password
    expired, as passwd does for system accounts: the next login asks for a new one, and Apache refuses
    the entry until then.

    Passwords are read from the terminal (twice, echo off), or from the first line of standard input with
    --password-stdin (not for change); never from the command line.
    Exit status: 0 done, 64 usage, 65 unusable input or a change that does not fit the file, 69 file
    problem, 77 verification failed or change refused, 130 cancelled.
    """

/// Ends the tool with one of the statuses every tool of the package uses (ToolSupport's `ExitStatus`,
/// from sysexits.h): 0 done, 64 usage, 65 unusable input or a change that does not fit the file, 69 the
/// file or a library it needs unusable, 77 a password that does not verify or a change refused, 130
/// cancelled.
func finish(_ status: ExitStatus, _ message: String? = nil) -> Never {
    if let message { writeStandardError("gatekeeper-passwd: \(message)\n") }
    exit(status.code)
}

/// `reason` as a sentence: one full stop at its end, never two marks.
func sentence(_ reason: String) -> String {
    var text = Substring(reason)
    while let last = text.last, last == "." || last == ";" || last == " " { text = text.dropLast() }
    return text + "."
}

/// A users file's error: a change that does not fit the file (the user there already, or not there) is
/// the input's fault (65); the file missing, refused or unwritable is the file's (69).
func status(of error: UsersFileError) -> ExitStatus {
    error.code == .refused ? .invalidInput : .unavailable
}

// MARK: Command line

struct Command {
    var action = ""
    var file = ""
    var user: String?
    var scheme = PasswordHash.Scheme.yescrypt
    var groups: [String]?
    var name: String?
    var passwordFromStdin = false
    var create = false
}

var command = Command()
let parsed: ParsedCommandLine
do {
    parsed = try CommandLineSyntax(
        flags: ["-h", "--help", "--password-stdin", "--create", "--totp", "--hotp"],
        valueOptions: ["scheme", "groups", "name", "digits", "algorithm"]
    ).parse(CommandLine.arguments.dropFirst())
} catch {
    finish(.usage, "\(error)\n\(usage)")
}
if parsed.has("-h", "--help") {
    print(usage)
    exit(0)
}
command.passwordFromStdin = parsed.has("--password-stdin")
command.create = parsed.has("--create")
if let value = parsed.values["scheme"] {
    guard let scheme = PasswordHash.Scheme(rawValue: value), PasswordHash.Scheme.writable.contains(scheme) else {
        finish(.usage, "--scheme must be one of: yescrypt, bcrypt, sha512.")
    }
    command.scheme = scheme
}
if let value = parsed.values["groups"] {
    // Split as bytes, as the file is read: "," is ASCII. An empty value clears the groups.
    let groups =
        value.isEmpty
        ? []
        : value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
    do {
        for group in groups { try UsersFile.validateGroup(group) }
    } catch {
        finish(.invalidInput, "--groups: \(error). Give names separated by commas.")
    }
    command.groups = groups
}
if let value = parsed.values["name"] {
    do {
        try UsersFile.validateDisplayName(value)
    } catch {
        finish(.invalidInput, "--name: \(error).")
    }
    command.name = value
}
let positional = parsed.positionals + parsed.trailing

let actions = [
    "add", "set", "change", "expire", "delete", "lock", "unlock", "verify", "list", "otp-add", "otp-delete", "otp-list",
]
guard let action = positional.first, actions.contains(action) else { finish(.usage, usage) }
command.action = action
guard positional.count >= 2 else { finish(.usage, "\(action) needs a FILE.\n\(usage)") }
command.file = positional[1]
if action == "list" || action == "otp-list" {
    guard positional.count == 2 else { finish(.usage, "list takes no USER.") }
} else {
    guard positional.count == 3 else { finish(.usage, "\(action) needs a FILE and a USER.") }
    do {
        command.user = try Username.validate(positional[2])
    } catch {
        finish(.invalidInput, error.description)
    }
}

// MARK: Passwords

/// Reads a password: standard input's first line, or the terminal twice.
@MainActor
func readPassword(confirm: Bool) -> Secret {
    let secret: Secret
    if command.passwordFromStdin {
        guard let password = TerminalConversation.passwordFromStandardInput() else {
            finish(.cancelled, "cancelled; nothing was changed.")
        }
        secret = password
    } else {
        guard let terminal = TerminalConversation.controllingTerminal() else {
            finish(.usage, "no terminal to ask for the password; use --password-stdin.")
        }
        // Asked on this thread, lent to the questions' tasks: nothing of Swift's pool is started.
        let answers = ThreadExecutor.run { () async throws(AuthError) -> (Secret, Secret?) in
            let first = try await terminal.askSecret("Password: ")
            return (first, confirm ? try await terminal.askSecret("Password again: ") : nil)
        }
        guard case .success(let (first, again)) = answers else {
            finish(.cancelled, "cancelled; nothing was changed.")
        }
        if let again, again != first { finish(.invalidInput, "the passwords do not match; nothing was changed.") }
        secret = first
    }
    do {
        try Credentials.validatePassword(secret)
    } catch {
        finish(.invalidInput, "\(error.description) Nothing was changed.")
    }
    if command.scheme == .bcrypt && secret.count > PasswordHash.bcryptMaxPasswordBytes {
        finish(
            .invalidInput,
            "bcrypt uses only the first \(PasswordHash.bcryptMaxPasswordBytes) bytes of a password; "
                + "this one is longer. Choose another scheme or a shorter password."
        )
    }
    return secret
}

@MainActor
func hash(_ secret: Secret) -> PasswordHash {
    do {
        return try PasswordHash.make(secret, scheme: command.scheme)
    } catch {
        finish(.unavailable, "cannot hash the password: \(error)")
    }
}

// MARK: Actions

let store = UsersFileStore(path: command.file)

/// The one-time code commands, on pam_oath's users file.
@MainActor
func oneTimeCodes(_ action: String, user: String) -> Never {
    let codes = OATHUsersFileStore(path: command.file)
    do throws(OATHFileError) {
        switch action {
        case "otp-add":
            do throws(OATHFileError) {
                try OATHUsersFileStore.validateName(user)
            } catch {
                finish(.invalidInput, "\(error.description); nothing was changed.")
            }
            if parsed.has("--totp") && parsed.has("--hotp") { finish(.usage, "give --totp or --hotp, not both.") }
            let kind: OATHUsersFileStore.Kind = parsed.has("--hotp") ? .hotp : .totp(step: 30)
            let digits: Int
            do throws(UsageError) {
                digits =
                    try parsed.value("digits") { text throws(ConfigurationError) in
                        try ConfigurationValue.count(text, in: 6...8)
                    } ?? 6
            } catch {
                finish(.usage, error.description)
            }
            guard let algorithm = OneTimeCode.Algorithm(rawValue: parsed.values["algorithm"] ?? "sha1") else {
                finish(.usage, "--algorithm must be sha1, sha256 or sha512.")
            }
            if algorithm != .sha1 {
                // pam_oath's file (liboath 2.6) has SHA-1 entries only; the others are this package's.
                writeStandardError(
                    "gatekeeper-passwd: warning: a \(algorithm.rawValue) entry is read by gatekeeper's otp provider "
                        + "only; pam_oath skips it.\n")
            }
            let secret = OATHUsersFileStore.newSecret()
            try codes.add(
                user, kind: kind, digits: digits, algorithm: algorithm, secret: secret, createFile: command.create)
            let uri = Enrolment.uri(username: user, secret: secret, kind: kind, digits: digits, algorithm: algorithm)
            print("Scan this with an authenticator app, or enter the URI by hand:\n")
            for line in Enrolment.qrCode(uri) ?? [] { print(line) }
            print("\n\(uri)")
        case "otp-delete":
            try codes.delete(user)
        default:  // otp-list
            for entry in try codes.list() {
                print([entry.username, entry.type].map { TextSafety.escaped($0) }.joined(separator: "\t"))
            }
        }
    } catch {
        finish(error.isRefusal ? .invalidInput : .unavailable, error.description)
    }
    finish(.success)
}

/// Runs one change of the file; an error ends the tool (65 or 69), the file unchanged.
@MainActor
func change(_ body: () throws(UsersFileError) -> Void) {
    do throws(UsersFileError) {
        try body()
    } catch {
        finish(status(of: error), error.description)
    }
}

let user = command.user ?? ""
if command.action.hasPrefix("otp-") { oneTimeCodes(command.action, user: user) }
// A change the file cannot take (its lock cannot be made, it is refused, it is not the invoker's) is said
// before any password is asked.
if ["add", "set", "change"].contains(command.action) {
    change { () throws(UsersFileError) in try store.checkChangeable(create: command.action == "add" && command.create) }
}
switch command.action {
case "add":
    let newHash = hash(readPassword(confirm: true))
    change { () throws(UsersFileError) in
        try store.addUser(
            user, hash: newHash, groups: command.groups ?? [], displayName: command.name, createFile: command.create)
    }
case "set":
    let newHash = hash(readPassword(confirm: true))
    change { () throws(UsersFileError) in
        try store.setPassword(of: user, to: newHash, groups: command.groups, displayName: command.name)
    }
case "change":
    if command.passwordFromStdin { finish(.usage, "change asks three passwords; it takes no --password-stdin.") }
    let provider: FileAuthProvider
    do {
        provider = try FileAuthProvider(.init(path: command.file, defaultScheme: command.scheme))
    } catch {
        finish(.unavailable, error.description)
    }
    // The terminal, or standard input line by line when there is none (a script); every password
    // checked as a login's is (a NUL byte, which C would cut short, is refused).
    let conversation = CheckedConversation(
        TerminalConversation.controllingTerminal() ?? TerminalConversation(input: 0, output: 2))
    let changed = ThreadExecutor.run { () async throws(AuthError) -> PasswordChangeOutcome in
        await conversation.show("Changing password for \(TextSafety.escaped(user)).", as: .info)
        return try await provider.changePassword(of: user, conversation: conversation)
    }
    let outcome: PasswordChangeOutcome
    do throws(AuthError) {
        outcome = try changed.get()
    } catch  where error.code == .cancelled {
        finish(.cancelled, "cancelled; nothing was changed.")
    } catch {
        finish(.invalidInput, "\(error.description) Nothing was changed.")
    }
    switch outcome {
    case .changed: finish(.success, "the password of \(TextSafety.escaped(user)) was changed.")
    case .notMine: finish(.denied, "there is no user \(TextSafety.escaped(user)); nothing was changed.")
    case .unavailable(let reason): finish(.unavailable, "\(sentence(reason)) Nothing was changed.")
    default: finish(.denied, "\(outcome.error?.description ?? "refused.") Nothing was changed.")
    }
case "expire":
    change { () throws(UsersFileError) in try store.expirePassword(of: user) }
case "delete":
    change { () throws(UsersFileError) in try store.deleteUser(user) }
case "lock":
    change { () throws(UsersFileError) in try store.lockUser(user) }
case "unlock":
    change { () throws(UsersFileError) in try store.unlockUser(user) }
case "verify":
    let file: UsersFile
    do {
        file = try store.read()
    } catch {
        finish(.unavailable, error.description)
    }
    let secret = readPassword(confirm: false)
    guard let entry = file[user] else { finish(.denied, "password verification failed for \(user).") }
    // A hash whose library cannot be loaded is not checked: that is no wrong password.
    switch entry.password {
    case .hash(let hash), .expired(let hash):
        if let problem = hash.libraryProblem {
            finish(.unavailable, "\(user)'s password cannot be checked: \(problem)")
        }
    case .locked: break
    }
    switch entry.password {
    case .locked: finish(.denied, "\(user) is locked.")
    case .expired(let hash):
        guard hash.verify(secret) else { finish(.denied, "password verification failed for \(user).") }
        finish(.success, "password correct for \(user), but it has expired: the next login changes it.")
    case .hash(let hash):
        if hash.verify(secret) {
            if hash.scheme.isWeak {
                finish(
                    .success,
                    "password correct for \(user), but its \(hash.scheme.rawValue) hash is weak; set it again.")
            }
            finish(.success, "password correct for \(user).")
        }
        finish(.denied, "password verification failed for \(user).")
    }
default:  // list
    let file: UsersFile
    do {
        file = try store.read()
    } catch {
        finish(.unavailable, error.description)
    }
    for warning in file.warnings { writeStandardError("gatekeeper-passwd: warning: \(warning)\n") }
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
        print(fields.joined(separator: "\t"))
    }
}
finish(.success)

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
