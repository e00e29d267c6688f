#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Password bytes that are never printed, compared in constant time and wiped when released.
///
/// A `Secret` is the only way a password crosses this library's API. Its bytes are reachable only
/// through ``withUnsafeBytes(_:)``; its `description`, `debugDescription` and reflection are redacted, so
/// string interpolation, `print`, `dump` and logging show `Secret(redacted)` and nothing else. The storage
/// is overwritten with zeros when the last copy of the secret is released.
///
/// ```swift
/// var typed: [UInt8] = readPasswordFromTerminal()
/// let password = Secret(wiping: &typed)   // `typed` is zeroed and emptied
/// ```
public struct Secret: Sendable {
    private let storage: Storage

    /// Takes the bytes of `bytes` and overwrites the source with zeros, leaving it empty.
    public init(wiping bytes: inout [UInt8]) {
        storage = bytes.withUnsafeBufferPointer { Storage(copying: $0) }
        Secret.wipe(&bytes)
    }

    /// Copies `bytes`; the caller remains responsible for wiping its own copy.
    ///
    /// Inlinable, so that it is specialised where it is called: unspecialised, the generic copy made the
    /// runtime build an iterator's metadata and search every protocol conformance in the program on first
    /// use (about 0.1 ms of a one-shot tool's login).
    @inlinable
    public init(copying bytes: some Collection<UInt8>) {
        if let secret = bytes.withContiguousStorageIfAvailable({ Secret(copyingBuffer: $0) }) {
            self = secret
        } else {
            var scratch = Array(bytes)
            self.init(wiping: &scratch)
        }
    }

    /// Copies the bytes of `buffer`.
    @usableFromInline
    init(copyingBuffer buffer: UnsafeBufferPointer<UInt8>) {
        storage = Storage(copying: buffer)
    }

    /// The number of bytes in the secret.
    public var count: Int { storage.count }

    /// Whether the secret has no bytes.
    public var isEmpty: Bool { storage.count == 0 }

    /// Calls `body` with the secret's bytes. The buffer must not escape `body`.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(storage.bytes))
    }

    /// Whether the secret contains `byte`, checked without leaving the secret.
    public func contains(_ byte: UInt8) -> Bool {
        withUnsafeBytes { $0.contains(byte) }
    }

    /// Calls `body` with the secret as a NUL-terminated C string, for C APIs such as `crypt_r` or a PAM
    /// response. The pointer must not escape `body`. A secret containing a NUL byte is cut there by C;
    /// ``Credentials`` refuse such secrets before they reach a provider.
    public func withCString<Result, Failure: Error>(
        _ body: (UnsafePointer<CChar>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafePointer(storage.cString))
    }
}

extension Secret: Equatable {
    /// Compares two secrets in time that depends only on their lengths, never on where they differ.
    public static func == (lhs: Secret, rhs: Secret) -> Bool {
        lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in constantTimeEquals(a, b) }
        }
    }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "Secret(redacted)" }
    public var debugDescription: String { "Secret(redacted)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Secret {
    /// Owns the bytes (plus a trailing NUL for C) and zeroes them on release.
    ///
    /// `@unchecked Sendable`: the buffer is written once in `init` and only read until `deinit`.
    fileprivate final class Storage: @unchecked Sendable {
        let count: Int
        let cString: UnsafeMutablePointer<CChar>

        var bytes: UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(start: cString, count: count)
        }

        init(copying source: UnsafeBufferPointer<UInt8>) {
            count = source.count
            cString = .allocate(capacity: count + 1)
            if let base = source.baseAddress { memcpy(cString, base, count) }
            cString[count] = 0
        }

        deinit {
            Secret.wipe(UnsafeMutableRawBufferPointer(start: cString, count: count + 1))
            cString.deallocate()
        }
    }
}

extension Secret {
    /// Overwrites `buffer` with zeros in a way the optimiser may not remove. Use it on every scratch
    /// buffer that held password bytes before a ``Secret`` took them.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        explicit_bzero(base, buffer.count)
    }

    /// Overwrites `bytes` with zeros and empties it.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
        bytes.removeAll()
    }
}

/// Compares two byte buffers in time that depends only on their lengths.
func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | (a.count == b.count ? 0 : 1)
    // Walk the longer buffer in full so the loop length does not depend on which one is shorter.
    let length = max(a.count, b.count)
    for index in 0..<length {
        let x = index < a.count ? a[index] : 0
        let y = index < b.count ? b[index] : 0
        difference |= x ^ y
    }
    return difference == 0
}
