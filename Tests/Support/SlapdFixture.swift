import Foundation
import GatekeeperSupport

/// The running slapds' pid files, for the exit handler (which can capture nothing).
private let slapdPidFiles = Locked<[String]>([])

/// A throwaway slapd on loopback ports, in a temporary directory with its own slapd.conf, LDIF and TLS
/// certificate; nothing of the system's configuration is touched. A watchdog stops it when this test
/// process ends, however it ends.
public final class SlapdFixture: @unchecked Sendable {
    public let directory: String
    public private(set) var port: Int
    public let base = "dc=example,dc=test"
    private var server: Spawned?

    public var uri: String { "ldap://127.0.0.1:\(port)" }
    public var caFile: String { directory + "/cert.pem" }
    public func dn(_ uid: String) -> String { "uid=\(uid),ou=people,\(base)" }

    /// slapd's pid now, from its pid file.
    private var pid: Int32? {
        (try? String(contentsOfFile: directory + "/slapd.pid", encoding: .utf8))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Kills the server, as a crash or a pulled cable would, and waits until it no longer answers; false if
    /// it still answers after 5 s (what follows would test a live server).
    @discardableResult
    public func kill() -> Bool {
        if let pid { Glibc.kill(pid, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            guard (try? shell("ldapwhoami -x -H \(uri) >/dev/null 2>&1"))?.status == 0 else {
                _ = server?.finish(timeout: .seconds(5))
                server = nil
                return true
            }
            usleep(10_000)
        }
        return false
    }

    /// Starts the server again, on the same port with the same data, after ``kill()``.
    public func restart() throws {
        try start(ports: [port])
    }

    /// Stops the server without closing anything (SIGSTOP): connections and new ones hang, as with a
    /// server that stopped answering. ``resume()`` continues it.
    public func hang() { if let pid { Glibc.kill(pid, SIGSTOP) } }
    public func resume() { if let pid { Glibc.kill(pid, SIGCONT) } }

    /// Sets `uid`'s password as the directory's administrator.
    public func setPassword(of uid: String, to password: String) throws {
        let (status, output) = try shell(
            "ldappasswd -x -H \(uri) -D 'cn=admin,\(base)' -w admin-secret -s '\(password)' '\(dn(uid))' 2>&1")
        guard status == 0 else { throw FixtureFailure("ldappasswd: \(output)") }
    }

    /// `uid` changes its own password, as with `passwd` on another host (no administrator's reset).
    public func changeOwnPassword(of uid: String, from old: String, to new: String) throws {
        let (status, output) = try shell(
            "ldappasswd -x -H \(uri) -D '\(dn(uid))' -w '\(old)' -a '\(old)' -s '\(new)' 2>&1")
        guard status == 0 else { throw FixtureFailure("ldappasswd as \(uid): \(output)") }
    }

    /// The accounts: user name, password, whether in the staff group.
    public static let accounts =
        [("alice", "wonderland", true), ("bob", "builder", false), ("carol", "carol-2026", true)]
        + loadAccounts.map { ($0.username, $0.password, false) }

    /// Sixty more accounts for the load test: `load0` to `load59`, password `load-password-N`.
    public static let loadAccounts = (0..<60).map { (username: "load\($0)", password: "load-password-\($0)") }

    public static let shared = Result { try SlapdFixture() }

    /// Now, in LDAP's generalized time.
    public static var now: String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02d%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec)
    }

    static let certificates = Result { () throws -> String in
        let directory = temporaryDirectory("gatekeeper-slapd-tls")
        let (status, output) = try shell(
            "openssl req -x509 -newkey rsa:2048 -nodes -keyout '\(directory)/key.pem' -out '\(directory)/cert.pem' "
                + "-days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost")
        guard status == 0 else { throw FixtureFailure("openssl: \(output)") }
        return directory
    }

