import Foundation
import TestSupport

/// One host, two login services, one throwaway slapd (ppolicy on): `sss-compare`, every phase pam_sss (SSSD's
/// sssd, sssd_be and sssd_pam, Debian's sssd-ldap), and `gk-compare`, every phase pam_gatekeeper.so
/// (gatekeeperd with an LDAP stack and an offline cache), configured alike: StartTLS checked against the
/// directory's CA, offline logins for 7 days, 5 failed offline logins before they are refused, 3 s network
/// timeouts. SSSD runs in a mount namespace of the
/// test's own — /var/lib/sss, /var/log/sssd and /run tmpfs (the tests' directory under /run kept), /etc an overlay — so the host's SSSD state and
/// PAM files are never touched; `pamtester` runs in it for both services. Everything stops when the fixture
/// goes.
final class SideBySide {
    enum Service: String, CaseIterable, CustomStringConvertible {
        case sssd = "sss-compare"
        case gatekeeper = "gk-compare"
        var description: String { self == .sssd ? "SSSD" : "gatekeeperd" }
    }

    let slapd: SlapdFixture
    let daemon: DaemonFixture
    let scratch = ScratchDirectory("gatekeeper-sssd")
    /// The process holding the namespace (`sleep`), which `nsenter` joins.
    private let namespace: Spawned
    private var sssd: Spawned?

    /// - Parameter logsOperations: Whether slapd logs each operation (for the directory's load per login).
    init(logsOperations: Bool = false) throws {
        slapd = try SlapdFixture(logsOperations: logsOperations)
        let module = try PAMModuleTests.module.get()
        let directory = scratch.path
        chmod(directory, 0o755)
        daemon = try DaemonFixture(start: false)
        try daemon.writeService(
            "default", settings: "lockout deny=1000",
            entry:
                "required ldap uri=\(slapd.uri) base=ou=people,\(slapd.base) ca=\(slapd.caFile) timeout=3s "
                + "offline_cache=\(daemon.directory)/offline offline_max_age=7d")
        try daemon.start()
        try """
        [sssd]
        services = nss, pam
        domains = compare

        [pam]
        offline_credentials_expiration = 7
        offline_failed_login_attempts = 5
        offline_failed_login_delay = 5

        [domain/compare]
        id_provider = ldap
        auth_provider = ldap
        chpass_provider = ldap
        ldap_uri = \(slapd.uri)
        ldap_search_base = \(slapd.base)
        ldap_schema = rfc2307
        ldap_id_use_start_tls = true
        ldap_tls_cacert = \(slapd.caFile)
        ldap_tls_reqcert = demand
        cache_credentials = true
        ldap_network_timeout = 3
        ldap_opt_timeout = 3
        ldap_search_timeout = 3

        """.write(toFile: directory + "/sssd.conf", atomically: false, encoding: .utf8)
        chmod(directory + "/sssd.conf", 0o600)
        let sss = "auth required pam_sss.so\naccount required pam_sss.so\npassword required pam_sss.so\n"
        let entry = "\(module) socket=\(daemon.socket)"
        let ours = "auth required \(entry)\naccount required \(entry)\npassword required \(entry)\n"
        try """
        set -e
        mount --make-rprivate /
        for place in /var/lib/sss /var/log/sssd; do mount -t tmpfs -o mode=0755 tmpfs $place; done
        # /run a tmpfs of its own (sssd's pid file), with the tests' directory under it kept in place.
        mount -t tmpfs -o mode=0755 tmpfs /mnt
        mkdir /mnt/hold
        mount --bind \(trustedBase) /mnt/hold
        mount -t tmpfs -o mode=0755 tmpfs /run
        mkdir -p \(trustedBase)
        mount --bind /mnt/hold \(trustedBase)
        mkdir -p /var/lib/sss/db /var/lib/sss/pipes/private /var/lib/sss/mc /var/lib/sss/pubconf \
            /var/lib/sss/gpo_cache /var/lib/sss/keytabs
        chmod 0700 /var/lib/sss/db /var/lib/sss/pipes/private
        mkdir -p \(directory)/etc.upper \(directory)/etc.work
        mount -t overlay overlay -o lowerdir=/etc,upperdir=\(directory)/etc.upper,workdir=\(directory)/etc.work /etc
        printf '\(sss)' > /etc/pam.d/\(Service.sssd.rawValue)
        printf '\(ours)' > /etc/pam.d/\(Service.gatekeeper.rawValue)
        echo ready
        exec sleep 86400

        """.write(toFile: directory + "/namespace.sh", atomically: false, encoding: .utf8)
        namespace = try Spawned(URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "sh", directory + "/namespace.sh"])
        guard eventually(within: 10, { namespace.stdout.contains("ready") }) else {
            throw DaemonFixtureError("the namespace did not start: \(namespace.stderr)")
        }
        try startSSSD()
    }

    /// `command` in the namespace.
    func inside(_ command: String, input: String = "") throws -> (status: Int32, output: String) {
        try shell("nsenter -t \(namespace.pid) -m -- sh -c '\(command)' 2>&1", input: input)
    }

    /// Starts sssd (again: its cache stays) and waits until its PAM responder listens.
    func startSSSD() throws {
        sssd = try Spawned(
            URL(fileURLWithPath: "/usr/bin/nsenter"),
            [
                "-t", "\(namespace.pid)", "-m", "--", "/usr/sbin/sssd", "-i", "-c", scratch.path + "/sssd.conf",
                "--logger=stderr",
            ])
        guard eventually(within: 20, { (try? inside("test -S /var/lib/sss/pipes/pam"))?.status == 0 }) else {
            throw DaemonFixtureError("sssd did not start: \(sssd?.stderr ?? "")")
        }
    }

    /// `pamtester SERVICE USER OPERATIONS` in the namespace, `input` its answers, one a line; the outcome is
    /// pamtester's last line ("successfully authenticated", "Authentication failure" …), and all it said.
    func pamtester(_ service: Service, _ user: String, _ operations: String, input: String) throws -> (
        outcome: String, output: String
    ) {
        let (_, output) = try inside("timeout 60 stdbuf -o0 pamtester \(service.rawValue) \(user) \(operations)", input: input)
        // The text of pamtester's last "pamtester: …" line (a module's messages may follow it).
        let last = output.components(separatedBy: "pamtester: ").dropFirst().last?.prefix { $0 != "\n" } ?? ""
        return (String(last), output)
    }

    /// The sssd processes' resident memory, in KiB (sssd, sssd_be, sssd_pam and sssd_nss).
    var sssdResidentKiB: Int {
        let listed = (try? shell("ps -o rss= -C sssd,sssd_be,sssd_pam,sssd_nss"))?.output ?? ""
        return listed.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.reduce(0, +)
    }

    deinit {
        if let sssd {
            // sssd's children end with it.
            sssd.send(SIGTERM)
            _ = sssd.finish(timeout: .seconds(10))
        }
        namespace.send(SIGKILL)
        _ = namespace.finish(timeout: .seconds(5))
        _ = slapd.kill()
    }
}
