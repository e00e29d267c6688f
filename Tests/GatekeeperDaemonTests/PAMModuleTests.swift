import Authentication
import Foundation
import GatekeeperDaemon
import GatekeeperSupport
import TestSupport
import Testing

/// pam_gatekeeper.so, built from Sources/Daemon/PAMModule/, in throwaway PAM services under /etc/pam.d, with the real programs
/// people log in through: `pamtester` (Linux-PAM's own client), `sudo` on a terminal with a sudoers rule naming
/// the service (`pam_service=`), and `su` (its service file replaced in a mount namespace of its own).
@Suite(
    .serialized,
    .timeLimit(.minutes(6)),
    .enabled(
        if: getuid() == 0, "needs root for /etc/pam.d, /etc/sudoers.d and throwaway accounts; run as root (CI does)")
)
struct PAMModuleTests {
    /// The module, compiled once per test process as the Makefile compiles it.
    static let module: Result<String, DaemonFixtureError> = {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources").standardized.path
        let source = sources + "/Daemon/PAMModule/pam_gatekeeper.c"
        let wire = sources + "/CLibraries/CGatekeeperWire/include"
        let directory = temporaryDirectory("pam-gatekeeper-module")
        chmod(directory, 0o755)  // Loaded by programs run as the test's accounts too.
        let output = directory + "/pam_gatekeeper.so"
        let built = try? shell(
            "gcc -shared -fPIC -Wall -Wextra -Werror -O2 -fvisibility=hidden -I \(wire) -o \(output) \(source) -lpam")
        guard built?.status == 0 else { return .failure(DaemonFixtureError("gcc: \(built?.output ?? "")")) }
        return .success(output)
    }()

    /// A daemon, a system account of the test's own with the daemon's password, and a PAM service whose
    /// every phase is the module — all removed at the end.
    final class Host {
        let fixture: DaemonFixture
        let user = "gkd\(UInt32.random(in: 100_000...999_999))"
        let service: String
        var module: String
        var sudoers: String { "/etc/sudoers.d/gatekeeper-test-\(user)" }

        init(
            settings: String = "lockout deny=1000", arguments: [String] = [], launcher: [String] = [],
            entry: ((DaemonFixture) -> String)? = nil
        )
            throws
        {
            module = try PAMModuleTests.module.get()
            fixture = try DaemonFixture(settings: settings, arguments: arguments, launcher: launcher, start: false)
            service = "gatekeeper-test-\(user)"
            let created = try shell("useradd -M -d / -u \(uniqueUID()) -s /bin/sh \(user)")
            guard created.status == 0 else { throw DaemonFixtureError("useradd: \(created.output)") }
            let added = try run(
                builtExecutable("gatekeeper-passwd"), ["add", fixture.users, user, "--password-stdin"],
                input: fixture.password + "\n")
            guard added.status == 0 else { throw DaemonFixtureError("gatekeeper-passwd: \(added.stderr)") }
            if let entry { try fixture.writeService("default", settings: settings, entry: entry(fixture)) }
            try writeService()
            try fixture.start()
        }

        /// RFC 4226's secret, which the stacks with one-time codes give the account.
        static let codeSecret = "3132333435363738393031323334353637383930"

        /// A host whose stack is the users file, then one-time codes from pam_oath's file holding
        /// ``codeSecret`` for the account.
        static func withOneTimeCodes() throws -> Host {
            var codes = ""
            let host = try Host { fixture in
                codes = fixture.directory + "/users.oath"
                return "required file users=\(fixture.users)\nrequired otp usersfile=\(codes) window=3"
            }
            try "HOTP/T30/6 \(host.user) - \(codeSecret)\n".write(toFile: codes, atomically: false, encoding: .utf8)
            chmod(codes, 0o600)
            return host
        }

