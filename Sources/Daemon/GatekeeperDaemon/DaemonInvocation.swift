import ProviderPlugins
public import ToolSupport

/// What gatekeeperd's command line asks for.
public struct DaemonInvocation: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case help
        /// Read every service file, say what is wrong or how many stacks there are, and exit.
        case check
        /// Serve logins until SIGTERM.
        case serve
    }

    public var action: Action = .serve
    /// Listen on ``socketPath`` without systemd's socket (`--foreground`).
    public var foreground = false
    public var socketPath = "/run/gatekeeper/socket"
    public var configurationDirectory = "/etc/gatekeeper/pam.d"
    /// Where failures are counted for files that do not say (`--state-dir`).
    public var stateDirectory: String?
    /// Logins in flight at once, in all and for one non-root user.
    public var maxLogins = 256
    public var maxLoginsPerUser = 16
    /// Logins a minute for one user other than root, or one origin of root's programs.
    public var maxLoginRate = 120
    /// How long a question waits for its answer.
    public var answerTimeout: Duration = .seconds(300)
    /// How long a client has, once connected, to send its whole request.
    public var requestTimeout: Duration = .seconds(10)

    public init() {}

    public static let usage = """
        usage: gatekeeperd [--foreground] [--socket PATH] [--config-dir DIR] [--state-dir DIR]
                           [--max-logins N] [--max-logins-per-user N] [--max-login-rate N]
                           [--answer-timeout DURATION] [--request-timeout DURATION]
               gatekeeperd --check [--config-dir DIR] [--state-dir DIR]

        Serves the logins of pam_gatekeeper.so: every PAM program (sudo, su, sshd) that names the module
        signs people in through the stack of /etc/gatekeeper/pam.d/SERVICE, or of its file "default".

          --foreground        listen on the socket itself (without systemd's socket activation)
          --socket PATH       the socket (/run/gatekeeper/socket)
          --config-dir DIR    the service files (/etc/gatekeeper/pam.d)
          --state-dir DIR     count failures in DIR/faillock where a file does not say (/var/lib/gatekeeper)
          --max-logins N      logins in flight at once, in all (256); more are refused at once
          --max-logins-per-user N   for one user other than root (16)
          --max-login-rate N  logins a minute one user other than root may start, or root's programs
                              for one remote host or requesting user (120: a burst of 120, then one
                              each half second); more are refused, so no one user's logins fill the audit log
          --answer-timeout DURATION a question unanswered this long ends its login (5m)
          --request-timeout DURATION a client that has not sent its whole request this long after it
                              connected is cut off (10s)
          --check             read every service file, say what is wrong, and exit

        SIGHUP reads the service files again (a set with a bad file is refused, and the one in use kept);
        SIGTERM refuses every login in flight and exits.
        """

    /// - Throws: ``UsageError`` saying what is wrong.
    public static func parse(_ arguments: some Sequence<String>) throws(UsageError) -> DaemonInvocation {
        let parsed = try CommandLineSyntax(
            flags: ["-h", "--help", "--foreground", "--check"],
            valueOptions: [
                "socket", "config-dir", "state-dir", "max-logins", "max-logins-per-user", "max-login-rate",
                "answer-timeout", "request-timeout",
            ]
        ).parse(arguments)
        guard parsed.positionals.isEmpty, parsed.trailing.isEmpty else {
            throw UsageError(.badArgument, "gatekeeperd takes no arguments, only options.")
        }
        var invocation = DaemonInvocation()
        if parsed.has("-h", "--help") {
            invocation.action = .help
            return invocation
        }
        if parsed.has("--check") { invocation.action = .check }
        invocation.foreground = parsed.has("--foreground")
        invocation.socketPath = try parsed.value("socket", ConfigurationValue.absolutePath) ?? invocation.socketPath
        invocation.configurationDirectory =
            try parsed.value("config-dir", ConfigurationValue.absolutePath) ?? invocation.configurationDirectory
        invocation.stateDirectory = try parsed.value("state-dir", ConfigurationValue.absolutePath)
        invocation.maxLogins =
            try parsed.value("max-logins") { text throws(ConfigurationError) in
                try ConfigurationValue.count(text, in: 1...4096)
            } ?? invocation.maxLogins
        invocation.maxLoginsPerUser =
            try parsed.value("max-logins-per-user") { text throws(ConfigurationError) in
                try ConfigurationValue.count(text, in: 1...4096)
            } ?? invocation.maxLoginsPerUser
        invocation.maxLoginRate =
            try parsed.value("max-login-rate") { text throws(ConfigurationError) in
                try ConfigurationValue.count(text, in: 1...100_000)
            } ?? invocation.maxLoginRate
        invocation.answerTimeout =
            try parsed.value("answer-timeout") { text throws(ConfigurationError) in
                try ConfigurationValue.duration(text, in: .seconds(1)...(.seconds(3600)))
            } ?? invocation.answerTimeout
        invocation.requestTimeout =
            try parsed.value("request-timeout") { text throws(ConfigurationError) in
                try ConfigurationValue.duration(text, in: .milliseconds(100)...(.seconds(60)))
            } ?? invocation.requestTimeout
        return invocation
    }
}
