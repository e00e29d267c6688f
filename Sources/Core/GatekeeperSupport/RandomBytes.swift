import CProcessSpawn

/// Secret random bytes from the kernel's generator (`getrandom`), in one call rather than one a byte:
/// keys, salts, nonces and names nobody may guess. The kernel writes them straight into the array
/// returned, so no other copy is left in memory for a secret the caller wipes.
package func randomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let filled = bytes.withUnsafeMutableBytes { gk_random_bytes($0.baseAddress, $0.count) }
    // getrandom fails only for a bad buffer or a kernel without it (before Linux 3.17): nothing to go on.
    precondition(filled == 0, "the kernel's random generator failed")
    return bytes
}
