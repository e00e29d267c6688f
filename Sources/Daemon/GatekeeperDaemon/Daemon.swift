import Authentication
import CProcessSpawn
import GatekeeperHost
import GatekeeperSupport
import OfflineCache
import ProviderPlugins
import ToolSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The server: accepts the module's connections on its socket, gives each a thread that reads it and a task
/// that serves its one request (``serve(_:on:)``), bounded in all and per user; reads the service files
/// again on SIGHUP; refuses every login in flight and exits on SIGTERM.
final class Daemon: Sendable {
    let invocation: DaemonInvocation
    let registry: ProviderRegistry
    let output: ToolOutput
    /// The service files in use; a reload replaces the set, and logins in flight keep the one they began with.
    let stacks: Locked<ServiceStacks>

    /// The connections being served, counted in all and by the uid that made them.
    private struct Flight {
        var all = 0
        /// Connections by the user they count against (``DaemonConnection/Peer/countedUser``): a caller's uid,
        /// or the user who ran a setuid program.
        var byUser: [UInt32: Int] = [:]
        /// The logins of root's own processes (sshd, login) by whom they are for: `user NAME` (`PAM_RUSER`),
        /// else `host NAME` (`PAM_RHOST`).
        var byOrigin: [String: Int] = [:]
        var connections: [ObjectIdentifier: DaemonConnection] = [:]
        var stopping = false
        var rate: LoginRate
    }
    private let flight: Locked<Flight>
    /// A caller's requests for another account: audited once each 10 seconds, the rest in one record.
    let refusals = CallerThrottle()
    /// A caller's malformed requests: one line each 10 seconds on standard error, the rest in one line.
    let malformed = CallerThrottle()
    /// Logins refused for a caller's rate: one line each 10 seconds on standard error, the rest in one line.
    let overRate = CallerThrottle()
    /// Whose subordinate uids are whose, for each caller's share.
    let subordinates: SubordinateIDs
    /// The offline caches' checks while the directory answers, one task for each cache file of the stacks in use
    /// (``OfflineCachingProvider/checkInBackground()``): a reload starts them anew for the new stacks.
    private let backgroundChecks = Locked<[Task<Void, Never>]>([])

    init(
        _ invocation: DaemonInvocation, registry: ProviderRegistry, output: ToolOutput, stacks: ServiceStacks,
        subordinates: SubordinateIDs = SubordinateIDs()
    ) {
        self.invocation = invocation
        self.subordinates = subordinates
        self.registry = registry
        self.output = output
        self.stacks = Locked(stacks)
        flight = Locked(Flight(rate: LoginRate(perMinute: invocation.maxLoginRate)))
        checkInBackground(stacks)
    }

    /// Starts the background checks of `stacks`' offline caches — one for each cache file, however many services
    /// name it — and stops those of the stacks before.
    private func checkInBackground(_ stacks: ServiceStacks) {
        var files = Set<String>()
        let caches = stacks.services.sorted { $0.key < $1.key }
            .flatMap { OfflineCachingProvider.caches(in: $0.value.provider) }
            .filter { files.insert($0.filePath).inserted }
        let started = caches.map { cache in Task.detached { await cache.checkInBackground() } }
        let stopped = backgroundChecks.withLock { tasks in
            defer { tasks = started }
            return tasks
        }
        for task in stopped { task.cancel() }
    }

    /// The service files read again; a set that cannot be used leaves the one in use, and says why.
    func reload() {
        do throws(DaemonError) {
            let loaded = try ServiceStacks.load(
                from: invocation.configurationDirectory, stateDirectory: invocation.stateDirectory, registry: registry,
                report: { [output] in output.error("gatekeeperd: \($0)") })
            stacks.withLock { $0 = loaded }
            checkInBackground(loaded)
            output.error("gatekeeperd: read \(loaded.services.count) service files again")
        } catch {
            output.error("gatekeeperd: the service files were not read again, the ones in use are kept: \(error)")
        }
    }

