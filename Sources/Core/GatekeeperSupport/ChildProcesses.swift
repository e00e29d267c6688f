import CProcessSpawn

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The helper processes this process has started, so that none outlives it: a tool that exits — on
/// any path, a signal included — calls ``stopAll()`` first.
///
/// Every helper runs in a process group of its own, registered here while it runs. A helper may start
/// children of its own, and one of them may leave the group (`setsid`); a tool that calls
/// ``becomeSubreaper()`` first inherits such an escapee when its parent dies, and ``stopAll()`` then stops
/// it too, as a service manager does with a unit's cgroup.
package enum ChildProcesses {
    private static let groups = Locked<Set<pid_t>>([])
    /// Whether ``becomeSubreaper()`` was called: only then are children this registry does not know
    /// stopped too (a tool's own; a host application's children are its own business).
    private static let reaper = Locked(false)

    /// Makes this process the reaper of every process its children start, so that nothing a helper starts
    /// can escape to init. Cleared again by ``prepareForExec()``.
    package static func becomeSubreaper() {
        if gk_set_child_subreaper(1) == 0 { reaper.withLock { $0 = true } }
    }

    /// A helper started in process group `group` (its pid).
    package static func register(_ group: Int32) {
        groups.withLock { _ = $0.insert(group) }
    }

    /// The helper of `group` was stopped and reaped.
    package static func unregister(_ group: Int32) {
        groups.withLock { _ = $0.remove(group) }
    }

    /// Stops every helper group still running (SIGTERM, a second to go, then SIGKILL), then every other
    /// child this process has — an escapee a subreaper inherited — the same way, and reaps them all.
    /// Bounded: about two seconds at most.
    package static func stopAll() {
        let running = groups.withLock { $0 }
        let first = children()
        // Nothing started and nothing inherited: no descendant is left to arrive later either.
        if running.isEmpty && first.isEmpty { return }
        for group in running { kill(-group, SIGTERM) }
        for child in first where !running.contains(child) { kill(child, SIGTERM) }
        let deadline = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < deadline, !(running.allSatisfy { !groupExists($0) } && children().isEmpty) {
            reapExited()
            usleep(5_000)
        }
        for group in running { kill(-group, SIGKILL) }
        // Escapees arrive as their parents die: a few rounds, each killing and reaping what is there.
        for _ in 0..<50 {
            let left = children()
            if left.isEmpty { break }
            for child in left { kill(child, SIGKILL) }
            usleep(10_000)
            reapExited()
        }
        groups.withLock { $0.subtract(running) }
    }

    /// Before `exec`: no helper or escapee is left for the new program to inherit, and it is not a
    /// subreaper (the attribute survives `exec`).
    package static func prepareForExec() {
        stopAll()
        _ = gk_set_child_subreaper(0)
        reaper.withLock { $0 = false }
    }

    private static func groupExists(_ group: pid_t) -> Bool {
        kill(-group, 0) == 0 || errno == EPERM
    }

    /// Reaps every child that has exited, without waiting.
    private static func reapExited() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// This process's children when it is a subreaper: `/proc/self/task/*/children`, one list per thread.
    static func children() -> [pid_t] {
        guard reaper.withLock({ $0 }) else { return [] }
        let tasks = opendir("/proc/self/task")
        guard let tasks else { return [] }
        defer { closedir(tasks) }
        var found: [pid_t] = []
        while let entry = readdir(tasks) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let thread = Int32(name) else { continue }
            let file = open("/proc/self/task/\(thread)/children", O_RDONLY | O_CLOEXEC)
            guard file >= 0 else { continue }
            defer { close(file) }
            var bytes = [UInt8](repeating: 0, count: 4096)
            let count = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            guard count > 0 else { continue }
            for word in bytes[..<count].split(separator: UInt8(ascii: " ")) {
                if let pid = Int32(String(decoding: word, as: UTF8.self).filter(\.isNumber)), pid > 0 {
                    found.append(pid)
                }
            }
        }
        return found
    }
}