        /// The code `oathtool` computes now from ``codeSecret``.
        static func currentCode() throws -> String {
            try shell("oathtool --totp \(codeSecret)").output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The service file: every phase through the module (`auth` and `account` as given).
        func writeService(auth: String? = nil, account: String? = nil) throws {
            let entry = "\(module) socket=\(fixture.socket)"
            let text = """
                \(auth ?? "auth required \(entry)")
                \(account ?? "account required \(entry)")
                password required \(entry)
                session required \(entry)

                """
            try text.write(toFile: "/etc/pam.d/\(service)", atomically: false, encoding: .utf8)
        }

        /// A sudoers rule: the account may run anything, signing in through the service.
        func allowSudo() throws {
            try "Defaults:\(user) pam_service=\(service), !lecture\n\(user) ALL=(ALL) ALL\n".write(
                toFile: sudoers, atomically: false, encoding: .utf8)
            chmod(sudoers, 0o440)
        }

        func pamtester(_ arguments: String, input: String, as runner: String? = nil) throws -> (
            status: Int32, output: String
        ) {
            let prefix = runner.map { "setpriv --reuid=\($0) --regid=\($0) --init-groups " } ?? ""
            return try shell("\(prefix)pamtester \(service) \(arguments) 2>&1", input: input)
        }

        /// sudo as the account on a terminal of its own, running `id -un`.
        func sudo() throws -> TerminalSession {
            try TerminalSession(
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--reuid=\(user)", "--regid=\(user)", "--init-groups", "/usr/bin/sudo", "-k", "/usr/bin/id", "-un"])
        }

        deinit {
            if let problem = removeAccount(user) { Issue.record(Comment(rawValue: problem)) }
            try? FileManager.default.removeItem(atPath: "/etc/pam.d/\(service)")
            try? FileManager.default.removeItem(atPath: sudoers)
        }
    }

    @Test func pamtesterThroughTheModule() throws {
        let host = try Host()
        let right = try host.pamtester("\(host.user) authenticate acct_mgmt", input: host.fixture.password + "\n")
        #expect(right.status == 0, "\(right.output)")
        #expect(right.output.contains("successfully authenticated") && right.output.contains("account management done"))
        let wrong = try host.pamtester("\(host.user) authenticate", input: "wrong\n")
        #expect(wrong.status != 0 && wrong.output.contains("Authentication failure"))
        #expect(try host.fixture.failures(of: host.user) == 1)
        let new = "Quartz-Lantern-\(UInt32.random(in: 1000...9999))-q"
        let changed = try host.pamtester(
            "\(host.user) chauthtok", input: "\(host.fixture.password)\n\(new)\n\(new)\n")
        #expect(changed.status == 0, "\(changed.output)")
        #expect(try host.pamtester("\(host.user) authenticate", input: new + "\n").status == 0)
        #expect(try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n").status != 0)
        // A name longer than any account's is no account's, said by the module itself: not a daemon gone.
        let long = try host.pamtester("\(String(repeating: "a", count: 2000)) authenticate", input: "x\n")
        #expect(long.status != 0 && long.output.contains("User not known"), "\(long.output)")
        #expect(!long.output.contains("gatekeeperd"), "\(long.output)")
    }

    /// The daemon not running: `authinfo_unavail`, said to the person and to syslog, so that
    /// `[authinfo_unavail=ignore]` falls to the next module as with pam_sss.
    @Test func daemonDownIsAuthinfoUnavailable() throws {
        let host = try Host()
        host.fixture.stop()
        let down = try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n")
        #expect(down.status != 0)
        #expect(down.output.contains("cannot retrieve authentication info") && down.output.contains("gatekeeperd"))
        try host.writeService(
            auth:
                "auth [success=done authinfo_unavail=ignore default=die] \(host.module) socket=\(host.fixture.socket)\n"
                + "auth required pam_permit.so")
        #expect(try host.pamtester("\(host.user) authenticate", input: "").status == 0)
    }

    /// A caller other than root may check its own account, and no other; the refusal is audited.
    @Test func nonRootCallerOnlyItsOwnAccount() throws {
        let host = try Host()
        let own = try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n", as: host.user)
        #expect(own.status == 0, "\(own.output)")
        let other = try host.pamtester(
            "\(host.fixture.account) authenticate", input: host.fixture.password + "\n", as: host.user)
        #expect(other.status != 0 && other.output.contains("Permission denied"), "\(other.output)")
        #expect(host.fixture.auditRecords.contains { $0.contains("\"requestRefused\"") })
        #expect(try host.fixture.failures(of: host.fixture.account) == 0)
        // A flood of such requests is refused every time, and audited once each 10 s (saying how many were
        // left out), not once each.
        for _ in 0..<20 {
            _ = try host.pamtester("\(host.fixture.account) authenticate", input: "x\n", as: host.user)
        }
        #expect(host.fixture.auditRecords.filter { $0.contains("\"requestRefused\"") }.count == 1)
        // The refusals left out are written once their 10 seconds are over, though no other comes.
        #expect(
            eventually(within: 30) {
                host.fixture.auditRecords.contains { $0.contains("\"requestRefused\"") && $0.contains("more times") }
            })
    }

