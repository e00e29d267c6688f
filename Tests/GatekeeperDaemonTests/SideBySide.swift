import Foundation
import TestSupport

/// One host, two login services, one throwaway slapd (ppolicy on): `sss-compare`, every phase pam_sss (SSSD's
/// sssd, sssd_be and sssd_pam, Debian's sssd-ldap), and `gk-compare`, every phase pam_gatekeeper.so
/// (gatekeeperd with an LDAP stack and an offline cache), configured alike, as `Examples/sssd/side-by-side.sh`
/// sets them up: SSSD in a mount namespace of its own, so the host's SSSD state and PAM files are never
/// touched; `pamtester` runs in it for both services. Everything stops when the fixture goes.
final class SideBySide {
    enum Service: String, CaseIterable, CustomStringConvertible {
        case sssd = "sss-compare"
        case gatekeeper = "gk-compare"
        var description: String { self == .sssd ? "SSSD" : "gatekeeperd" }
    }

    let slapd: SlapdFixture
    let daemon: DaemonFixture
    let scratch = ScratchDirectory("gatekeeper-sssd")

    init() throws {
        slapd = try SlapdFixture()
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
        let started = try shell(
            "'\(Self.script)' start '\(directory)' '\(slapd.uri)' '\(slapd.base)' '\(slapd.caFile)' '\(module)' "
                + "'\(daemon.socket)' \(getpid()) 2>&1")
        guard started.status == 0 else { throw DaemonFixtureError("side-by-side.sh: \(started.output)") }
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Examples/sssd/side-by-side.sh").standardized.path

    /// `command` in the namespace.
    func inside(_ command: String, input: String = "") throws -> (status: Int32, output: String) {
        try shell("'\(Self.script)' run '\(scratch.path)' sh -c '\(command)' 2>&1", input: input)
    }

    /// `pamtester SERVICE USER OPERATIONS` in the namespace, `input` its answers, one a line; the outcome is
    /// pamtester's last line ("successfully authenticated", "Authentication failure" …), and all it said.
    func pamtester(_ service: Service, _ user: String, _ operations: String, input: String) throws -> (
        outcome: String, output: String
    ) {
        let (_, output) = try inside(
            "timeout 60 stdbuf -o0 pamtester \(service.rawValue) \(user) \(operations)", input: input)
        // The text of pamtester's last "pamtester: …" line (a module's messages may follow it).
        let last = output.components(separatedBy: "pamtester: ").dropFirst().last?.prefix { $0 != "\n" } ?? ""
        return (String(last), output)
    }

    deinit {
        _ = try? shell("'\(Self.script)' stop '\(scratch.path)' 2>&1")
        _ = slapd.kill()
    }
}
