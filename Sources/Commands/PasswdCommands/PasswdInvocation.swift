import Authentication
import FileProvider
import GatekeeperSupport
public import OTPProvider
public import PasswordHashing
import ProviderPlugins
import TerminalLogin
public import ToolSupport

/// What gatekeeper-passwd does: the one table of its actions.
public enum PasswdAction: String, CaseIterable, Sendable {
    /// A new user (`--create` makes the file).
    case add
    /// A user's new password, as an administrator sets it.
    case set
    /// The user's own change: the current password, then the new one twice, checked by libpwquality.
    case change
    /// Marks the password expired: the next login changes it.
    case expire
    case delete
    case lock
    case unlock
    /// Says whether a password is the user's.
    case verify
    case list
    /// A new one-time code secret in pam_oath's users file, with its URI and QR code.
    case otpAdd = "otp-add"
    case otpDelete = "otp-delete"
    case otpList = "otp-list"

    /// Whether a USER follows the FILE.
    var takesUser: Bool { self != .list && self != .otpList }
    /// Whether the file is pam_oath's users file, not an htpasswd one.
    var onOneTimeCodes: Bool { rawValue.hasPrefix("otp-") }
    /// Whether a password is asked for the change, so the file must be changeable before it is.
    var asksBeforeChanging: Bool { self == .add || self == .set || self == .change }

    /// The users file's actions, as the usage lists them.
    static var usersFileActions: String {
        allCases.filter { !$0.onOneTimeCodes }.map(\.rawValue).joined(separator: "|")
    }
}

/// What gatekeeper-passwd's command line asks for: one action on one file, for one user, with its options.
public struct PasswdInvocation: Sendable {
    public var action: PasswdAction
    public var file: String
    /// The user, validated; `nil` for the list actions.
    public var user: String?
    public var scheme = PasswordHash.Scheme.yescrypt
    public var groups: [String]?
    public var name: String?
    public var passwordFromStdin = false
    public var create = false
    /// otp-add's entry: time- or counter-based, its digits and its algorithm.
    public var codeKind: OATHUsersFileStore.Kind = .totp(step: 30)
    public var digits = 6
    public var algorithm = OneTimeCode.Algorithm.sha1

    init(_ action: PasswdAction, file: String) {
        self.action = action
        self.file = file
    }

    public static let usage = """
        usage: gatekeeper-passwd \(PasswdAction.usersFileActions) FILE [USER]
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

    /// Reads the arguments (without the program's name); `nil` means help was asked for. A refusal is the
    /// status and message the tool ends with.
    public static func parse(_ arguments: ArraySlice<String>) throws(ToolExit) -> PasswdInvocation? {
        let parsed: ParsedCommandLine
        do {
            parsed = try CommandLineSyntax(
                flags: ["-h", "--help", "--password-stdin", "--create", "--totp", "--hotp"],
                valueOptions: ["scheme", "groups", "name", "digits", "algorithm"]
            ).parse(arguments)
        } catch {
            throw ToolExit(.usage, "\(error)\n\(usage)")
        }
        if parsed.has("-h", "--help") { return nil }
        var scheme = PasswordHash.Scheme.yescrypt
        if let value = parsed.values["scheme"] {
            guard let chosen = PasswordHash.Scheme(rawValue: value), PasswordHash.Scheme.writable.contains(chosen)
            else {
                throw ToolExit(.usage, "--scheme must be one of: yescrypt, bcrypt, sha512.")
            }
            scheme = chosen
        }
        var groups: [String]?
        if let value = parsed.values["groups"] {
            // Split as bytes, as the file is read: "," is ASCII. An empty value clears the groups.
            let names =
                value.isEmpty
                ? []
                : value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
                    .map { String(decoding: $0, as: UTF8.self) }
            do {
                for group in names { try UsersFile.validateGroup(group) }
            } catch {
                throw ToolExit(.invalidInput, "--groups: \(error). Give names separated by commas.")
            }
            groups = names
        }
        if let value = parsed.values["name"] {
            do {
                try UsersFile.validateDisplayName(value)
            } catch {
                throw ToolExit(.invalidInput, "--name: \(error).")
            }
        }
        let positional = parsed.positionals + parsed.trailing
        guard let word = positional.first, let action = PasswdAction(rawValue: word) else {
            throw ToolExit(.usage, usage)
        }
        guard positional.count >= 2 else { throw ToolExit(.usage, "\(word) needs a FILE.\n\(usage)") }
        var invocation = PasswdInvocation(action, file: positional[1])
        invocation.scheme = scheme
        invocation.groups = groups
        invocation.name = parsed.values["name"]
        invocation.passwordFromStdin = parsed.has("--password-stdin")
        invocation.create = parsed.has("--create")
        guard action.takesUser else {
            guard positional.count == 2 else { throw ToolExit(.usage, "list takes no USER.") }
            return invocation
        }
        guard positional.count == 3 else { throw ToolExit(.usage, "\(word) needs a FILE and a USER.") }
        do throws(AuthError) {
            invocation.user = try Username.validate(positional[2])
        } catch {
            throw ToolExit(.invalidInput, error.description)
        }
        if action == .otpAdd { try invocation.readCodeOptions(parsed) }
        return invocation
    }

    /// otp-add's options: the kind of code, its digits, its algorithm.
    private mutating func readCodeOptions(_ parsed: ParsedCommandLine) throws(ToolExit) {
        do throws(OATHFileError) {
            try OATHUsersFileStore.validateName(user ?? "")
        } catch {
            throw ToolExit(.invalidInput, "\(error.description); nothing was changed.")
        }
        if parsed.has("--totp") && parsed.has("--hotp") { throw ToolExit(.usage, "give --totp or --hotp, not both.") }
        codeKind = parsed.has("--hotp") ? .hotp : .totp(step: 30)
        do throws(UsageError) {
            digits =
                try parsed.value("digits") { text throws(ConfigurationError) in
                    try ConfigurationValue.count(text, in: 6...8)
                } ?? 6
        } catch {
            throw ToolExit(.usage, error.description)
        }
        guard let chosen = OneTimeCode.Algorithm(rawValue: parsed.values["algorithm"] ?? "sha1") else {
            throw ToolExit(.usage, "--algorithm must be sha1, sha256 or sha512.")
        }
        algorithm = chosen
    }
}
