import Authentication
import FoundationEssentials
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Refresh tokens, one private file (mode 0600) per issuer and user in a directory of their own
/// (mode 0700, checked as every state directory is: no one else may write on its path). A file's name is
/// a digest of the issuer and the user name, so no name reaches the file system as a path.
final class TokenStore: Sendable {
    let directory: StateDirectory

    struct Entry: Sendable {
        var issuer: String
        var username: String
        var subject: String
        var refreshToken: Secret
    }

    private struct Stored: Codable {
        var issuer: String
        var username: String
        var subject: String
        var refreshToken: String
    }

    init(_ path: String) throws(StateFileError) {
        directory = try StateDirectory(path, creatingWith: 0o700)
    }

    static func fileName(issuer: String, username: String) -> String {
        "token-" + SHA256.hash(Array(issuer.utf8) + [0] + Array(username.utf8)).hexadecimal
    }

    func load(issuer: String, username: String) -> Entry? {
        guard let file = try? directory.openFile(Self.fileName(issuer: issuer, username: username), creatingWith: nil)
        else { return nil }
        defer { close(file) }
        guard var bytes = try? StateDirectory.readAll(file, limit: 64 * 1024) else { return nil }
        defer { Secret.wipe(&bytes) }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(bytes)),
            stored.issuer == issuer, stored.username == username
        else { return nil }
        return Entry(
            issuer: stored.issuer, username: stored.username, subject: stored.subject,
            refreshToken: Secret(copying: stored.refreshToken.utf8))
    }

    /// Written whole or not at all; a store that cannot be written keeps no token (the login stands).
    func save(_ entry: Entry) {
        let token = entry.refreshToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let stored = Stored(issuer: entry.issuer, username: entry.username, subject: entry.subject, refreshToken: token)
        guard let data = try? JSONEncoder().encode(stored) else { return }
        var bytes = Array(data)
        defer { Secret.wipe(&bytes) }
        try? directory.replace(Self.fileName(issuer: entry.issuer, username: entry.username), with: bytes, mode: 0o600)
    }

    func remove(issuer: String, username: String) {
        directory.remove(Self.fileName(issuer: issuer, username: username))
    }
}