    /// - Parameter tls: Whether the server offers TLS (StartTLS); without it, StartTLS is refused.
    public init(tls: Bool = true) throws {
        port = 0
        directory = temporaryDirectory("gatekeeper-slapd")
        try FileManager.default.createDirectory(atPath: directory + "/db", withIntermediateDirectories: true)
        // One certificate for every server of the run, so a client trusting it can fail over between them.
        let certificates = try Self.certificates.get()
        for name in ["cert.pem", "key.pem"] {
            try FileManager.default.copyItem(atPath: certificates + "/" + name, toPath: directory + "/" + name)
        }
        try """
        include /etc/ldap/schema/core.schema
        include /etc/ldap/schema/cosine.schema
        include /etc/ldap/schema/nis.schema
        include /etc/ldap/schema/inetorgperson.schema
        modulepath /usr/lib/ldap
        moduleload back_mdb
        moduleload ppolicy
        pidfile \(directory)/slapd.pid
        \(tls ? "TLSCertificateFile \(directory)/cert.pem\nTLSCertificateKeyFile \(directory)/key.pem" : "")
        database mdb
        suffix "\(base)"
        rootdn "cn=admin,\(base)"
        rootpw admin-secret
        directory \(directory)/db
        overlay ppolicy
        ppolicy_default "cn=default,ou=policies,\(base)"
        ppolicy_use_lockout
        access to attrs=userPassword by self write by anonymous auth by * none
        access to * by * read

        """.write(toFile: directory + "/slapd.conf", atomically: true, encoding: .utf8)
        var ldif = """
            dn: \(base)
            objectClass: dcObject
            objectClass: organization
            o: Example
            dc: example

            dn: ou=people,\(base)
            objectClass: organizationalUnit
            ou: people

            dn: ou=groups,\(base)
            objectClass: organizationalUnit
            ou: groups

            """
        for (index, (user, password, _)) in Self.accounts.enumerated() {
            ldif += """

                dn: uid=\(user),ou=people,\(base)
                objectClass: inetOrgPerson
                objectClass: posixAccount
                uid: \(user)
                cn: \(user.capitalized) Example
                sn: Example
                uidNumber: \(2001 + index)
                gidNumber: 2000
                homeDirectory: /home/\(user)
                loginShell: /bin/bash
                userPassword: \(password)

                """
        }
        // Password policies (slapd's ppolicy overlay): a default one, and one whose passwords expire after a
        // minute with three grace logins; dave is locked, erin's password expired long ago, fay's was reset.
        ldif += """

            dn: ou=policies,\(base)
            objectClass: organizationalUnit
            ou: policies

            dn: cn=default,ou=policies,\(base)
            objectClass: device
            objectClass: pwdPolicy
            cn: default
            pwdAttribute: userPassword
            pwdLockout: TRUE
            pwdMaxFailure: 50
            pwdMustChange: TRUE

            dn: cn=expiring,ou=policies,\(base)
            objectClass: device
            objectClass: pwdPolicy
            cn: expiring
            pwdAttribute: userPassword
            pwdMaxAge: 60
            pwdGraceAuthNLimit: 3

            dn: cn=strict,ou=policies,\(base)
            objectClass: device
            objectClass: pwdPolicy
            cn: strict
            pwdAttribute: userPassword
            pwdMinLength: 8
            pwdCheckQuality: 2
            pwdInHistory: 3

            dn: cn=lastgrace,ou=policies,\(base)
            objectClass: device
            objectClass: pwdPolicy
            cn: lastgrace
            pwdAttribute: userPassword
            pwdMaxAge: 60
            pwdGraceAuthNLimit: 1

            dn: cn=patient,ou=policies,\(base)
            objectClass: device
            objectClass: pwdPolicy
            cn: patient
            pwdAttribute: userPassword
            pwdMinAge: 86400

            """
        for (user, extra) in [
            ("dave", "pwdAccountLockedTime: 000001010000Z"),
            ("erin", "pwdPolicySubentry: cn=expiring,ou=policies,\(base)\npwdChangedTime: 20200101000000Z"),
            ("fay", "pwdReset: TRUE"),
            // For the password-change tests, one account each: they change it.
            ("gwen", "pwdPolicySubentry: cn=strict,ou=policies,\(base)"),
            ("hal", "pwdReset: TRUE"),
            ("ike", "pwdPolicySubentry: cn=patient,ou=policies,\(base)\npwdChangedTime: \(Self.now)"),
            ("jill", "pwdPolicySubentry: cn=expiring,ou=policies,\(base)\npwdChangedTime: 20200101000000Z"),
            ("kim", ""),
            ("lou", "pwdPolicySubentry: cn=lastgrace,ou=policies,\(base)\npwdChangedTime: 20200101000000Z"),
        ] {
            ldif += """

                dn: uid=\(user),ou=people,\(base)
                objectClass: inetOrgPerson
                objectClass: posixAccount
                uid: \(user)
                cn: \(user.capitalized) Example
                sn: Example
                uidNumber: 2100
                gidNumber: 2000
                homeDirectory: /home/\(user)
                userPassword: \(user)-2026
                \(extra)

                """
        }
        ldif += "\ndn: cn=staff,ou=groups,\(base)\nobjectClass: posixGroup\ncn: staff\ngidNumber: 2000\n"
        for (user, _, staff) in Self.accounts where staff { ldif += "memberUid: \(user)\n" }
        try ldif.write(toFile: directory + "/data.ldif", atomically: true, encoding: .utf8)
        let (added, addOutput) = try shell("slapadd -f '\(directory)/slapd.conf' -l '\(directory)/data.ldif'")
        guard added == 0 else { throw FixtureFailure("slapadd: \(addOutput)") }

        try start(ports: (0..<10).map { _ in Int.random(in: 20_000...60_000) })
        slapdPidFiles.withLock { $0.append(directory + "/slapd.pid") }
        atexit {
            for path in slapdPidFiles.withLock({ $0 }) {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                    let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
                else { continue }
                Glibc.kill(pid, SIGTERM)
            }
        }
    }

    /// Starts slapd on the first of `ports` it can serve on.
    private func start(ports: [Int]) throws {
        for candidate in ports {
            // The watchdog: slapd in the foreground, stopped when this process or slapd itself is gone.
            let script = """
                slapd -d 0 -f '\(directory)/slapd.conf' -h 'ldap://127.0.0.1:\(candidate)/' & server=$!
                trap 'kill $server 2>/dev/null' EXIT
                while kill -0 \(getpid()) 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done
                """
            let process = try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", script])
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if (try? shell("ldapwhoami -x -H ldap://127.0.0.1:\(candidate) >/dev/null 2>&1"))?.status == 0 {
                    (server, port) = (process, candidate)
                    return
                }
                usleep(50_000)
            }
            process.interrupt()
            _ = process.finish()
        }
        throw FixtureFailure("slapd did not start on any of the ports \(ports)")
    }
}

public struct FixtureFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
