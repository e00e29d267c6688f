public import Authentication
import CPWQualityLoader

#if canImport(Glibc)
    import Glibc
#endif

/// The checks `pam_pwquality` makes of a new password, through libpwquality itself, with the system's
/// settings (`/etc/security/pwquality.conf` and its `.d` directory, read at every check): its length and
/// character classes, its likeness to the old password and to the user name, and cracklib's dictionary.
public enum PasswordQuality {
    /// Why libpwquality refuses `password` as the new password of `username` (its own message, as
    /// `pwscore` and `passwd` print it), or `nil` when it passes. A configuration that cannot be read
    /// refuses every password, saying so. Blocking (the dictionary is read): call it off the
    /// cooperative pool.
    public static func problem(with password: Secret, old: Secret?, username: String, configuration: String? = nil)
        -> String?
    {
        var problem: UnsafePointer<CChar>?
        guard gatekeeper_pwquality_load(&problem) == 0 else {
            // Without the library nothing can be checked: refused, saying why.
            return problem.map { String(cString: $0) } ?? "libpwquality cannot be loaded"
        }
        guard let settings = gk_pwquality_default_settings() else { return "libpwquality could not start" }
        defer { gk_pwquality_free_settings(settings) }
        var auxiliary: UnsafeMutableRawPointer?
        let read = withOptionalCString(configuration) { gk_pwquality_read_config(settings, $0, &auxiliary) }
        guard read == 0 else { return "the password quality settings cannot be read: \(message(read, auxiliary))" }
        let score = password.withCString { new in
            withOptionalSecret(old) { old in
                username.withCString { gk_pwquality_check(settings, new, old, $0, &auxiliary) }
            }
        }
        return score < 0 ? message(score, auxiliary) : nil
    }

    /// libpwquality's words for `code` (it frees what `auxiliary` holds), without its trailing full stop.
    private static func message(_ code: Int32, _ auxiliary: UnsafeMutableRawPointer?) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PWQ_MAX_ERROR_MESSAGE_LEN))
        guard let text = gk_pwquality_strerror(&buffer, buffer.count, code, auxiliary) else {
            return "libpwquality refused it (\(code))"
        }
        // Its own text, from its own catalogue; escaped all the same, as everything a library says is.
        return TextSafety.escaped(String(cString: text))
    }

    private static func withOptionalCString<T>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let string else { return body(nil) }
        return string.withCString(body)
    }

    private static func withOptionalSecret<T>(_ secret: Secret?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let secret else { return body(nil) }
        return secret.withCString(body)
    }
}
