import CProcessSpawn
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A helper program run for one login, as a hostile peer: in a process group of its own, with a cleared
/// environment (plus what the configuration names), no descriptors but its own (standard input and output
/// on a socket, standard error to /dev/null, and for checkpassword descriptor 3), the signal state a shell
/// gives, a time limit and a bound on what it may print. Blocking: run it on a thread through the bridge.
///
/// Sockets, not pipes, so that writing to a helper that has gone never raises SIGPIPE in the host.
final class HelperProcess {
    let pid: pid_t
    private var channel: Int32
    private var extra: Int32
    private var buffered: [UInt8] = []
    private(set) var printed = 0
    let deadline: ContinuousClock.Instant
    /// How long it may run in all.
    let timeout: Duration
    let maxOutput: Int
    private var reaped: Int32?

    /// Starts `program` with `arguments`.
    /// - Parameters:
    ///   - extraInput: Written to descriptor 3, then closed (checkpassword's protocol).
    ///   - timeout: How long the helper may run in all.
    ///   - maxOutput: How many bytes it may print in all.
    init(
        program: String,
        arguments: [String],
        environment: [String],
        extraInput: [UInt8]?,
        timeout: Duration,
        maxOutput: Int
    ) throws(HelperError) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw HelperError("cannot make a socket for it: \(errorDescription())")
        }
        var third: [Int32] = [-1, -1]
        if extraInput != nil {
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &third) == 0 else {
                close(pair[0])
                close(pair[1])
                throw HelperError("cannot make a socket for it: \(errorDescription())")
            }
        }
        defer {
            close(pair[1])
            if third[1] >= 0 { close(third[1]) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        if third[1] >= 0 { posix_spawn_file_actions_adddup2(&actions, third[1], 3) }
        gk_spawn_add_close_from(&actions, third[1] >= 0 ? 4 : 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, program, &actions, &attributes, argv, envp)
        guard status == 0 else {
            close(pair[0])
            if third[0] >= 0 { close(third[0]) }
            throw HelperError("cannot be started: \(errorDescription(status))")
        }
        pid = child
        ChildProcesses.register(child)
        channel = pair[0]
        extra = third[0]
        deadline = .now + timeout
        self.timeout = timeout
        self.maxOutput = maxOutput
        if let extraInput, extra >= 0 {
            _ = send(extraInput, on: extra)
            close(extra)
            extra = -1
        }
    }

    deinit {
        if reaped == nil { stop() }
        if channel >= 0 { close(channel) }
    }

    /// Writes `bytes` to the helper's standard input; `false` if it is gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        send(bytes, on: channel)
    }

    private func send(_ bytes: [UInt8], on socket: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    /// What reading found.
    enum Read {
        case line([UInt8])
        case end
        case timedOut
        case tooMuch
        case cancelled
    }

    /// The next line the helper prints (without its line break), waiting at most until the deadline and
    /// stopping when `cancelled` says so (checked every 20 ms).
    func readLine(maxLine: Int, cancelled: () -> Bool) -> Read {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = Array(buffered[..<newline])
                buffered.removeSubrange(...newline)
                return .line(line)
            }
            if buffered.count > maxLine { return .tooMuch }
            switch readMore(cancelled: cancelled) {
            case nil: continue
            case let other?: return other
            }
        }
    }

    /// Everything the helper prints until it closes its output, bounded.
    func readAll(cancelled: () -> Bool) -> Read {
        while true {
            switch readMore(cancelled: cancelled) {
            case nil: continue
            case .end?: return .line(buffered)
            case let other?: return other
            }
        }
    }

    /// Reads once: `nil` when bytes arrived, else why not.
    private func readMore(cancelled: () -> Bool) -> Read? {
        if cancelled() { return .cancelled }
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return .timedOut }
        var poller = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
        let wait = Int32(
            min(20, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
        let ready = poll(&poller, 1, wait)
        if ready < 0 && errno != EINTR { return .end }
        guard ready > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(channel, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0 { return errno == EINTR || errno == EAGAIN ? nil : .end }
        if count == 0 { return .end }
        printed += count
        guard printed <= maxOutput else { return .tooMuch }
        buffered += chunk[..<count]
        return nil
    }

    /// Waits for the helper to exit, until the deadline, then stops it; its exit status, or `nil` if it had
    /// to be stopped or died by a signal.
    func finish(cancelled: () -> Bool) -> Int32? {
        while ContinuousClock.now < deadline && !cancelled() {
            if let status = exitStatusIfExited() { return status }
            usleep(5_000)
        }
        stop()
        return nil
    }

    /// The exit status once the helper has exited, killing what is left of its group first (without
    /// reaping the helper before that, so its process group id cannot be reused in between).
    private func exitStatusIfExited() -> Int32? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info._sifields._sigchld.si_pid == pid
        else { return nil }
        kill(-pid, SIGKILL)
        return reap()
    }

    /// Stops the whole group: a `grace` to exit by itself (a helper that has given its answer is about to),
    /// then SIGTERM and a second to go, then SIGKILL; then reaps the helper.
    func stop(grace: Duration = .zero) {
        guard reaped == nil else { return }
        if waitForExit(within: grace) {
            _ = exitStatusIfExited()
            return
        }
        kill(-pid, SIGTERM)
        _ = waitForExit(within: .seconds(1))
        kill(-pid, SIGKILL)
        _ = reap()
    }

    /// Whether the helper exits within `limit` (checked every millisecond; it is not reaped).
    private func waitForExit(within limit: Duration) -> Bool {
        let end = ContinuousClock.now + limit
        repeat {
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info._sifields._sigchld.si_pid == pid
            {
                return true
            }
            guard ContinuousClock.now < end else { return false }
            usleep(1_000)
        } while true
    }

    private func reap() -> Int32? {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, 0) } while result < 0 && errno == EINTR
        // Reaped by someone else (a tool stopping every child on its way out): no status, never success.
        let code: Int32? = result == pid && status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
        reaped = code ?? -1
        ChildProcesses.unregister(pid)
        return code
    }
}

/// A helper that could not be run.
struct HelperError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
