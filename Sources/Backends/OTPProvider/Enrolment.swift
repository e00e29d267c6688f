public import Authentication
import TerminalQRCode

/// What an authenticator app scans to enrol: the `otpauth://` URI (Google's Key URI format, which every
/// authenticator app reads) and that URI as a QR code drawn with text.
public enum Enrolment {
    /// `otpauth://totp/ISSUER:USER?secret=BASE32&period=30&issuer=ISSUER&algorithm=SHA1&digits=6`
    /// (`hotp` with `counter=0` for counters).
    public static func uri(
        username: String,
        secret: Secret,
        kind: OATHUsersFileStore.Kind,
        digits: Int,
        algorithm: OneTimeCode.Algorithm = .sha1,
        issuer: String = "gatekeeper"
    ) -> String {
        let encoded = secret.withUnsafeBytes { base32($0) }
        let label = percentEncoded(issuer) + ":" + percentEncoded(username)
        var uri: String
        switch kind {
        case .totp(let step): uri = "otpauth://totp/\(label)?secret=\(encoded)&period=\(step)"
        case .hotp: uri = "otpauth://hotp/\(label)?secret=\(encoded)&counter=0"
        }
        uri += "&issuer=\(percentEncoded(issuer))&algorithm=\(algorithm.rawValue.uppercased())&digits=\(digits)"
        return uri
    }

    /// RFC 4648 base32, without padding (as authenticator apps expect).
    static func base32(_ bytes: UnsafeRawBufferPointer) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var output: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Unreserved characters as they are, everything else as %XX.
    static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if scalar.properties.isAlphabetic && byte < 0x80 || ("0"..."9").contains(scalar)
                || "-._~".unicodeScalars.contains(scalar)
            {
                output.unicodeScalars.append(scalar)
            } else {
                output += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return output
    }

    /// `text` as a QR code drawn with text (``TerminalQRCode/lines(_:)``); `nil` when it does not fit one.
    public static func qrCode(_ text: String) -> [String]? { TerminalQRCode.lines(text) }
}
