import Authentication
import Foundation
import GatekeeperDaemon
import GatekeeperSupport
import TestSupport
import Testing

/// Where pam_gatekeeper.so meets the rest of the host: the host's own /etc/pam.d (Debian's files, with the
/// packaged pam-auth-update profile enabled by pam-auth-update, or docs/pam-module.md's per-service line), in
/// a mount namespace of the test's own (Tests/Fixtures/debian-host.sh); the answers an admin's control line
/// reads as "fall through"; sshd's names the host does not know; the caller's share counted across its
/// subordinate uids.
@Suite(
    .serialized,
    .timeLimit(.minutes(6)),
    .enabled(
        if: getuid() == 0, "needs root for /etc/pam.d, mount namespaces and throwaway accounts; run as root (CI does)")
)
struct HostSeamTests {
    typealias Host = PAMModuleTests.Host

    /// The control line docs/pam-module.md gives for a service of its own (and the profile's, but for `end`).
    static let line = "auth [success=done ignore=ignore user_unknown=ignore authinfo_unavail=ignore default=die]"

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/debian-host.sh").standardized.path

    /// `command` on a terminal, under the host's PAM files set up as `mode` says (debian-host.sh), with the
    /// daemon of `host` at /run/gatekeeper/socket.
    static func onHost(_ host: Host, mode: String, scratch: ScratchDirectory, _ command: [String]) throws
        -> TerminalSession
    {
        try TerminalSession(
            URL(fileURLWithPath: "/usr/bin/unshare"),
            [
                "-m", "--propagation", "private", "/bin/sh", script, scratch.path, host.module, host.fixture.directory,
                mode, "--",
            ]
                + command)
    }

    /// `su -c 'id -un' USER` as nobody (su then asks for the target's password).
    static func su(_ user: String, login: Bool = false) -> [String] {
        ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/bin/su"] + (login ? ["-l"] : [])
            + ["-c", "id -un", user]
    }

    /// Gives `user` a unix password of its own (pam_unix's, in /etc/shadow; the account is removed with the
    /// host), other than the stack's, and answers it.
    static func giveUnixPassword(_ user: String) throws -> String {
        let password = "Unix-Only-\(UInt32.random(in: 1000...9999))"
        let set = try shell("chpasswd", input: "\(user):\(password)\n")
        guard set.status == 0 else { throw DaemonFixtureError("chpasswd: \(set.output)") }
        return password
    }

    /// The daemon of `host` serves stacks for `services` only (the users file, each), and no `default`.
    static func serveOnly(_ host: Host, _ services: [String]) throws {
        try FileManager.default.removeItem(atPath: host.fixture.services + "/default")
        for service in services { try host.fixture.writeService(service) }
        host.fixture.daemon?.send(SIGHUP)
        try host.fixture.daemon?.waitForStderr(containing: "read \(services.count) service files again")
    }

    /// The packaged profile, enabled by pam-auth-update over Debian's own common-auth: a stack for su of a
    /// users file and a one-time code refuses the account's unix password with a wrong code — pam_unix,
    /// after the module in common-auth, never judges a login the stack refused (`default=die`) — and admits
    /// the stack's own password and code.
    @Test func theProfileNeverLetsARefusalReachPamUnix() throws {
        let host = try Host.withOneTimeCodes()
        let unixPassword = try Self.giveUnixPassword(host.user)
        // (A right code would be spent by the refused login: one-time codes are never taken twice.)
        for (password, code) in [(unixPassword, "000000"), (unixPassword, "999999")] {
            let scratch = ScratchDirectory("gatekeeper-host")
            let su = try Self.onHost(host, mode: "profile", scratch: scratch, Self.su(host.user))
            try su.waitFor("assword")
            su.type(password + "\r")
            try su.waitFor("Verification code")
            su.type(code + "\r")
            // Refused there and then: su says so and ends, and nothing after the module asks for a password again.
            #expect(su.finish(timeout: .seconds(20)) == 1, "\(su.output)")
            #expect(su.output.contains("Authentication failure"), "\(su.output)")
            #expect(su.output.components(separatedBy: "assword").count == 2, "\(su.output)")
            #expect(!su.output.contains("\n\(host.user)"), "\(su.output)")
        }
        let scratch = ScratchDirectory("gatekeeper-host")
        let admitted = try Self.onHost(host, mode: "profile", scratch: scratch, Self.su(host.user))
        try admitted.waitFor("assword")
        admitted.type(host.fixture.password + "\r")
        try admitted.waitFor("Verification code")
        admitted.type(try Host.currentCode() + "\r")
        #expect(admitted.finish() == 0, "\(admitted.output)")
        #expect(admitted.output.contains("\n\(host.user)"), "\(admitted.output)")
    }

