import COathLoader
import GatekeeperSupport

/// HOTP (RFC 4226) and TOTP (RFC 6238) codes, computed by OATH Toolkit's liboath — the library pam_oath
/// itself uses, so a code this package accepts is one pam_oath would.
public enum OneTimeCode {
    /// The HMAC of a TOTP code.
    public enum Algorithm: String, Sendable, CaseIterable {
        case sha1, sha256, sha512

        var flags: Int32 {
            switch self {
            case .sha1: 0
            case .sha256: Int32(OATH_TOTP_HMAC_SHA256.rawValue)
            case .sha512: Int32(OATH_TOTP_HMAC_SHA512.rawValue)
            }
        }
    }

    /// liboath is initialised once for the process.
    static let initialised: Bool = gk_oath_init() == OATH_OK.rawValue

    /// Why no code can be made or checked here, if none can: liboath cannot be loaded (named with the
    /// loader's reason) or does not start.
    static var libraryProblem: String? {
        var why: UnsafePointer<CChar>?
        guard gatekeeper_oath_load(&why) == 0 else {
            return why.map { String(cString: $0) } ?? "liboath cannot be loaded"
        }
        return initialised ? nil : "liboath did not start (oath_init)"
    }

    /// The HOTP code for `counter`.
    public static func hotp(secret: [UInt8], counter: UInt64, digits: Int) -> String? {
        guard initialised, (6...8).contains(digits) else { return nil }
        var output = [CChar](repeating: 0, count: 16)
        let status = secret.withUnsafeBufferPointer { key in
            key.withMemoryRebound(to: CChar.self) { chars in
                gk_oath_hotp_generate(
                    chars.baseAddress, chars.count, counter, UInt32(digits), false,
                    Int(bitPattern: UInt(OATH_HOTP_DYNAMIC_TRUNCATION)), &output)
            }
        }
        return status == OATH_OK.rawValue ? string(fromCBuffer: output) : nil
    }

    /// The TOTP code at `time` (seconds since the epoch), with 30-second steps from 0 unless told.
    public static func totp(secret: [UInt8], time: Int64, digits: Int, algorithm: Algorithm = .sha1, step: Int = 30)
        -> String?
    {
        guard initialised, (6...8).contains(digits) else { return nil }
        var output = [CChar](repeating: 0, count: 16)
        let status = secret.withUnsafeBufferPointer { key in
            key.withMemoryRebound(to: CChar.self) { chars in
                gk_oath_totp_generate2(
                    chars.baseAddress, chars.count, time_t(time), UInt32(step), 0, UInt32(digits), algorithm.flags,
                    &output)
            }
        }
        return status == OATH_OK.rawValue ? string(fromCBuffer: output) : nil
    }

    /// liboath's message for a status.
    static func message(_ status: Int32) -> String {
        gk_oath_strerror(status).map { String(cString: $0) } ?? "liboath error \(status)"
    }
}