    /// sudo with a sudoers rule naming the service: the right password runs the command as root; Ctrl-C at its
    /// prompt ends the daemon's login, recorded as cancelled and counted as nothing.
    @Test func sudoThroughTheModule() throws {
        let host = try Host()
        try host.allowSudo()
        let session = try host.sudo()
        try session.waitFor("assword")
        session.type(host.fixture.password + "\r")
        #expect(session.finish() == 0)
        #expect(session.output.contains("root"), "\(session.output)")

        let cancelled = try host.sudo()
        try cancelled.waitFor("assword")
        cancelled.type("\u{3}")
        #expect(cancelled.finish() != 0)
        #expect(eventually { host.fixture.auditRecords.contains { $0.contains("\"signInCancelled\"") } })
        #expect(try host.fixture.failures(of: host.user) == 0)
    }

    /// sudo through a stack of a users file and one-time codes (pam_oath's file): the password, then the code
    /// `oathtool` computes from the same secret; a wrong code is refused.
    @Test func sudoWithAPasswordAndAOneTimeCode() throws {
        let host = try Host.withOneTimeCodes()
        try host.allowSudo()
        for (code, admitted) in [(try Host.currentCode(), true), ("000000", false)] {
            let session = try host.sudo()
            try session.waitFor("assword")
            session.type(host.fixture.password + "\r")
            try session.waitFor("Verification code: ")
            session.type(code + "\r")
            if admitted {
                #expect(session.finish() == 0 && session.output.contains("root"), "\(session.output)")
            } else {
                // sudo asks again after a refusal; its next try is cancelled.
                try session.waitFor("assword", after: session.output.count)
                session.type("\u{3}")
                #expect(session.finish() != 0 && !session.output.contains("\nroot"), "\(session.output)")
            }
        }
    }

    /// The daemon killed while sudo asks: sudo fails closed, saying why, and the next login after a restart
    /// works.
    @Test func daemonKilledMidLogin() throws {
        let host = try Host()
        try host.allowSudo()
        let session = try host.sudo()
        try session.waitFor("assword")
        host.fixture.stop(SIGKILL)
        session.type(host.fixture.password + "\r")
        #expect(session.finish(timeout: .seconds(10)) != 0)
        #expect(session.output.contains("gatekeeperd"), "\(session.output)")
        try host.fixture.start()
        let again = try host.sudo()
        try again.waitFor("assword")
        again.type(host.fixture.password + "\r")
        #expect(again.finish() == 0 && again.output.contains("root"), "\(again.output)")
    }

    /// su, with its PAM service replaced by the module in a mount namespace of its own (the host's file is
    /// never touched): the target's password from the daemon's stack.
    @Test func suThroughTheModule() throws {
        let host = try Host()
        let file = host.fixture.directory + "/su.pam"
        try
            "auth required \(host.module) socket=\(host.fixture.socket)\naccount required \(host.module) socket=\(host.fixture.socket)\nsession required pam_permit.so\n"
            .write(toFile: file, atomically: false, encoding: .utf8)
        let session = try TerminalSession(
            URL(fileURLWithPath: "/usr/bin/unshare"),
            [
                "-m", "sh", "-c",
                "mount --bind \(file) /etc/pam.d/su && exec setpriv --reuid=nobody --regid=nogroup --clear-groups su -c 'id -un' \(host.user)",
            ])
        try session.waitFor("assword")
        session.type(host.fixture.password + "\r")
        #expect(session.finish() == 0)
        #expect(session.output.contains(host.user), "\(session.output)")
    }

