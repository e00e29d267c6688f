import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A temporary directory for one test, removed by ``remove()``.
final class Scratch: Sendable {
    let path = URL(fileURLWithPath: trustedBase).appendingPathComponent("gatekeeper-file-\(UUID())").path

    init() throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o700)
    }

    /// Writes a private file (mode 0600) and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: mode_t = 0o600) throws -> String {
        try write(name, bytes: Array(text.utf8), mode: mode)
    }

    @discardableResult
    func write(_ name: String, bytes: [UInt8], mode: mode_t = 0o600) throws -> String {
        let file = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        chmod(file, mode)
        return file
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs a command through /bin/sh and returns its trimmed output; throws if it fails.
@discardableResult
func sh(_ command: String, input: String = "") throws -> String {
    let (status, output) = try shell(command, input: input)
    guard status == 0 else { throw CommandFailed(command: command, status: status) }
    return output.trimmingCharacters(in: .whitespacesAndNewlines)
}

struct CommandFailed: Error {
    let command: String
    let status: Int32
}

let gatekeeperPasswd = builtExecutable("gatekeeper-passwd")
