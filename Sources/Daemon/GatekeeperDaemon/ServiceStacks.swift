import Authentication
import GatekeeperHost
import GatekeeperSupport
import ProviderPlugins

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The stacks the daemon serves: one configuration file per PAM service in its directory
/// (`/etc/gatekeeper/pam.d/SERVICE`), and `default` for every service without one — each read as
/// gatekeeper-run reads `--config`, built once, and kept with everything around its logins (``HostLogin``:
/// the lockout, the fail delay, the audit) for as long as the set is in use.
///
/// A set is read whole or not at all: one file that cannot be used refuses the set, naming the file and
/// why, and the daemon keeps serving the set it had (at start, it does not start).
final class ServiceStacks: Sendable {
    /// Each service's logins, by the name of its file.
    let services: [String: HostLogin]
    /// Where the files were read from.
    let directory: String

    /// The service that serves `name`: its own file, else `default`; `nil` when neither exists.
    func login(for name: String) -> HostLogin? {
        services[name] ?? Self.variants[name].flatMap { services[$0] } ?? services[Self.fallback]
    }

    static let fallback = "default"

    /// The services Debian runs the same program under for a login shell, each served by its program's stack
    /// unless it has a file of its own: `su -l` is `su-l` (which includes `su`), `sudo -i` is `sudo-i` (which
    /// includes `common-auth`, not `sudo`), `runuser -l` is `runuser-l`. A stack written for `su` is never
    /// stepped around by `su -l`.
    static let variants = ["su-l": "su", "sudo-i": "sudo", "runuser-l": "runuser"]

    private init(services: [String: HostLogin], directory: String) {
        self.services = services
        self.directory = directory
    }

    /// Whether `name` can name a service: 1 to 64 bytes of letters, digits, `_` and `-`. Anything else
    /// from a client is refused; a file with another name (`sudo.example`, `sudo~`, `.sudo.swp`) is no
    /// service and is skipped, as sudo skips such files in its `includedir`.
    static func isServiceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return (1...64).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            }
    }

    /// Reads every service file of `directory`.
    /// - Parameters:
    ///   - stateDirectory: Where failures are counted for files that do not say (`--state-dir`).
    ///   - report: Told what does not stop a login (an audit log that cannot be opened).
    /// - Throws: ``DaemonError`` naming the file that cannot be used, and why.
    static func load(
        from directory: String, stateDirectory: String?, registry: ProviderRegistry,
        report: @escaping @Sendable (String) -> Void
    ) throws(DaemonError) -> ServiceStacks {
        var services: [String: HostLogin] = [:]
        for name in try serviceFiles(in: directory) {
            let path = directory + "/" + name
            let loaded: ConfigurationFile.Loaded
            let provider: any AuthProvider
            do throws(ConfigurationError) {
                loaded = try ConfigurationFile.read(path, registry: registry)
                provider = try loaded.stack.makeChain(registry: registry)
            } catch {
                throw DaemonError("\(error)")
            }
            do throws(AuthError) {
                // One attempt per PAM call, as pam_unix makes: the program asks again (sudo's passwd_tries).
                services[name] = try HostLogin(
                    provider: provider, stack: loaded.stack,
                    settings: HostSettings(loaded.settings, stateDirectory: stateDirectory),
                    context: .init(
                        tool: "gatekeeperd", remembersLogins: false, maxAttempts: 1, readsGroups: false),
                    report: report)
            } catch {
                throw DaemonError("\(path): \(error.reason ?? error.description)")
            }
        }
        return ServiceStacks(services: services, directory: directory)
    }

    /// The names of the service files in `directory`, sorted.
    private static func serviceFiles(in directory: String) throws(DaemonError) -> [String] {
        guard let stream = opendir(directory) else {
            throw DaemonError("\(directory): the service directory cannot be read: \(errorDescription())")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if isServiceName(name) { names.append(name) }
        }
        return names.sorted()
    }
}

/// Why the daemon cannot start, or cannot take a new configuration.
struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
