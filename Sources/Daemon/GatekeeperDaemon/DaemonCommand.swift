import Authentication
import CProcessSpawn
import GatekeeperBackends
import GatekeeperSupport
public import ProviderPlugins
public import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// gatekeeperd: serves the logins of `pam_gatekeeper.so` on a Unix socket — systemd's (socket activation,
/// `LISTEN_FDS`) or, with `--foreground`, one it makes itself.
public enum DaemonCommand {
    static let tool = "gatekeeperd"

    /// The daemon: reads the process's command line and serves until SIGTERM.
    public static func main() -> Never {
        let invocation = readCommandLine(of: tool, usage: DaemonInvocation.usage) { arguments throws(UsageError) in
            try DaemonInvocation.parse(arguments)
        }
        exitTool(perform(invocation, registry: BuiltInBackends.registry))
    }

    /// Does what `invocation` asks; answers the status to exit with.
    public static func perform(
        _ invocation: DaemonInvocation, registry: ProviderRegistry, output: ToolOutput = .standard
    ) -> ExitStatus {
        do throws(ToolExit) {
            switch invocation.action {
            case .help:
                output.print(DaemonInvocation.usage)
            case .check:
                let stacks = try load(invocation, registry: registry, output: output)
                output.print(
                    "\(stacks.services.count) service files in \(invocation.configurationDirectory): "
                        + (stacks.services.keys.sorted().joined(separator: ", ")))
            case .serve:
                try serve(invocation, registry: registry, output: output)
            }
            return .success
        } catch {
            return ended(error, tool: tool, output: output)
        }
    }

    private static func load(_ invocation: DaemonInvocation, registry: ProviderRegistry, output: ToolOutput)
        throws(ToolExit) -> ServiceStacks
    {
        do throws(DaemonError) {
            return try ServiceStacks.load(
                from: invocation.configurationDirectory, stateDirectory: invocation.stateDirectory, registry: registry,
                report: { output.error("\(tool): \($0)") })
        } catch {
            throw ToolExit(.unavailable, error.description)
        }
    }

    private static func serve(_ invocation: DaemonInvocation, registry: ProviderRegistry, output: ToolOutput)
        throws(ToolExit)
    {
        // A client that goes away is a failed send, never the daemon's end.
        signal(SIGPIPE, SIG_IGN)
        // Passwords pass through this process, and the offline cache keeps keyed digests of them in memory:
        // no core file of it, and no ptrace by anyone without CAP_SYS_PTRACE.
        guard gk_set_dumpable(0) == 0 else {
            throw ToolExit(.unavailable, "prctl(PR_SET_DUMPABLE): \(errorDescription())")
        }
        let stacks = try load(invocation, registry: registry, output: output)
        let socket = try ListeningSocket.open(invocation)
        defer { socket.close() }
        let daemon = Daemon(invocation, registry: registry, output: output, stacks: stacks)
        var stopPipe: [Int32] = [-1, -1]
        guard pipe(&stopPipe) == 0 else { throw ToolExit(.unavailable, "pipe: \(errorDescription())") }
        for end in stopPipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { for end in stopPipe { close(end) } }
        let writeEnd = stopPipe[1]
        let signals = SignalThread(signals: [SIGHUP, SIGTERM, SIGINT]) { number in
            if number == SIGHUP {
                daemon.reload()
            } else {
                var byte: UInt8 = 1
                _ = write(writeEnd, &byte, 1)
            }
        }
        guard let signals else { throw ToolExit(.unavailable, "the signals cannot be watched") }
        output.error(
            "\(tool): serving \(stacks.services.count) service files of \(invocation.configurationDirectory) on "
                + "\(socket.path)")
        daemon.serve(listener: socket.descriptor, stop: stopPipe[0])
        signals.stop()
        output.error("\(tool): stopped")
    }
}

/// The socket the daemon accepts on: systemd's, passed as descriptor 3 (`LISTEN_FDS`, `LISTEN_PID`, read
/// without libsystemd), or with `--foreground` one made at the path, after making sure no daemon answers
/// there already.
struct ListeningSocket {
    let descriptor: Int32
    let path: String
    /// The socket file this process made (its device and inode), removed when it stops — only if it is still
    /// the one at the path (a daemon started after this one may have taken the path over).
    let made: (device: UInt64, inode: UInt64)?

