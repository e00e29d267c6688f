/// Secret random bytes from the system's generator (`getrandom`), eight to a call rather than one: keys,
/// salts, nonces and names nobody may guess. Written straight into the array returned, so no other copy
/// is left on the heap for a secret the caller wipes.
package func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < count {
            var word = generator.next() as UInt64
            let taken = min(8, count - offset)
            withUnsafeBytes(of: &word) { buffer[offset..<offset + taken].copyBytes(from: $0.prefix(taken)) }
            word = 0
            offset += taken
        }
    }
    return bytes
}