    /// A service without a stack keeps the host's own login under the profile: the module answers `ignore`,
    /// and pam_unix asks for and takes the unix password.
    @Test func theProfileLeavesServicesWithoutAStackToPamUnix() throws {
        let host = try Host()
        try Self.serveOnly(host, ["sshd"])
        let unixPassword = try Self.giveUnixPassword(host.user)
        let scratch = ScratchDirectory("gatekeeper-host")
        let su = try Self.onHost(host, mode: "profile", scratch: scratch, Self.su(host.user))
        try su.waitFor("assword")
        su.type(unixPassword + "\r")
        #expect(su.finish() == 0, "\(su.output)")
        #expect(su.output.contains("\n\(host.user)"), "\(su.output)")
    }

    /// docs/pam-module.md's per-service recipe on Debian's own files: `sudo -i` (service sudo-i, which includes
    /// common-auth, not sudo) and `su -l` (su-l, which includes su) are served by the sudo and su stacks — the
    /// unix password is refused, the stack's admitted — and nothing answers "Permission denied" unasked.
    @Test func sudoDashIAndSuDashLTakeTheirProgramsStacks() throws {
        let host = try Host()
        try Self.serveOnly(host, ["sudo", "su"])
        let unixPassword = try Self.giveUnixPassword(host.user)
        try "Defaults:\(host.user) !lecture\n\(host.user) ALL=(ALL) ALL\n".write(
            toFile: host.sudoers, atomically: false, encoding: .utf8)
        chmod(host.sudoers, 0o440)
        let sudoI = [
            "/usr/bin/setpriv", "--reuid=\(host.user)", "--regid=\(host.user)", "--init-groups", "/usr/bin/sudo", "-k",
            "-i", "/usr/bin/id", "-un",
        ]
        for (command, admitted) in [(sudoI, "root"), (Self.su(host.user, login: true), host.user)] {
            let scratch = ScratchDirectory("gatekeeper-host")
            let refused = try Self.onHost(host, mode: "recipe", scratch: scratch, command)
            try refused.waitFor("assword")
            refused.type(unixPassword + "\r")
            // sudo asks again after a refusal, su ends: either way the unix password never ran the command.
            _ = try? refused.waitFor("assword", after: refused.output.count, timeout: .seconds(8))
            refused.type("\u{3}")
            #expect(refused.finish() != 0, "\(refused.output)")
            #expect(!refused.output.contains("\n\(admitted)"), "\(refused.output)")
            let again = ScratchDirectory("gatekeeper-host")
            let right = try Self.onHost(host, mode: "recipe", scratch: again, command)
            try right.waitFor("assword")
            right.type(host.fixture.password + "\r")
            #expect(right.finish() == 0, "\(right.output)")
            #expect(right.output.contains("\n\(admitted)"), "\(right.output)")
        }
    }