    static func open(_ invocation: DaemonInvocation) throws(ToolExit) -> ListeningSocket {
        if let passed = try fromSystemd() {
            if let path = boundPath(of: passed) { makeReachable(directoryOf: path) }
            return ListeningSocket(descriptor: passed, path: "systemd's socket", made: nil)
        }
        guard invocation.foreground else {
            throw ToolExit(
                .usage,
                "no socket from systemd (LISTEN_FDS); give --foreground to listen on \(invocation.socketPath) itself.")
        }
        return try make(at: invocation.socketPath)
    }

    /// Descriptor 3 when systemd passed it to this process: a listening Unix stream socket.
    private static func fromSystemd() throws(ToolExit) -> Int32? {
        guard let pid = getenv("LISTEN_PID").map({ String(cString: $0) }), let count = getenv("LISTEN_FDS") else {
            return nil
        }
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard pid == String(getpid()) else { return nil }
        guard String(cString: count) == "1" else {
            throw ToolExit(
                .usage, "systemd passed \(String(cString: count)) sockets (LISTEN_FDS); the unit must pass one.")
        }
        let descriptor: Int32 = 3
        func option(_ name: Int32) -> Int32 {
            var value: Int32 = -1
            var size = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(descriptor, SOL_SOCKET, name, &value, &size) == 0 ? value : -1
        }
        guard option(SO_DOMAIN) == AF_UNIX, option(SO_TYPE) == Int32(SOCK_STREAM.rawValue), option(SO_ACCEPTCONN) == 1
        else {
            throw ToolExit(.usage, "systemd's socket is no listening Unix stream socket (ListenStream= in the unit).")
        }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return descriptor
    }

    private static func make(at path: String) throws(ToolExit) -> ListeningSocket {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ToolExit(.usage, "--socket: \(TextSafety.escaped(path)) is too long for a socket's name.")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // The directory: made for root's path (/run/gatekeeper), never one others may write.
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty, mkdir(directory, 0o755) != 0, errno != EEXIST {
            throw ToolExit(.unavailable, "\(directory): \(errorDescription())")
        }
        if let problem = untrustedDirectory(above: path) {
            throw ToolExit(.unavailable, "\(TextSafety.escaped(path)): \(problem)")
        }
        makeReachable(directoryOf: path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ToolExit(.unavailable, "socket: \(errorDescription())") }
        func bound() -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        if bound() != 0 {
            guard errno == EADDRINUSE else {
                Glibc.close(descriptor)
                throw ToolExit(.unavailable, "\(TextSafety.escaped(path)): \(errorDescription())")
            }
            // A daemon that answers there keeps it; a socket nobody answers on is a stale one, removed.
            if answers(at: address) {
                Glibc.close(descriptor)
                throw ToolExit(.unavailable, "another gatekeeperd answers on \(TextSafety.escaped(path)).")
            }
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, unlink(path) == 0, bound() == 0 else {
                Glibc.close(descriptor)
                throw ToolExit(.unavailable, "\(TextSafety.escaped(path)) exists and is no stale socket.")
            }
        }
        // Anyone may connect; what they may ask is decided by who they are (SO_PEERCRED).
        chmod(path, 0o666)
        guard listen(descriptor, 128) == 0 else {
            Glibc.close(descriptor)
            unlink(path)
            throw ToolExit(.unavailable, "listen: \(errorDescription())")
        }
        var info = stat()
        let made = lstat(path, &info) == 0 ? (UInt64(info.st_dev), UInt64(info.st_ino)) : nil
        return ListeningSocket(descriptor: descriptor, path: path, made: made)
    }

    /// The socket's directory is the daemon's, and its mode is set on every start: `0755`, whoever made it
    /// and however (a tool making `/run/gatekeeper/cache` private, an administrator's `mkdir` under umask
    /// 077), so that every user can reach the socket. Only a directory of this process's own user is
    /// changed, opened without following a link.
    static func makeReachable(directoryOf path: String) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = Glibc.open(String(path[..<slash]), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0 else { return }
        defer { Glibc.close(directory) }
        var info = stat()
        guard fstat(directory, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o7777 != 0o755 else { return }
        _ = fchmod(directory, 0o755)
    }

    /// The path a listening Unix socket is bound to, if it has one.
    private static func boundPath(of descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var size = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &size) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return path.hasPrefix("/") ? path : nil
    }

    private static func answers(at address: sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { Glibc.close(probe) }
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    func close() {
        Glibc.close(descriptor)
        var info = stat()
        if let made, lstat(path, &info) == 0, UInt64(info.st_dev) == made.device, UInt64(info.st_ino) == made.inode {
            unlink(path)
        }
    }
}