    // MARK: Accepting

    /// Accepts connections on `listener` until `stop` becomes readable; then refuses every login in flight
    /// and returns once they are answered (or after 5 s).
    func serve(listener: Int32, stop: Int32) {
        while true {
            var pollers = [
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&pollers, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                output.error("gatekeeperd: poll: \(errorDescription())")
                break
            }
            if pollers[1].revents != 0 { break }
            let client = gk_accept_cloexec(listener)
            guard client >= 0 else {
                // Out of descriptors (a flood): wait a moment rather than spin; the kernel keeps the backlog.
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM { usleep(100_000) }
                continue
            }
            // Counted from the moment it connects, by who it is: a user's flood of connections that send nothing
            // holds at most its own share of threads, never root's logins.
            guard
                let connection = DaemonConnection(
                    descriptor: client, answerTimeout: invocation.answerTimeout, subordinates: subordinates)
            else {
                close(client)
                continue
            }
            if let refusal = admit(connection) {
                // Refused, never "not there": a login the daemon will not take must not fall through to the
                // program's next module (pam_unix) under an admin's `authinfo_unavail=ignore`.
                connection.send(.message(refusal, isError: true))
                connection.send(.result(.authenticationError, canonicalUser: nil))
                close(client)
            } else if !DetachedThread.start({ self.handle(connection) }) {
                release(connection)
                close(client)
            }
        }
        stopAll()
    }

    /// Ends every login in flight and waits for their answers to go out (5 s at most).
    private func stopAll() {
        for task in backgroundChecks.withLock({ $0 }) { task.cancel() }
        let connections = flight.withLock { flight in
            flight.stopping = true
            return Array(flight.connections.values)
        }
        for connection in connections { connection.end(.daemonStopping) }
        let deadline = ContinuousClock.now + .seconds(5)
        while flight.withLock({ $0.all }) > 0, ContinuousClock.now < deadline { usleep(10_000) }
    }

    // MARK: One connection

    /// One client, on its own thread: its request read, served, and the socket closed.
    private func handle(_ connection: DaemonConnection) {
        defer {
            release(connection)
            close(connection.descriptor)
        }
        let request: DaemonRequest
        switch connection.readRequest(timeout: invocation.requestTimeout) {
        case .success(let read): request = read
        case .failure(.protocolError(let why)):
            let (pid, uid) = (connection.peer.pid, connection.peer.uid)
            malformed.note(
                uid,
                write: { carried in
                    output.error(
                        "gatekeeperd: a request from pid \(pid) (uid \(uid)) refused: \(why)"
                            + (carried > 0 ? " (\(carried) more malformed requests of this uid before it)" : ""))
                },
                summarize: { [output] leftOut in
                    output.error("gatekeeperd: \(leftOut) more malformed requests of uid \(uid) in 10 seconds refused")
                })
            return
        case .failure: return
        }
        // A program running as root serves everyone: its logins are bounded by whom each is for, so that one
        // user's pile of unanswered sudo prompts cannot hold every login of the host.
        let origin =
            connection.peer.uid == 0
            ? [request.requestingUser, request.remoteHost].compactMap { $0 }
                .first(where: { !$0.isEmpty }) : nil
        if let refusal = admit(connection, origin: origin) {
            connection.send(.message(refusal, isError: true))
            connection.send(.result(request.operation.refusal, canonicalUser: nil))
            return
        }
        defer { if let origin { release(origin: origin) } }
        let task = Task {
            let (result, canonical) = await self.serve(request, on: connection)
            connection.finish(result, canonicalUser: canonical)
        }
        connection.watch(task)
    }

