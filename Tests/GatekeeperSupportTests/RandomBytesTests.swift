import Testing

@testable import GatekeeperSupport

@Suite struct RandomBytesTests {
    /// Exactly as many bytes as asked, whole words or not, and every byte drawn: two draws of 32 bytes
    /// agree by chance with probability 2⁻²⁵⁶, and a tail left unfilled would stay zero.
    @Test(arguments: [0, 1, 7, 8, 9, 20, 32, 33])
    func drawsTheBytesAsked(_ count: Int) {
        let first = randomBytes(count)
        #expect(first.count == count)
        guard count >= 8 else { return }
        #expect(first != randomBytes(count))
        let tails = (0..<64).map { _ in randomBytes(count).last! }
        #expect(Set(tails).count > 1, "the last byte is never drawn")
    }
}