    /// A user who holds their share of the daemon's connections makes their next login be refused, not read as
    /// "gatekeeperd absent": under the documented line, it never falls to the next module (here pam_permit,
    /// which would admit anything).
    @Test func aBusyDaemonIsARefusalNotAnAbsence() throws {
        let host = try Host(arguments: ["--max-logins-per-user", "2", "--request-timeout", "30s"])
        try host.writeService(
            auth: "\(Self.line) \(host.module) socket=\(host.fixture.socket)\nauth required pam_permit.so")
        let flooding = try Self.flood(host, as: host.user, connections: 2)
        defer { Self.stop(flooding) }
        let login = try host.pamtester("\(host.user) authenticate", input: "wrong\n", as: host.user)
        #expect(login.status != 0, "\(login.output)")
        #expect(login.output.contains("too many logins"), "\(login.output)")
    }

    /// Subordinate uids (/etc/subuid, handed out for user namespaces) count against the user they were handed
    /// to: processes running as two of a user's subordinate uids share that user's one share.
    @Test func subordinateUIDsShareTheirOwnersShare() throws {
        let scratch = ScratchDirectory("gatekeeper-subuid")
        let subuid = scratch.path + "/subuid"
        try "".write(toFile: subuid, atomically: false, encoding: .utf8)
        // The daemon reads a subuid file of the test's own, bound over /etc/subuid in its mount namespace.
        let host = try Host(
            arguments: ["--max-logins-per-user", "3", "--request-timeout", "30s"],
            launcher: [
                "/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                "mount --bind \(subuid) /etc/subuid && exec \"$@\"", "sh",
            ])
        // Written in place (the bound file stays the same): the daemon reads it again when it changes.
        try "other:100000:65536\n\(host.user):300000:65536\n".write(toFile: subuid, atomically: false, encoding: .utf8)
        let first = try Self.flood(host, as: "300001", connections: 2)
        defer { Self.stop(first) }
        let second = try Self.flood(host, as: "365535", connections: 2)
        defer { Self.stop(second) }
        #expect(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(first.stdout)")
        #expect(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(second.stdout)")
        // A uid past the range is its own.
        let outside = try Self.flood(host, as: "365536", connections: 2)
        defer { Self.stop(outside) }
        #expect(outside.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(outside.stdout)")
    }

    /// sshd runs PAM for a name the host does not know, with its own stand-in password for whatever is typed:
    /// a users file's account of that name is never counted against (nobody can lock it over ssh, nor can its
    /// owner lock themself out by trying), as pam_faillock counts nothing for such a name.
    @Test func sshdsStandInPasswordCountsAgainstNoAccount() throws {
        let host = try Host(settings: "lockout deny=2 unlock=10m")
        let ghost = "gkghost\(UInt32.random(in: 100_000...999_999))"
        let added = try run(
            builtExecutable("gatekeeper-passwd"), ["add", host.fixture.users, ghost, "--password-stdin"],
            input: host.fixture.password + "\n")
        #expect(added.status == 0, "\(added.stderr)")
        let server = try SSHServer(service: host.service)
        for password in ["wrong", "wrong again", "still wrong", host.fixture.password] {
            let session = try server.login(ghost)
            try session.waitFor("assword")
            session.type(password + "\r")
            #expect(session.finish() != 0, "\(session.output)")
        }
        #expect(server.log.contains("Invalid user \(ghost)"), "\(server.log)")
        #expect(try host.fixture.failures(of: ghost) == 0)
        #expect(try host.fixture.unknownNameFailures() == 0)
        // The account, once the host knows it, signs in: nothing was counted against it.
        let known = try DaemonClient(host.fixture.socket).converse(
            DaemonRequest(.authenticate, service: host.service, user: ghost), password: host.fixture.password)
        #expect(known.result == .success)
    }

