import Authentication
import FileProvider
import PasswordHashing
import TestSupport
import Testing

struct UsersFileTests {
    static let yescrypt = "$y$j9T$fB1RFKMHLXFoGFvrxGUua0$a4TuXXE8Ga1WGUQ15lAlfQcYBjguBxnBZ4zMrfp4JE3"

    @Test func readsEntriesCommentsAndExtraFields() throws {
        let text = "\u{FEFF}# users\r\n\r\nalice:\(Self.yescrypt):admin,staff:Alice Liddell\r\nbob:!\(Self.yescrypt)\n"
        let file = try UsersFile(parsing: Array(text.utf8))
        #expect(file.entries.map(\.username) == ["alice", "bob"])
        let alice = try #require(file["alice"])
        #expect(alice.groups == ["admin", "staff"])
        #expect(alice.displayName == "Alice Liddell")
        #expect(alice.line == 3)
        #expect(file["bob"]?.password == .locked("!" + Self.yescrypt))
        #expect(file["carol"] == nil)
        // Comments and blank lines survive a rewrite; line ends become \n.
        #expect(String(decoding: file.serialized(), as: UTF8.self).hasPrefix("# users\n\nalice:"))
    }

    @Test func anEmptyFileHasNoUsers() throws {
        #expect(try UsersFile(parsing: []).entries.isEmpty)
    }

    @Test(arguments: [
        ("alice", "line 1 has no ':' between the user name and the hash"),
        ("alice:secret", "line 1 for alice: plain-text passwords and DES crypt hashes are not accepted"),
        ("alice:", "line 1 for alice: the password hash is empty (an empty hash never means \"no password\")"),
        ("alice:$9$x$y", "line 1 for alice: the hash scheme is not one this provider verifies"),
        (
            " alice:$y$j9T$a$b",
            "line 1 has an unusable user name: it starts or ends with white space"
        ),
        ("# fine\n:$y$j9T$a$b", "line 2 has an unusable user name: it is empty"),
        // Found by the users-file fuzz target: carriage returns in the groups, one of them taken for the
        // line's end when the file was read back, so the entry read back was not the entry written.
        ("alice:$y$j9T$a$b:staff\r\r\n", "line 1 has a carriage return inside it"),
        ("alice:$y$j9T$a$b:st\raff\n", "line 1 has a carriage return inside it"),
    ])
    func namesTheBadLine(_ text: String, _ message: String) {
        #expect {
            try UsersFile(parsing: Array(text.utf8))
        } throws: { error in
            guard let error = error as? UsersFileError else { return false }
            return error.code == .malformed && error.description == message
        }
    }

    @Test func refusesInvalidUTF8AndRandomBytes() {
        #expect {
            try UsersFile(parsing: Array("# ok\n".utf8) + [0xFF, 0x3A, 0x0A])
        } throws: { error in
            "\(error)" == "line 2 is not valid UTF-8" && (error as? UsersFileError)?.code == .malformed
        }
        var generator = SeededGenerator(for: "refusesInvalidUTF8AndRandomBytes")
        let noise = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(throws: UsersFileError.self) { try UsersFile(parsing: noise) }
    }

    @Test func theFirstOfDuplicateNamesWinsWithAWarning() throws {
        let other = "$6$salt$hash"
        let file = try UsersFile(parsing: Array("alice:\(Self.yescrypt)\nbob:\(other)\nalice:\(other)\n".utf8))
        #expect(file["alice"]?.password == .hash(try PasswordHash(Self.yescrypt)))
        #expect(file.warnings == ["line 3: alice is already defined on line 1; the first entry is used"])
        #expect(file.entries.map(\.username) == ["alice", "bob"])
    }

    /// Names are the file's bytes, as pam_unix's are: `Å` (U+00C5) and `Å` (U+212B), `KIM` and `\u{212A}IM` (the
    /// Kelvin sign), which Swift's `==` holds equal, are two accounts, and a look-up by one never finds the other.
    @Test func canonicallyEquivalentNamesAreTwoAccounts() throws {
        let other = "$6$salt$hash"
        let text = "\u{00C5}sa:\(Self.yescrypt)\n\u{212B}sa:\(other)\nKIM:\(other)\n"
        let file = try UsersFile(parsing: Array(text.utf8))
        #expect(file.warnings.isEmpty)
        #expect(file.entries.count == 3)
        #expect(file["\u{00C5}sa"]?.password == .hash(try PasswordHash(Self.yescrypt)))
        #expect(file["\u{212B}sa"]?.password == .hash(try PasswordHash(other)))
        #expect(file["\u{212A}IM"] == nil)
        #expect(file["KIM"] != nil)
    }
}
