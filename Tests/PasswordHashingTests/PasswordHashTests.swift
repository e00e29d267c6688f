import Authentication
import PasswordHashing
import Testing

struct PasswordHashTests {
    @Test(arguments: [
        ("", PasswordHash.Problem.empty),
        ("secret", .plainTextOrDES),
        ("abJnggxhB/yWI", .plainTextOrDES),
        ("$9$salt$hash", .unknownScheme),
        ("{MD5}abc", .unknownScheme),
        ("$6$rounds=9999999$salt$hash", .workFactorTooHigh("rounds=9999999")),
        ("$5$rounds=lots$salt$hash", .malformed),
        ("$2y$15$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234", .workFactorTooHigh("cost 15")),
        ("$2y$xx$abc", .malformed),
        ("$y$j9T$salt hash", .malformed),
    ])
    func refusesUnusableHashes(_ text: String, _ problem: PasswordHash.Problem) {
        // Problems are equal by code; the message says which work factor, so compare it too.
        #expect {
            try PasswordHash(text)
        } throws: { error in
            (error as? PasswordHash.Problem) == problem && "\(error)" == problem.description
        }
    }

    /// Memory-hard costs whose product is past `Int`: refused as too costly, never a trap (the first was
    /// found by the users-file fuzz target) and never wrapped round to a small cost that passes.
    @Test(arguments: [
        "$y$bawwwd",  // yescrypt, from the fuzz target: r × N past 2^56
        "$7$c...2./....$salt$hash",  // scrypt, N = 2^40 and r = 2^20, the most the bounds let through
    ])
    func refusesMemoryHardCostsPastIntsRange(_ text: String) {
        #expect(throws: PasswordHash.Problem.workFactorTooHigh("")) { try PasswordHash(text) }
    }

    @Test(arguments: PasswordHash.Scheme.writable)
    func makesAndVerifiesHashes(_ scheme: PasswordHash.Scheme) throws {
        let hash = try PasswordHash.make(Secret(copying: "correct horse".utf8), scheme: scheme)
        #expect(hash.scheme == scheme)
        #expect(hash.verify(Secret(copying: "correct horse".utf8)))
        #expect(!hash.verify(Secret(copying: "correct horsf".utf8)))
        #expect(!"\(hash)".contains(hash.text))
    }

    @Test func weakSchemesAreMarked() {
        #expect(PasswordHash.Scheme.apr1.isWeak)
        #expect(PasswordHash.Scheme.sha1.isWeak)
        #expect(!PasswordHash.Scheme.yescrypt.isWeak)
    }
}
