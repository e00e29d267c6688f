import Foundation
import TestSupport
import Testing

/// docs/pam-module.md's first three commands, as an administrator types them, put sudo behind an OpenID Connect
/// device login: run in a mount namespace of the test's own (/etc and the PAM module directory overlaid, /run a
/// tmpfs of its own), so the host's files are never touched, against a throwaway glewlwyd; the code is approved
/// as the person would in a browser. Without systemd, the second command's `systemctl` is
/// `gatekeeperd --foreground`.
@Suite(
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: getuid() == 0, "needs root for a mount namespace, useradd and sudo; run as root (CI does)")
)
struct PAMModuleDocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized.path

    /// The commands of the page's first `sh` block.
    static func firstCommands() throws -> [String] {
        let page = try String(contentsOfFile: root + "/docs/pam-module.md", encoding: .utf8)
        guard let start = page.range(of: "```sh\n"),
            let end = page.range(of: "\n```", range: start.upperBound..<page.endIndex)
        else { return [] }
        return page[start.upperBound..<end.lowerBound].split(separator: "\n").map(String.init)
    }

    @Test func theThreeCommandsPutSudoBehindADeviceLogin() throws {
        let commands = try Self.firstCommands()
        try #require(commands.count == 3, "\(commands)")
        #expect(commands[1] == "sudo systemctl enable --now gatekeeperd.socket")
        let glewlwyd = try GlewlwydFixture.shared.get()
        let scratch = ScratchDirectory("gatekeeper-doc")
        let directory = scratch.path
        let module = try PAMModuleTests.module.get()
        let security =
            "/lib/\(try shell("dpkg-architecture -qDEB_HOST_MULTIARCH").output.trimmingCharacters(in: .whitespacesAndNewlines))/security"
        // As typed, as root (no `sudo`), with the throwaway provider's address, its public client, and plain
        // http on loopback.
        func asRoot(_ command: String) -> String {
            var line = command.replacingOccurrences(of: "| sudo ", with: "| ")
            if line.hasPrefix("sudo ") { line.removeFirst(5) }
            return line.replacingOccurrences(of: "https://id.example.com/realms/staff", with: glewlwyd.issuer)
                .replacingOccurrences(
                    of: "client_id=host-sudo'", with: "client_id=\(glewlwyd.publicClientID) allow_http=yes'")
        }
        let daemon = builtExecutable("gatekeeperd").path
        let script = """
            set -e
            mount --make-rprivate /
            # The overlays' upper layers on a tmpfs of their own: an overlay cannot write to another (as
            # the test's directory is when the tests run in a private copy of the host).
            mkdir -p \(directory)/layer && mount -t tmpfs -o mode=0700 tmpfs \(directory)/layer
            mkdir \(directory)/layer/etc.upper \(directory)/layer/etc.work \(directory)/layer/security.upper \(directory)/layer/security.work
            mount -t overlay overlay -o lowerdir=/etc,upperdir=\(directory)/layer/etc.upper,workdir=\(directory)/layer/etc.work /etc
            mount -t overlay overlay -o lowerdir=\(security),upperdir=\(directory)/layer/security.upper,workdir=\(directory)/layer/security.work \(security)
            cp \(module) \(security)/pam_gatekeeper.so
            id alice >/dev/null 2>&1 || useradd -M -u \(uniqueUID()) -s /bin/sh alice
            printf 'Defaults:alice !lecture\nalice ALL=(ALL) ALL\n' > /etc/sudoers.d/gatekeeper-doc && chmod 0440 /etc/sudoers.d/gatekeeper-doc
            mkdir -p -m 0755 /etc/gatekeeper/pam.d
            mount -t tmpfs -o mode=0755 tmpfs /run
            \(asRoot(commands[0])) >/dev/null
            \(daemon) --foreground --state-dir /run/gatekeeper-state 2>/run/gatekeeperd.log &
            daemon=$!
            trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
            \(asRoot(commands[2]))
            for _ in $(seq 100); do [ -S /run/gatekeeper/socket ] && break; sleep 0.1; done
            setpriv --reuid=alice --regid=alice --init-groups sudo -k id -un

            """
        try script.write(toFile: directory + "/run.sh", atomically: false, encoding: .utf8)
        let session = try TerminalSession(
            URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "bash", directory + "/run.sh"])
        defer { kill(-session.pid, SIGKILL) }
        let shown = try session.waitFor("enter the code ", timeout: .seconds(30))
        try session.waitFor("\n", after: shown.range(of: "enter the code ")!.upperBound.utf16Offset(in: shown))
        let code = try #require(GlewlwydFixture.userCode(in: session.output))
        try glewlwyd.approve(code, as: "alice", password: "wonderland-2026")
        #expect(session.finish(timeout: .seconds(60)) == 0, "\(session.output)")
        #expect(session.output.hasSuffix("root\r\n"), "\(session.output)")
    }
}
