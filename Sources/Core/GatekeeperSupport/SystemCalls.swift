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

/// Calls a `get…_r` lookup (`getpwnam_r`, `getgrgid_r`, `getpwuid_r`) with a buffer that doubles while
/// it answers `ERANGE` (a group of thousands of members needs more than the first), and reads the record
/// it found. `nil` when there is no record, or when it would need more than `maxBytes`.
package func withGrowingBuffer<Record, Value>(
    from initial: Int = 16 * 1024,
    maxBytes: Int = 16 * 1024 * 1024,
    _ lookUp: (UnsafeMutableBufferPointer<CChar>, inout UnsafeMutablePointer<Record>?) -> Int32,
    read: (UnsafeMutablePointer<Record>) -> Value
) -> Value? {
    var size = max(initial, 1)
    while size <= maxBytes {
        let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: size)
        defer { buffer.deallocate() }
        var result: UnsafeMutablePointer<Record>?
        let status = lookUp(buffer, &result)
        if status == ERANGE {
            size *= 2
            continue
        }
        guard status == 0, let result else { return nil }
        return read(result)
    }
    return nil
}

/// The system's accounts, looked up by name.
package enum SystemAccounts {
    /// The system database's own spelling of the account `name` (`pw_name`: a name service may match
    /// other spellings) and its uid, if there is one.
    package static func account(named name: String) -> (name: String, uid: UInt32)? {
        var entry = passwd()
        return withGrowingBuffer { buffer, result in
            getpwnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result)
        } read: {
            (String(cString: $0.pointee.pw_name), $0.pointee.pw_uid)
        }
    }

    /// The home directory of the account with `uid`, from the user database (not `$HOME`).
    package static func home(of uid: UInt32) -> String? {
        entry(uid: uid) { String(cString: $0.pointee.pw_dir) }
    }

    /// The name of the system account with `uid` (`pw_name`), if there is one.
    package static func name(of uid: UInt32) -> String? {
        entry(uid: uid) { String(cString: $0.pointee.pw_name) }
    }

    /// What `read` takes from the user database's entry of `uid`, if there is one.
    private static func entry<Value>(uid: UInt32, _ read: (UnsafeMutablePointer<passwd>) -> Value) -> Value? {
        var entry = passwd()
        return withGrowingBuffer { buffer, result in
            getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result)
        } read: {
            read($0)
        }
    }

    /// The uid of the system account `name`, if there is one.
    package static func uid(of name: String) -> UInt32? {
        var entry = passwd()
        return withGrowingBuffer { buffer, result in
            getpwnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result)
        } read: {
            $0.pointee.pw_uid
        }
    }
}
