#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes all of `bytes` to `descriptor`, retrying short writes and interruptions.
/// - Returns: whether everything was written (`errno` says why not).
@discardableResult
package func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}

/// The system's description of an `errno` value ("No such file or directory"), thread-safely.
package func errorDescription(_ code: Int32 = errno) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
    return string(fromCBuffer: buffer)
}

/// The text of a NUL-terminated C buffer (up to its first NUL, or all of it), as UTF-8 with invalid
/// bytes replaced.
package func string(fromCBuffer buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension String {
    /// The string followed by spaces up to `width` characters, and at least one: for columns of help.
    package func padded(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