    /// A user's flood of connections that send nothing holds at most its own share (--max-logins-per-user):
    /// the rest are refused at once, and root's logins go on meanwhile.
    @Test func aUsersFloodHoldsOnlyItsShare() throws {
        let host = try Host(arguments: ["--max-logins-per-user", "4"])
        let flood = """
            import socket, select, sys, time
            held = []
            for _ in range(10):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                held.append(s)
            refused = sum(1 for s in held if select.select([s], [], [], 0.5)[0] and len(s.recv(4096)) > 0)
            print(refused, flush=True)
            time.sleep(float(sys.argv[2]))
            """
        let script = host.fixture.directory + "/flood.py"
        try flood.write(toFile: script, atomically: false, encoding: .utf8)
        chmod(script, 0o644)
        let flooding = try Spawned(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            [
                "--reuid=\(host.user)", "--regid=\(host.user)", "--clear-groups", "/usr/bin/python3", script,
                host.fixture.socket, "3",
            ])
        #expect(eventually { flooding.stdout.contains("\n") }, "\(flooding.stderr)")
        #expect(flooding.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "6", "\(flooding.stdout)")
        let root = try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n")
        #expect(root.status == 0, "\(root.output)")
        _ = flooding.finish()
    }

    /// A user's loop of right passwords through the module (a setuid program's, counted against the user who
    /// ran it) is bounded by `--max-login-rate`: the logins over it are refused with the reason on the
    /// terminal, so no one user grows the audit log without bound; root's logins go on.
    @Test func aUsersLoopOfLoginsIsBoundedByRate() throws {
        let host = try Host(arguments: ["--max-login-rate", "4"])
        guard let uid = SystemAccounts.uid(of: host.user) else {
            Issue.record("no uid for \(host.user)")
            return
        }
        let loop = try shell(
            "for i in 1 2 3 4 5 6; do echo \(host.fixture.password) | setpriv --ruid=\(uid) pamtester "
                + "\(host.service) \(host.user) authenticate 2>&1; done")
        let admitted = loop.output.components(separatedBy: "successfully authenticated").count - 1
        #expect(admitted == 4, "\(loop.output)")
        #expect(loop.output.contains("too many logins of this user; try again in"), "\(loop.output)")
        #expect(host.fixture.auditRecords.count { $0.contains("\"signedIn\"") } == 4)
        let root = try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n")
        #expect(root.status == 0, "\(root.output)")
    }

    /// A setuid program (sudo, chfn, passwd: root's effective uid, the user's real one) counts against the user
    /// who ran it: one user's pile of unanswered prompts holds that user's share, and root's logins go on.
    @Test func aSetuidProgramsLoginsCountAgainstItsUser() throws {
        let host = try Host(arguments: ["--max-logins-per-user", "2"])
        guard let uid = SystemAccounts.uid(of: host.user) else {
            Issue.record("no uid for \(host.user)")
            return
        }
        // pamtester with the user's real uid and root's effective one, as a setuid program runs, each left at
        // its password prompt.
        var waiting: [Spawned] = []
        defer { for process in waiting { process.send(SIGKILL) } }
        for _ in 0..<2 {
            let process = try Spawned(
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--ruid=\(uid)", "pamtester", host.service, host.user, "authenticate"], mergingStandardError: true)
            waiting.append(process)
            #expect(eventually { process.stdout.contains("Password") }, "\(process.stdout)")
        }
        let third = try shell(
            "echo \(host.fixture.password) | setpriv --ruid=\(uid) pamtester \(host.service) \(host.user) authenticate 2>&1"
        )
        #expect(third.status != 0 && third.output.contains("too many logins"), "\(third.output)")
        let root = try host.pamtester("\(host.user) authenticate", input: host.fixture.password + "\n")
        #expect(root.status == 0, "\(root.output)")
    }

    /// 200 logins at once through the module, each a wrong password: every one is counted, none lost.
    @Test func concurrentLoginsLoseNoRecord() throws {
        let host = try Host()
        let result = try shell(
            "for i in $(seq 200); do echo wrong | pamtester \(host.service) \(host.user) authenticate >/dev/null 2>&1 & "
                + "done; wait")
        #expect(result.status == 0)
        #expect(try host.fixture.failures(of: host.user) == 200)
    }
}
