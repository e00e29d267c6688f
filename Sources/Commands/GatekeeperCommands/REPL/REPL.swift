import Authentication
import GatekeeperSupport
import HostProtection
import TerminalLogin
import ToolSupport

/// The read-eval-print loop: tabs, login, logout and the rest, one command at a time.
final class REPL: Sendable {
    let gatekeeper: Gatekeeper
    let screen: Screen
    let conversation: LoginConversation
    private let selection = Locked<Tab>(.home)
    private let history = CommandHistory()
    /// Cancels the command in progress (Ctrl-C while a provider works); `nil` between commands.
    private let interruption = Locked<(@Sendable () -> Void)?>(nil)
    /// Where the last login was cancelled, when it was, and whether the stack had answered one of its
    /// attempts (`why` shows that trace as the cancelled login's, or the last one as the login before it);
    /// `nil` once a login ends otherwise.
    private let lastCancellation = Locked<(place: String, answered: Bool)?>(nil)
    /// How the stack decided the latest login or password change a stack answered (`why`), and how many
    /// traces were kept so far (a login that kept one changes the count).
    private let lastTrace = Locked<(trace: ProviderChain.Trace?, count: Int)>((nil, 0))

    /// Logins remembered for this terminal session by host tools (`gatekeeper-run`), shown by `status`:
    /// `nil` when the configuration remembers none, else the cache (`nil` while none was ever made).
    let remembered: LoginCache??

    init(gatekeeper: Gatekeeper, screen: Screen, remembered: LoginCache?? = nil) {
        self.gatekeeper = gatekeeper
        self.screen = screen
        self.conversation = LoginConversation(screen: screen)
        self.remembered = remembered
    }

    var currentTab: Tab { selection.withLock { $0 } }

    /// Reads and runs commands until `quit` or the end of the input.
    func run() async {
        while true {
            switch await screen.console.readCommand(prompt(), history: history, completer: Self.complete) {
            case .endOfInput:
                if screen.interactive { screen.say("Bye.") }
                return
            case .interrupted:
                continue  // Ctrl-C at the prompt clears the line, as in a shell.
            case .line(let line):
                guard await execute(line) else { return }
            }
        }
    }

    /// Ctrl-C outside a prompt: cancels the command in progress. Returns `false` if none was.
    func interrupt() -> Bool {
        guard let cancel = interruption.withLock({ $0 }) else { return false }
        cancel()
        return true
    }

    /// Runs one command line; returns `false` when it asks to quit.
    func execute(_ line: String) async -> Bool {
        let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let command = words.first?.lowercased() else { return true }
        let argument = words.dropFirst().first?.lowercased()
        if let tab = Tab(rawValue: command), words.count == 1 {
            await open(tab, fallback: currentTab)
            return true
        }
        switch command {
        case "open":
            guard let argument, let tab = Tab(rawValue: argument), words.count == 2 else {
                screen.error(
                    "Usage: open TAB, where TAB is one of: \(Tab.allCases.map(\.rawValue).joined(separator: ", ")).")
                return true
            }
            await open(tab, fallback: currentTab)
        case "login":
            await login()
        case "logout":
            await logout()
        case "passwd":
            await changePassword()
        case "whoami":
            screen.say(gatekeeper.identity.map { shown("\($0.username) (\($0.displayName))") } ?? "Not signed in.")
        case "why":
            let trace = lastTrace.withLock { $0.trace }.map { shown($0.description) }
            if trace == nil && !(gatekeeper.provider is ProviderChain) {
                screen.say("The provider is not a stack; start with --config FILE to stack providers.")
                break
            }
            guard let cancellation = lastCancellation.withLock({ $0 }) else {
                screen.say(trace ?? "No login yet.")
                break
            }
            if cancellation.answered, let trace {
                screen.say("The last login was cancelled \(cancellation.place), after the stack answered:\n\(trace)")
                break
            }
            screen.say("The last login was cancelled \(cancellation.place); nothing was decided.")
            screen.say(trace.map { "The login before it:\n\($0)" } ?? "No login before it.")
        case "status":
            guard words.count <= 2 else {
                screen.error("Usage: status [USER]")
                return true
            }
            status(words.dropFirst().first)
        case "tabs":
            for tab in Tab.allCases {
                let marker = tab == currentTab ? "*" : " "
                screen.say("\(marker) \(tab.rawValue.padded(to: 9))\(tab.access)")
            }
        case "help", "?":
            screen.say(Self.help)
        case "quit", "exit":
            return false
        default:
            screen.error("Unknown command '\(Self.printable(command))'. Type 'help' to see the commands.")
        }
        return true
    }

    // MARK: Commands

