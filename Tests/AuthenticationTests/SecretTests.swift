import Authentication
import TestSupport
import Testing

struct SecretTests {
    @Test func neverPrintsItsBytes() {
        let secret = Secret(copying: "hunter2".utf8)
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret), dumped, "\([secret])"] {
            #expect(!text.contains("hunter2"), "leaked in \(text)")
            #expect(text.contains("redacted"))
        }
    }

    @Test func comparesByContent() {
        #expect(Secret(copying: "abc".utf8) == Secret(copying: "abc".utf8))
        #expect(Secret(copying: "abc".utf8) != Secret(copying: "abd".utf8))
        #expect(Secret(copying: "abc".utf8) != Secret(copying: "abcd".utf8))
        #expect(Secret(copying: "abcd".utf8) != Secret(copying: "abc".utf8))
        #expect(Secret(copying: []) == Secret(copying: []))
        #expect(Secret(copying: []) != Secret(copying: [0]))
    }

    @Test func wipesTheBytesItTakes() {
        var typed = Array("hunter2".utf8)
        let secret = Secret(wiping: &typed)
        #expect(typed.isEmpty)
        #expect(secret.count == 7)
        #expect(secret.withUnsafeBytes { Array($0) } == Array("hunter2".utf8))
    }

    @Test func wipeZeroesABuffer() {
        var buffer: [UInt8] = [1, 2, 3, 4]
        buffer.withUnsafeMutableBytes { Secret.wipe($0) }
        #expect(buffer == [0, 0, 0, 0])
    }

    /// Contiguous bytes are copied at once, others one by one through a scratch array that is wiped;
    /// either way the secret holds the same bytes, in order, and a C string ends after them.
    @Test func copiesContiguousAndScatteredBytesAlike() {
        let bytes = Array("correct horse".utf8)
        let sources: [Secret] = [
            Secret(copying: bytes), Secret(copying: bytes[...]), Secret(copying: "correct horse".utf8),
            Secret(copying: bytes.reversed().reversed()), Secret(copying: bytes.lazy.map { $0 }),
        ]
        for secret in sources {
            #expect(secret.count == bytes.count)
            #expect(secret.withUnsafeBytes { Array($0) } == bytes)
            #expect(secret.withCString { String(cString: $0) } == "correct horse")
        }
        let backwards = Secret(copying: bytes.reversed())
        #expect(backwards.withUnsafeBytes { Array($0) } == Array(bytes.reversed()))
        #expect(Secret(copying: EmptyCollection<UInt8>()).isEmpty)
        #expect(Secret(copying: [UInt8]()[...]).withCString { $0.pointee } == 0)
    }

    @Test func offersACStringForCAPIs() {
        let secret = Secret(copying: "pw".utf8)
        #expect(secret.withCString { String(cString: $0) } == "pw")
    }
}
