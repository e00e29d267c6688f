import Authentication
import GatekeeperDaemon
import TestSupport
import Testing

/// The wire format of gatekeeperd's socket: every message survives a round trip, and every malformed frame is
/// refused with an error (never a crash, never a message made up of it).
struct DaemonMessageTests {
    static let messages: [DaemonMessage] = [
        .request(
            DaemonRequest(
                .authenticate, service: "sudo", user: "alice", remoteHost: "10.0.0.1", terminal: "/dev/pts/3",
                requestingUser: "bob", authenticationToken: Secret(copying: Array("s3cret".utf8)),
                flags: [.tryFirstPass])),
        .request(DaemonRequest(.account, service: "sshd", user: "ÄLICE")),
        .request(DaemonRequest(.changePassword, service: "passwd", user: "alice", flags: [.expiredOnly])),
        .request(DaemonRequest(.authenticate, service: "sshd", user: "ghost", flags: [.unknownToHost])),
        .answer(Secret(copying: Array("hunter2".utf8))),
        .answer(Secret(copying: [])),
        .cancel,
        .question("Password: ", hidden: true),
        .question("One-time code: ", hidden: false),
        .message("Visit https://id.example/device and enter ABCD-EFGH", isError: false),
        .message("The password has expired.", isError: true),
        .result(.success, canonicalUser: "alice"),
        .result(.authinfoUnavailable, canonicalUser: nil),
        .keepalive,
    ]

    @Test(arguments: messages)
    func roundTrip(_ message: DaemonMessage) throws {
        let frame = message.frame()
        let length = try DaemonMessage.frameLength(frame.prefix(4))
        #expect(length == frame.count - 4)
        #expect(try DaemonMessage.parse(Array(frame.dropFirst(4))) == message)
    }

    /// A text longer than a frame holds is cut at a character's edge, never split inside one.
    @Test func longTextIsCutToAFrame() throws {
        let text = String(repeating: "é", count: DaemonMessage.maxFrame)
        let frame = DaemonMessage.message(text, isError: false).frame()
        #expect(frame.count - 4 <= DaemonMessage.maxFrame)
        guard case .message(let cut, _) = try DaemonMessage.parse(Array(frame.dropFirst(4))) else {
            Issue.record("not a message")
            return
        }
        #expect(cut.utf8.count <= DaemonMessage.maxText && cut.allSatisfy { $0 == "é" } && !cut.isEmpty)
    }

    /// A payload: the version, the type, then fields (tag, 2-byte length, bytes).
    static func payload(version: UInt8 = 1, type: UInt8, _ fields: [(UInt8, [UInt8])]) -> [UInt8] {
        fields.reduce([version, type]) { bytes, field in
            bytes + [field.0, UInt8(field.1.count >> 8), UInt8(field.1.count & 0xff)] + field.1
        }
    }

    static let request: [(UInt8, [UInt8])] = [(1, [1]), (2, Array("sudo".utf8)), (3, Array("alice".utf8))]

    static let malformed: [(String, [UInt8])] = [
        ("empty", []),
        ("no type", [1]),
        ("another version", payload(version: 2, type: 1, request)),
        ("an unknown type", payload(type: 9, [])),
        ("an unknown field", payload(type: 1, request + [(99, [0])])),
        ("a field of another type", payload(type: 1, request + [(16, Array("x".utf8))])),
        ("a field twice", payload(type: 1, request + [(3, Array("bob".utf8))])),
        ("a field cut short", payload(type: 1, request) + [4, 0]),
        ("a field longer than its frame", payload(type: 1, request) + [4, 0, 9, 65]),
        ("no operation", payload(type: 1, Array(request.dropFirst()))),
        ("an unknown operation", payload(type: 1, [(1, [9])] + request.dropFirst())),
        ("no user", payload(type: 1, Array(request.dropLast()))),
        ("a user that is not UTF-8", payload(type: 1, Array(request.dropLast()) + [(3, [0xff, 0xfe])])),
        ("a user with a NUL byte", payload(type: 1, Array(request.dropLast()) + [(3, [97, 0, 98])])),
        ("a service too long", payload(type: 1, [(1, [1]), (2, Array(repeating: 97, count: 300)), (3, [97])])),
        ("unknown flags", payload(type: 1, request + [(8, [0, 0, 1, 0])])),
        ("flags of 3 bytes", payload(type: 1, request + [(8, [0, 0, 1])])),
        ("an answer too long", payload(type: 2, [(16, Array(repeating: 97, count: DaemonMessage.maxAnswer + 1))])),
        ("an answer without text", payload(type: 2, [])),
        ("an answer with a NUL byte", payload(type: 2, [(16, [0x61, 0x00, 0x62])])),
        ("an answer that is not UTF-8", payload(type: 2, [(16, [0xff, 0xfe])])),
        ("an answer cut inside a character", payload(type: 2, [(16, [0x61, 0xc3])])),
        ("a first password with a NUL byte", payload(type: 1, request + [(7, [0x61, 0x00])])),
        ("a first password that is not UTF-8", payload(type: 1, request + [(7, [0xc0, 0xaf])])),
        ("a question without hidden", payload(type: 16, [(16, Array("Password: ".utf8))])),
        ("a hidden flag of 2", payload(type: 16, [(16, Array("Password: ".utf8)), (17, [2])])),
        ("a result without code", payload(type: 18, [])),
        ("a result of no PAM code", payload(type: 18, [(18, [200])])),
    ]

    @Test(arguments: malformed)
    func malformedIsRefused(_ named: (String, [UInt8])) {
        #expect(throws: DaemonProtocolError.self, "\(named.0)") { try DaemonMessage.parse(named.1) }
    }

    @Test(arguments: [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0x80, 1], [0xff, 0xff, 0xff, 0xff]] as [[UInt8]])
    func frameLengthOutOfBoundsIsRefused(_ header: [UInt8]) {
        #expect(throws: DaemonProtocolError.self) { try DaemonMessage.frameLength(header) }
    }

    /// Random bytes, and random changes to real frames, are either a message that writes back to a frame of
    /// the same meaning, or refused: never a crash.
    @Test func randomBytesNeverCrash() throws {
        var random = SeededGenerator(for: "DaemonMessageTests.randomBytesNeverCrash")
        let seed = random.seed
        for _ in 0..<20_000 {
            var bytes = Self.messages.randomElement(using: &random)!.frame().dropFirst(4).map { $0 }
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where !bytes.isEmpty:
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = .random(in: 0...255, using: &random)
                case 1 where !bytes.isEmpty: bytes.removeSubrange(Int.random(in: 0..<bytes.count, using: &random)...)
                default: bytes.append(.random(in: 0...255, using: &random))
                }
            }
            if let message = try? DaemonMessage.parse(bytes) {
                #expect(try DaemonMessage.parse(Array(message.frame().dropFirst(4))) == message, "seed \(seed)")
            }
        }
    }
}