    /// Opens `tab`. A protected tab presents the login first; if the login is dismissed, the person goes
    /// back to `fallback` and is told so in one line.
    private func open(_ tab: Tab, fallback: Tab) async {
        guard let requirement = tab.requirement else {
            select(tab)
            screen.say(tab.content(for: gatekeeper.identity))
            return
        }
        let protected = RequiresAuthentication(requirement) { [self] reason in
            // The parent decides where to go: back to the tab the person was on.
            select(fallback)
            screen.error("\(dismissal(reason, opening: tab)) Back to \(fallback.rawValue).")
        } content: { [self] identity in
            select(tab)
            return tab.content(for: identity)
        }
        // The content cannot throw, so `try?` loses nothing.
        let access = await loggingIn { [self] in
            (try? await protected.runWithTrace(through: gatekeeper, conversation: conversation)).map(keepingTrace)
        } cancelled: { access in
            if case .dismissed(let reason)? = access { return reason == .cancelled }
            return false
        }
        if case .completed(let content) = access { screen.say(content) }
    }

    /// Changes the signed-in person's password (signing in first when nobody is); the session goes on.
    private func changePassword() async {
        let result = await loggingIn { [self] () async -> AuthError? in
            let change = keepingTrace(await gatekeeper.changePasswordWithTrace(conversation: conversation))
            if case .failure(let error) = change { return error }
            return nil
        } cancelled: {
            $0 == .cancelled
        }
        switch result {
        case nil:
            screen.say(shown("Password changed for \(gatekeeper.identity?.username ?? "you")."))
        case .cancelled?:
            screen.error("Password change cancelled; the password is unchanged.")
        case let error?:
            screen.error(error.description)
        }
    }

    private func login() async {
        let result = await loggingIn { [self] () async -> Result<Identity, AuthError> in
            keepingTrace(await gatekeeper.signInWithTrace(conversation: conversation))
        } cancelled: {
            $0 == .failure(.cancelled)
        }
        switch result {
        case .success(let identity):
            screen.say(shown("Signed in as \(identity.displayName) (\(identity.username))."))
        case .failure(.cancelled):
            screen.error("Login cancelled.")
        case .failure(let error):
            screen.error(error.description)
        }
    }

    private func logout() async {
        let wasSignedIn = gatekeeper.identity != nil
        await gatekeeper.signOut()
        screen.say(wasSignedIn ? "Signed out." : "Not signed in.")
        let tab = currentTab
        if tab.requirement != nil {
            // A protected tab cannot stay open: sign in again for it, or go home.
            screen.say("\(tab.rawValue) needs you to sign in.")
            await open(tab, fallback: .home)
        }
    }

    private func status(_ account: String?) {
        switch gatekeeper.state {
        case .signedOut:
            screen.say("Signed out. Provider: \(gatekeeper.provider.name).")
        case .authenticating:
            screen.say("Signing in. Provider: \(gatekeeper.provider.name).")
        case .signedIn(let identity, let expires):
            var line = shown("Signed in as \(identity.username) via \(identity.provider).")
            if let expires {
                line += " Session expires in \(Self.describe(ContinuousClock.now.duration(to: expires)))"
                line += " unless used (idle \(Self.describe(gatekeeper.configuration.sessions.idleTimeout))"
                line += ", at most \(Self.describe(gatekeeper.configuration.sessions.absoluteTimeout)))."
            }
            screen.say(line)
        }
        if let stack = gatekeeper.provider as? ProviderChain {
            let entries = stack.entries.enumerated().map {
                "\($0.offset + 1). \($0.element.control) \($0.element.provider.name)"
            }
            screen.say(shown("Stack: " + entries.joined(separator: " · ")))
        }
        if gatekeeper.configuration.attempts.lockout != nil {
            if let store = gatekeeper.lockout as? FaillockStore {
                screen.say(shown("Failed logins are counted in \(store.directory), with every tool's on this host."))
            } else {
                screen.say("Failed logins are counted in memory, for this session only (the demo backend).")
            }
        }
        if let account = account ?? gatekeeper.identity?.username { lockoutStatus(of: account) }
        rememberedLogin()
    }

    /// `account`'s failed logins under the lockout policy.
    private func lockoutStatus(of account: String) {
        guard let policy = gatekeeper.configuration.attempts.lockout else {
            screen.say("Lockout: off.")
            return
        }

        let name = shown(account)
        do throws(AuthError) {
            switch try gatekeeper.lockout.status(of: account, policy: policy) {
            case .open(let failures):
                screen.say("Lockout: \(name) has \(failures) of \(policy.deny) failed logins counted.")
            case .locked(let failures, let remaining):
                let until = remaining.map { "for \(Self.describe($0))" } ?? "until an administrator unlocks it"
                screen.say("Lockout: \(name) is locked after \(failures) failed logins, \(until).")
            case .unlockedByTime:
                screen.say("Lockout: \(name) was locked; the lock has expired.")
            }
        } catch {
            screen.error("Lockout: \(error.description)")
        }
    }

    /// The login a host tool remembers for this terminal session, if any.
    private func rememberedLogin() {
        guard let remembered else { return }
        guard let cache = remembered, let session = TerminalSession.current() else {
            screen.say("Remembered login: none for this terminal session.")
            return
        }
        let logins = cache.logins(in: session)
        guard !logins.isEmpty else {
            screen.say("Remembered login: none for this terminal session.")
            return
        }
        for login in logins.sorted(by: { $0.username < $1.username }) {
            screen.say(
                shown(
                    "Remembered login: \(login.username) via \(login.provider), \(Self.describe(login.age)) ago"
                        + " (forgotten in \(Self.describe(cache.timeout - login.age)))."))
        }
    }

