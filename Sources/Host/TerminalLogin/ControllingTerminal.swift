import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Facts about the terminal and the user a command-line tool runs for, as PAM's `PAM_TTY` and
/// `PAM_RUSER` want them.
public enum ControllingTerminal {
    /// The device path of this process's controlling terminal (`/dev/pts/3`, `/dev/tty1`), as `login`
    /// and `sudo` give it to PAM; never the alias `/dev/tty`, which names no terminal in `pam_access`,
    /// `pam_securetty` or `pam_time` rules. `nil` when there is none.
    ///
    /// The terminal's device number comes from `/proc/self/stat`; the name from standard input, output
    /// or error when one of them is that terminal, and otherwise from the device number (pseudo-terminals
    /// and virtual consoles), checked against the device file.
    public static func name() -> String? {
        guard let device = controllingDevice(), device != 0 else { return nil }
        for descriptor: Int32 in [0, 1, 2] {
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, UInt64(info.st_rdev) == device
            else { continue }
            var buffer = [CChar](repeating: 0, count: 256)
            guard ttyname_r(descriptor, &buffer, buffer.count) == 0 else { continue }
            let name = string(fromCBuffer: buffer)
            if name != "/dev/tty" { return name }
        }
        let major = (device >> 8) & 0xFFF
        let minor = (device & 0xFF) | ((device >> 12) & 0xFFF00)
        let candidate: String
        switch major {
        case 136...143: candidate = "/dev/pts/\((major - 136) * 256 + minor)"
        case 4 where minor < 64: candidate = "/dev/tty\(minor)"
        case 4: candidate = "/dev/ttyS\(minor - 64)"
        default: return nil
        }
        var info = stat()
        guard stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, UInt64(info.st_rdev) == device else {
            return nil
        }
        return candidate
    }

    /// Field 7 of `/proc/self/stat` (`tty_nr`), read as bytes after the command name's closing
    /// parenthesis (the name itself may hold spaces and parentheses).
    private static func controllingDevice() -> UInt64? {
        let descriptor = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0, let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ")": state, ppid, pgrp, session, tty_nr.
        let fields = buffer[(close + 1)..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 4 else { return nil }
        return UInt64(String(decoding: fields[4], as: UTF8.self))
    }

    /// The name of the user running this program (its real uid), for `PAM_RUSER`; `nil` when the user
    /// database does not know it.
    public static func invokingUser() -> String? {
        var entry = passwd()
        let name = withGrowingBuffer { buffer, result in
            getpwuid_r(getuid(), &entry, buffer.baseAddress!, buffer.count, &result)
        } read: { (_: UnsafeMutablePointer<passwd>) in
            entry.pw_name.map { String(cString: $0) }
        }
        return name ?? nil
    }
}