    /// A daemon that is there but only keeps the connection alive never holds the program past `timeout=`:
    /// keepalives renew nothing, and the end is a refusal (never `authinfo_unavail`, which the documented line
    /// would let fall through to the next module — here pam_permit).
    @Test func keepalivesDoNotHoldALoginPastItsTimeout() throws {
        let host = try Host()
        let (server, socket) = try Self.fakeDaemon(host, as: "root")
        defer { Self.stop(server) }
        try host.writeService(
            auth: "\(Self.line) \(host.module) socket=\(socket) timeout=2\nauth required pam_permit.so")
        let login = try Spawned(
            URL(fileURLWithPath: "/usr/bin/pamtester"), [host.service, host.user, "authenticate"],
            mergingStandardError: true)
        let ended = login.finish(timeout: .seconds(60))
        #expect(ended.status > 0, "\(ended.stdout)")
        #expect(ended.stdout.contains("did not answer in time"), "\(ended.stdout)")
    }

    /// A socket served by a user other than root is no daemon of the host's: said so (not "not running"), and
    /// refused rather than let fall through.
    @Test func aSocketOfAnotherUserIsRefused() throws {
        let host = try Host()
        let (server, socket) = try Self.fakeDaemon(host, as: "nobody")
        defer { Self.stop(server) }
        try host.writeService(auth: "\(Self.line) \(host.module) socket=\(socket)\nauth required pam_permit.so")
        let login = try host.pamtester("\(host.user) authenticate", input: "anything\n")
        #expect(login.status != 0, "\(login.output)")
        #expect(login.output.contains("another user"), "\(login.output)")
        #expect(!login.output.contains("not running"), "\(login.output)")
    }

    /// A stand-in daemon run as `user` on a socket of its own directory: it reads each request and then only
    /// sends keepalives. Answers the process and the socket's path.
    static func fakeDaemon(_ host: Host, as user: String) throws -> (Spawned, String) {
        let directory = host.fixture.directory + "/fake"
        mkdir(directory, 0o755)
        _ = try shell("chown \(user) \(directory)")
        let script = host.fixture.directory + "/fake.py"
        try """
        import os, socket, sys, time, threading
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sys.argv[1])
        os.chmod(sys.argv[1], 0o666)
        server.listen(8)
        print("ready", flush=True)
        def serve(client):
            client.recv(65536)
            while True:
                try:
                    client.sendall(bytes([0, 0, 0, 2, 1, 19]))
                except OSError:
                    return
                time.sleep(0.5)
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()
        """.write(toFile: script, atomically: false, encoding: .utf8)
        chmod(script, 0o644)
        let socket = directory + "/socket"
        let process = try Spawned(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=\(user)", "--regid=\(user == "root" ? "root" : "nogroup")", "--clear-groups",
                "/usr/bin/python3", script, socket,
            ])
        guard eventually(within: 20, { process.stdout.contains("ready") }) else {
            throw DaemonFixtureError("the stand-in daemon did not start: \(process.stderr)")
        }
        return (process, socket)
    }

    static func stop(_ process: Spawned) {
        process.send(SIGKILL)
        _ = process.finish()
    }

    /// `connections` connections to the daemon held by `user` (a name or a uid) that send nothing: the
    /// process prints how many the daemon refused, and holds the rest until it is finished.
    static func flood(_ host: Host, as user: String, connections: Int) throws -> Spawned {
        let script = host.fixture.directory + "/flood.py"
        try """
        import socket, select, sys, time
        held = []
        for _ in range(int(sys.argv[2])):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            held.append(s)
        refused = sum(1 for s in held if select.select([s], [], [], 0.5)[0] and len(s.recv(4096)) > 0)
        print(refused, flush=True)
        time.sleep(30)
        """.write(toFile: script, atomically: false, encoding: .utf8)
        chmod(script, 0o644)
        let process = try Spawned(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=\(user)", "--regid=\(user)", "--clear-groups", "/usr/bin/python3", script, host.fixture.socket,
                "\(connections)",
            ])
        guard eventually(within: 20, { process.stdout.contains("\n") }) else {
            throw DaemonFixtureError("the flood did not start: \(process.stderr)")
        }
        return process
    }
}
