import Authentication
import GatekeeperSupport

/// A login's conversation with the person at the calling program, through `pam_gatekeeper.so`: every
/// question and message goes to the module, which asks them through the program's own PAM conversation.
///
/// The user name is the one the program gave (`PAM_USER`), never asked again. With `use_first_pass` or
/// `try_first_pass`, the first hidden question is answered with the password another module took
/// (`PAM_AUTHTOK`) without asking; with `use_first_pass`, no hidden question is ever put to the person.
/// Text from a backend is escaped before it leaves (the program shows it as it is).
struct DaemonConversation: Conversation {
    let connection: DaemonConnection
    let username: String
    /// `PAM_AUTHTOK`, for the first hidden question.
    private let firstPassword: Locked<Secret?>
    /// Whether hidden questions may be asked (not with `use_first_pass`).
    private let asksPasswords: Bool
    /// Set when a hidden question was refused because `use_first_pass` forbids asking it.
    let refusedToAsk = Locked(false)
    /// sshd (`PAM_TTY` is `ssh` while it authenticates) relays a message only with the next question.
    let messagesWaitForAQuestion: Bool

    init(connection: DaemonConnection, request: DaemonRequest) {
        self.connection = connection
        username = request.user
        let usesItem = !request.flags.isDisjoint(with: [.useFirstPass, .tryFirstPass])
        firstPassword = Locked(usesItem ? request.authenticationToken : nil)
        asksPasswords = !request.flags.contains(.useFirstPass)
        messagesWaitForAQuestion = request.terminal == "ssh"
    }

    func askUsername(_ prompt: String) async throws(AuthError) -> String { username }

    func ask(_ prompt: String) async throws(AuthError) -> String {
        let answer = try await connection.ask(TextSafety.escaped(prompt), hidden: false)
        return answer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    func askSecret(_ prompt: String) async throws(AuthError) -> Secret {
        if let password = firstPassword.withLock({ $0.take() }) { return password }
        guard asksPasswords else {
            refusedToAsk.withLock { $0 = true }
            throw .cancelled
        }
        return try await connection.ask(TextSafety.escaped(prompt), hidden: true)
    }

    func show(_ message: String, as kind: MessageKind) async {
        connection.send(.message(TextSafety.escaped(message, keepingLineBreaks: true), isError: kind == .error))
    }
}
