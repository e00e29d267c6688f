import Foundation
import TestSupport

/// Debian's sshd, run by the test in the foreground on a free loopback port with a host key of its own:
/// keyboard-interactive only, `UsePAM yes`. sshd names its PAM service after the name it was run as, so it
/// runs as a link named after the test's service, whose every phase is pam_gatekeeper.so: the host's
/// /etc/pam.d/sshd is never read. Stopped when the fixture goes.
final class SSHServer {
    let scratch = ScratchDirectory("gatekeeper-sshd")
    let port: Int
    private let process: Spawned

    /// - Parameters:
    ///   - service: The PAM service, which sshd's link is named after.
    ///   - settings: More sshd_config lines.
    init(service: String, settings: String = "") throws {
        let directory = scratch.path
        let sshd = directory + "/" + service
        guard symlink("/usr/sbin/sshd", sshd) == 0 else { throw DaemonFixtureError("symlink: errno \(errno)") }
        let key = try shell("ssh-keygen -q -t ed25519 -N '' -f \(directory)/host_key 2>&1")
        guard key.status == 0 else { throw DaemonFixtureError("ssh-keygen: \(key.output)") }
        mkdir("/run/sshd", 0o755)  // sshd's privilege separation directory, as Debian's unit makes it.
        port = try Self.freePort()
        let configuration = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(directory)/host_key
            PidFile none
            UsePAM yes
            KbdInteractiveAuthentication yes
            PasswordAuthentication no
            PubkeyAuthentication no
            AuthenticationMethods keyboard-interactive
            PermitRootLogin no
            UseDNS no
            LogLevel VERBOSE
            \(settings)

            """
        try configuration.write(toFile: directory + "/sshd_config", atomically: false, encoding: .utf8)
        process = try Spawned(URL(fileURLWithPath: sshd), ["-D", "-e", "-f", directory + "/sshd_config"])
        try process.waitForStderr(containing: "Server listening on 127.0.0.1 port \(port)")
    }

    /// A loopback port no one listens on now.
    static func freePort() throws -> Int {
        let found = try shell(
            "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'")
        guard found.status == 0, let port = Int(found.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw DaemonFixtureError("no free port: \(found.output)")
        }
        return port
    }

    /// `ssh USER@127.0.0.1 id -un` on a terminal of its own, as a person types it: keyboard-interactive, one
    /// round of questions (`NumberOfPasswordPrompts=1`), no keys, no host key checks.
    func login(_ user: String, command: String = "id -un") throws -> TerminalSession {
        try TerminalSession(
            URL(fileURLWithPath: "/usr/bin/ssh"),
            [
                "-F", "/dev/null", "-p", "\(port)", "-o", "StrictHostKeyChecking=no", "-o",
                "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "PreferredAuthentications=keyboard-interactive", "-o",
                "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=10",
                "\(user)@127.0.0.1", command,
            ])
    }

    /// What sshd logged.
    var log: String { process.stderr }

    deinit {
        process.send(SIGTERM)
        _ = process.finish(timeout: .seconds(10))
    }
}
