import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `gatekeeper-run --change-password`: a login through the one admission path, then a change through
/// the configured stack's two passes.
@Suite(.timeLimit(.minutes(1)))
struct ChangePasswordTests {
    static let strong = "Correct-Horse-Battery-7"

    private func scratch() throws -> String {
        let directory = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-change-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o700)
        return directory
    }

    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }

    /// A stack of a users file and a second factor that keeps no password: the login, then the file's
    /// change (its current password, the new one twice); htpasswd takes the new one. A stack with a later
    /// entry that refuses in the preliminary pass (debug prechauthtok=perm_denied, required) changes
    /// nothing, not even the file that was ready, status 77, and --explain shows the pass that decided.
    @Test func changesThePasswordThroughTheConfiguredStack() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hash = try shell("htpasswd -nbB bob old-pass-1").output.split(separator: ":")[1]
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try write("bob:\(hash)\n", to: directory + "/users")
        try write(
            "delay 0\nlockout dir=\(directory)/faillock\nrequired file users=\(directory)/users\noptional debug result=ignore\n",
            to: directory + "/ok.conf")
        let input = "old-pass-1\nold-pass-1\n\(Self.strong)\n\(Self.strong)\n"
        let result = try run(
            gatekeeperRun, ["--config", directory + "/ok.conf", "--user", "bob", "--change-password"], input: input)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("Current password: \nNew password: \nRetype new password: "))
        #expect(result.stderr.contains("the password was changed"))
        #expect(try shell("htpasswd -vb \(directory)/users bob '\(Self.strong)'").status == 0)

        try write(
            "delay 0\nlockout dir=\(directory)/faillock\nrequired file users=\(directory)/users\n"
                + "required debug prechauthtok=perm_denied\n",
            to: directory + "/refusing.conf")
        let before = try String(contentsOfFile: directory + "/users", encoding: .utf8)
        let refused = try run(
            gatekeeperRun,
            ["--config", directory + "/refusing.conf", "--explain", "--user", "bob", "--change-password"],
            input: "\(Self.strong)\n\(Self.strong)\n")
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("2. required debug: perm_denied -> bad\nresult: perm_denied"), "\(refused.stderr)")
        #expect(try String(contentsOfFile: directory + "/users", encoding: .utf8) == before)
        #expect(!refused.stderr.contains("Other-Horse") && !refused.stderr.contains(Self.strong))
    }

    /// Ctrl-C or SIGTERM while the new password is asked, at a login that must change an expired one, or
    /// in `--change-password`: the tool ends (130, 143) and the file is as it was.
    @Test(arguments: [(SIGINT, Int32(130), true), (SIGTERM, 143, true), (SIGINT, 130, false), (SIGTERM, 143, false)])
    func aSignalDuringAChangeChangesNothing(_ signal: Int32, _ status: Int32, _ atLogin: Bool) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hash = try shell("htpasswd -nbB bob old-pass-1").output.split(separator: ":")[1]
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try write("bob:\(atLogin ? "+" : "")\(hash)\n", to: directory + "/users")
        let before = try String(contentsOfFile: directory + "/users", encoding: .utf8)
        let common = [
            "--provider", "file", "--users", directory + "/users", "--user", "bob", "--state-dir", directory + "/state",
        ]
        let process = try Spawned(gatekeeperRun, common + (atLogin ? ["--", "true"] : ["--change-password"]))
        process.write("old-pass-1\nold-pass-1\n")  // The login's password, then the current one.
        try process.waitForStderr(containing: "New password: ")
        process.send(signal)
        // Its last word, before standard input is closed (an end of input would cancel it too).
        try process.waitForStderr(containing: signal == SIGTERM ? "stopped by signal 15" : "cancelled")
        let result = process.finish()
        #expect(result.status == status, "\(result.stderr)")
        #expect(try String(contentsOfFile: directory + "/users", encoding: .utf8) == before)
    }

    @Test(arguments: [
        ["--provider", "mock", "--change-password", "--", "true"],
        ["--provider", "mock", "--user", "alice", "--password-stdin", "--change-password"],
    ])
    func refusesWhatCannotWork(_ arguments: [String]) throws {
        let result = try run(gatekeeperRun, arguments, input: "wonderland\n")
        #expect(result.status == 64, "\(result.stderr)")
    }
}
