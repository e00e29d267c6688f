import Authentication
import Foundation
import GatekeeperDaemon
import GatekeeperSupport
import TestSupport

/// A gatekeeperd of the test's own: a users-file stack (with its lockout and a JSON audit log) in a private
/// directory, served in the foreground on a socket there, and stopped — killed if it must be — when the
/// fixture goes.
final class DaemonFixture {
    let scratch = ScratchDirectory("gatekeeperd")
    var directory: String { scratch.path }
    var socket: String { directory + "/socket" }
    var users: String { directory + "/users" }
    var audit: String { directory + "/audit.jsonl" }
    var stateDirectory: String { directory + "/state" }
    var services: String { directory + "/pam.d" }
    /// The account the test signs in as: the test's own, so that the daemon, which lets a caller other than
    /// root check only its own account, serves it whoever runs the tests.
    let account: String
    let password = "Correct-Horse-\(UInt32.random(in: 1000...9999))"
    private(set) var daemon: Spawned?
    let arguments: [String]
    /// A command the daemon is started through (`unshare -m sh -c …`), given the daemon and its arguments.
    let launcher: [String]

    /// - Parameters:
    ///   - settings: Setting lines for the default stack's file, before its entry.
    ///   - arguments: More of gatekeeperd's options.
    ///   - launcher: A command the daemon is started through, given the daemon and its arguments.
    init(
        settings: String = "lockout deny=1000", arguments: [String] = [], launcher: [String] = [], start: Bool = true
    ) throws {
        account = SystemAccounts.name(of: getuid()) ?? "root"
        self.arguments = arguments
        self.launcher = launcher
        chmod(directory, 0o755)
        mkdir(services, 0o755)
        let added = try run(
            builtExecutable("gatekeeper-passwd"), ["add", users, account, "--create", "--password-stdin"],
            input: password + "\n")
        guard added.status == 0 else { throw DaemonFixtureError("gatekeeper-passwd add: \(added.stderr)") }
        try writeService("default", settings: settings)
        if start { try self.start() }
    }

    /// Writes the service file `name`: `settings`, the audit log, then the users file as the one entry.
    func writeService(_ name: String, settings: String = "lockout deny=1000", entry: String? = nil) throws {
        let text = "\(settings)\naudit json path=\(audit)\n\(entry ?? "required file users=\(users)")\n"
        let path = services + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
    }

    /// Starts the daemon and waits until it serves.
    func start() throws {
        let daemonArguments =
            ["--foreground", "--socket", socket, "--config-dir", services]
            + [("--state-dir", stateDirectory), ("--request-timeout", "1s")].flatMap { option, value in
                // A test's own choice of an option replaces the fixture's.
                arguments.contains(option) ? [] : [option, value]
            } + arguments
        let daemon =
            try launcher.first.map {
                try Spawned(
                    URL(fileURLWithPath: $0),
                    Array(launcher.dropFirst()) + [builtExecutable("gatekeeperd").path] + daemonArguments)
            } ?? Spawned(builtExecutable("gatekeeperd"), daemonArguments)
        self.daemon = daemon
        try daemon.waitForStderr(containing: "serving")
    }

    /// Stops the daemon with `signal` and answers how it ended.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) -> RunResult? {
        guard let daemon else { return nil }
        daemon.send(signal)
        self.daemon = nil
        return daemon.finish(timeout: .seconds(20))
    }

    /// The audit log's records, one line each.
    var auditRecords: [String] {
        ((try? String(contentsOfFile: audit, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The failures counted against `account`, as pam_faillock's `faillock` tool reads the daemon's files.
    func failures(of account: String) throws -> Int {
        let listed = try shell("faillock --dir \(stateDirectory)/faillock --user \(account)")
        return listed.output.split(separator: "\n").filter { $0.hasSuffix(" V") || $0.hasSuffix(" I") }.count
    }

    /// The failures counted against names no backend's look-up knows (a device login's, a directory's that
    /// cannot tell), all of them: pam_faillock's files in the lockout's `.unknown` directory.
    func unknownNameFailures() throws -> Int {
        let listed = try shell("faillock --dir \(stateDirectory)/faillock.unknown")
        return listed.output.split(separator: "\n").filter { $0.hasSuffix(" V") || $0.hasSuffix(" I") }.count
    }

    deinit {
        stop(SIGKILL)
    }
}

struct DaemonFixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The module's side of the socket, spoken by the test: frames written and read with the daemon's own
/// ``DaemonMessage``, or raw bytes where a test breaks the protocol on purpose.
final class DaemonClient {
    let descriptor: Int32

    init(_ path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw DaemonFixtureError("cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// A client whose login waits at its first question: `request` sent, the question read.
    static func atQuestion(_ path: String, _ request: DaemonRequest) throws -> DaemonClient {
        let client = try DaemonClient(path)
        client.send(.request(request))
        guard case .question = try client.receive() else { throw DaemonFixtureError("no question came") }
        return client
    }

    func send(_ message: DaemonMessage) { sendRaw(message.frame()) }

    func sendRaw(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The next message other than a keepalive; `nil` when the daemon closed the connection. Throws when
    /// nothing comes within `timeout`, or what comes is no message.
    func receive(timeout: Duration = .seconds(20)) throws -> DaemonMessage? {
        while true {
            guard let header = try read(4, timeout: timeout) else { return nil }
            let length = try DaemonMessage.frameLength(header)
            guard let payload = try read(length, timeout: timeout) else { return nil }
            let message = try DaemonMessage.parse(payload)
            if message != .keepalive { return message }
        }
    }

    /// Whether the daemon closes the connection within `timeout`, sending nothing more.
    func isClosed(within timeout: Duration) -> Bool {
        (try? read(1, timeout: timeout)) == .some(nil)
    }

    private func read(_ count: Int, timeout: Duration) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while bytes.count < count {
            let left = ContinuousClock.now.duration(to: deadline)
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard left > .zero, poll(&poller, 1, Int32(left.components.seconds * 1000 + 1)) > 0 else {
                throw DaemonFixtureError("nothing from the daemon within \(timeout)")
            }
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let got = recv(descriptor, &buffer, buffer.count, 0)
            if got <= 0 { return nil }
            bytes += buffer[..<got]
        }
        return bytes
    }

    /// Sends `request`, answers each hidden question with `password` (and each visible one with `code`),
    /// and answers the result with every question and message seen before it.
    func converse(_ request: DaemonRequest, password: String?, code: String? = nil) throws
        -> (result: PAMResult?, seen: [DaemonMessage])
    {
        send(.request(request))
        var seen: [DaemonMessage] = []
        while let message = try receive() {
            seen.append(message)
            switch message {
            case .question(_, hidden: true):
                guard let password else { return (nil, seen) }
                send(.answer(Secret(copying: Array(password.utf8))))
            case .question(_, hidden: false):
                guard let code else { return (nil, seen) }
                send(.answer(Secret(copying: Array(code.utf8))))
            case .result(let result, _):
                return (result, seen)
            default:
                continue
            }
        }
        return (nil, seen)
    }
}