    /// Counts `connection` in flight from the moment it connects, or says why it cannot be: the daemon is
    /// stopping, or too many connections are open in all or for the user they count against (a setuid
    /// program's, against the user who ran it; those of root's own processes, sshd's, only in all).
    private func admit(_ connection: DaemonConnection) -> String? {
        let user = connection.peer.countedUser
        let refusal = flight.withLock { flight -> Refusal? in
            if flight.stopping { return .busy("gatekeeperd is stopping.") }
            if flight.all >= invocation.maxLogins { return .busy("gatekeeperd is busy: too many logins at once.") }
            if let user, flight.byUser[user, default: 0] >= invocation.maxLoginsPerUser {
                return .busy("gatekeeperd: too many logins of this user at once.")
            }
            flight.all += 1
            if let user { flight.byUser[user, default: 0] += 1 }
            flight.connections[ObjectIdentifier(connection)] = connection
            return nil
        }
        return refusal.map { explain($0, user: user ?? connection.peer.uid, pid: connection.peer.pid) }
    }

    /// Counts a request of `connection` — a root caller's for `origin` — or says why it cannot be taken: a
    /// root caller's logins in flight for `origin` are over the share, or the caller's rate (the user's it
    /// counts against, else `origin`'s) is spent. Read once the request is, so the refusal is in its call's
    /// words.
    private func admit(_ connection: DaemonConnection, origin: String?) -> String? {
        // The user a setuid program was run by, whatever the program says the login is for; root's own
        // programs (sshd) by whom or where from.
        let caller: LoginRate.Caller? = connection.peer.countedUser.map { .user($0) } ?? origin.map { .origin($0) }
        let refusal = flight.withLock { flight -> Refusal? in
            if let origin, flight.byOrigin[origin, default: 0] >= invocation.maxLoginsPerUser {
                return .busy("gatekeeperd: too many logins of this user at once.")
            }
            if let caller, let wait = flight.rate.take(caller) { return .overRate(wait) }
            if let origin { flight.byOrigin[origin, default: 0] += 1 }
            return nil
        }
        let user = connection.peer.countedUser ?? connection.peer.uid
        return refusal.map {
            explain($0, user: user, pid: connection.peer.pid, origin: connection.peer.countedUser == nil ? origin : nil)
        }
    }

    /// Why a login is not taken.
    private enum Refusal {
        case busy(String)
        /// The caller's ``LoginRate`` is spent; it may start another after this long.
        case overRate(Duration)
    }

    /// What a caller refused is told; one over its rate is reported on standard error once each 10 seconds
    /// for its uid.
    private func explain(_ refusal: Refusal, user: UInt32, pid: Int32, origin: String? = nil) -> String {
        let wait: Duration
        switch refusal {
        case .busy(let message): return message
        case .overRate(let after): wait = after
        }
        let whose = origin.map { "for \(TextSafety.escaped($0)) " } ?? ""
        overRate.note(
            user,
            write: { [output] carried in
                output.error(
                    "gatekeeperd: a login from pid \(pid) (uid \(user)) \(whose)refused: over --max-login-rate"
                        + (carried > 0 ? " (\(carried) more of this uid before it)" : ""))
            },
            summarize: { [output] leftOut in
                output.error(
                    "gatekeeperd: \(leftOut) more logins of uid \(user) over --max-login-rate in 10 seconds refused")
            })
        let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
        return "gatekeeperd: too many logins of this user; try again in \(seconds) s."
    }

    private func release(origin: String) {
        flight.withLock { flight in
            flight.byOrigin[origin, default: 1] -= 1
            if flight.byOrigin[origin] == 0 { flight.byOrigin[origin] = nil }
        }
    }

    private func release(_ connection: DaemonConnection) {
        let user = connection.peer.countedUser
        flight.withLock { flight in
            flight.all -= 1
            if let user {
                flight.byUser[user, default: 1] -= 1
                if flight.byUser[user] == 0 { flight.byUser[user] = nil }
            }
            flight.connections[ObjectIdentifier(connection)] = nil
        }
    }
}

/// A thread that runs one closure and ends, joined by nobody.
enum DetachedThread {
    /// `false` when the system refuses a thread.
    static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(
            &thread, &attributes,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return false
        }
        return true
    }
}