    // MARK: Helpers

    private func select(_ tab: Tab) {
        selection.withLock { $0 = tab }
    }

    private func prompt() -> String {
        let tab = screen.styled(currentTab.rawValue, .tab)
        guard let user = gatekeeper.identity.map({ shown($0.username) }) else { return "[\(tab)]› " }
        return "[\(tab) · \(screen.styled(user, .user))]› "
    }

    /// The outcome of `answer`, its trace kept for `why` when a stack answered.
    private func keepingTrace<T>(_ answer: Traced<T>) -> T {
        if let trace = answer.trace { lastTrace.withLock { $0 = (trace, $0.count + 1) } }
        return answer.outcome
    }

    /// Runs `body`, a command that may log in, as ``interruptibly(_:)`` does, and remembers where its login
    /// was cancelled when `cancelled` says it was — or forgets an earlier cancellation when a login was
    /// made and ended otherwise. A command that asked nothing (already signed in) changes nothing.
    private func loggingIn<T: Sendable>(
        _ body: @escaping @Sendable () async -> T, cancelled: (T) -> Bool
    ) async -> T {
        conversation.progress.withLock { $0 = nil }
        let kept = lastTrace.withLock { $0.count }
        let result = await interruptibly(body)
        let place = conversation.progress.withLock { $0 }
        if cancelled(result) {
            let answered = lastTrace.withLock { $0.count } != kept
            lastCancellation.withLock { $0 = (place ?? "before its first question", answered) }
        } else if place != nil {
            lastCancellation.withLock { $0 = nil }
        }
        return result
    }

    /// Runs `body` so that Ctrl-C (SIGINT, outside a prompt) cancels it, then clears the spinner.
    private func interruptibly<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        let task = Task { await body() }
        interruption.withLock { $0 = { task.cancel() } }
        defer {
            interruption.withLock { $0 = nil }
            screen.stopSpinner()
        }
        return await task.value
    }

    private func dismissal(_ reason: AuthError, opening tab: Tab) -> String {
        switch reason.code {
        case .cancelled:
            return "Login cancelled."
        case .notAuthorized:
            let user = gatekeeper.identity.map { shown($0.username) } ?? "you"
            return "\(tab.rawValue) requires \(reason.requirement ?? "more"); \(user) is not allowed."
        case .invalidCredentials:
            return "\(reason.description) No attempts left."
        default:
            return reason.description
        }
    }

    static let commands = ["open", "login", "logout", "passwd", "whoami", "status", "why", "tabs", "help", "quit"]

    /// Tab completion: commands and tab names first, tab names after `open`.
    static let complete: @Sendable (String) -> [String] = { before in
        let words = before.split(separator: " ", omittingEmptySubsequences: true)
        let tabs = Tab.allCases.map(\.rawValue)
        let startsNewWord = before.last == " "
        if words.count > 1 || (words.count == 1 && startsNewWord) {
            return words.first == "open" ? tabs : []
        }
        return tabs + commands
    }

    static let help = """
        Commands:
          home, contact, courses, profile, admin   open a tab (or: open TAB)
          login      sign in, or switch user
          logout     sign out; on a protected tab you are asked to sign in again
          passwd     change your password (the current one, then the new one twice)
          whoami     who is signed in
          status     session state, provider and expiry; failed logins of you (or: status USER);
                     the login gatekeeper-run remembers for this terminal
          why        which provider of the stack answered what at the last login, and what decided;
                     after a cancelled login, where it was cancelled and the trace of the one before
          tabs       the tabs and what each needs
          help       this list
          quit       leave (Ctrl-D does too)
        At a login prompt, Ctrl-C, Ctrl-D or an empty user name cancels; so does Ctrl-C while checking.
        """

    /// A word as typed, safe to print: control characters become '?', and long words are cut.
    static func printable(_ word: String) -> String {
        let cleaned = String(
            String.UnicodeScalarView(
                word.unicodeScalars.map { scalar in
                    scalar.properties.generalCategory == .control || scalar == "\u{FFFD}" ? "?" : scalar
                }
            )
        )
        // Cut by Unicode scalars: one letter under a thousand accents is one `Character`.
        return cleaned.unicodeScalars.count > 32 ? String(cleaned.unicodeScalars.prefix(32)) + "…" : cleaned
    }

    static func describe(_ duration: Duration?) -> String {
        guard let duration else { return "never" }
        let total = max(duration.components.seconds, 0)
        let (hours, minutes, seconds) = (total / 3600, total % 3600 / 60, total % 60)
        if hours > 0 { return minutes > 0 ? "\(hours)h \(minutes)m" : "\(hours)h" }
        if minutes > 0 { return seconds > 0 ? "\(minutes)m \(seconds)s" : "\(minutes)m" }
        return "\(seconds)s"
    }
}
