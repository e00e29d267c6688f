import Authentication
import BlockingPools
import CProcessSpawn
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One client of the daemon: a connected socket, who is at the other end (from the kernel, `SO_PEERCRED`,
/// never from the client), and the conversation of the one request it carries.
///
/// A thread of its own reads the socket for the connection's whole life (``watch(_:)``): the answer to
/// a question, a cancel, or the end of the connection — which cancels the login at once, whatever it is
/// waiting for. The login's task writes questions, messages and the result; one frame at a time.
final class DaemonConnection: Sendable {
    /// Who connected, as the kernel saw them when they did.
    struct Peer: Sendable, Hashable {
        let pid: Int32
        let uid: UInt32
        let gid: UInt32
        /// For a caller running as root, the real uid of its process (`/proc/PID/status`): the user who ran a
        /// setuid program (sudo, su, chfn, passwd). `nil` when it cannot be read, or the caller is not root.
        var realUID: UInt32? = nil

        /// Whom the caller's connections count against: its uid, or for a setuid program the user who ran it
        /// — a subordinate uid (`/etc/subuid`) as the user it was handed to; `nil` for a process of root's own
        /// (sshd, login), bounded only in all and by whom each login is for. Taken once, when it connects.
        private(set) var countedUser: UInt32? = nil

        init(pid: Int32, uid: UInt32, gid: UInt32, realUID: UInt32? = nil, subordinates: SubordinateIDs? = nil) {
            (self.pid, self.uid, self.gid, self.realUID) = (pid, uid, gid, realUID)
            let user = uid != 0 ? uid : realUID.flatMap { $0 != 0 ? $0 : nil }
            countedUser = user.map { subordinates?.owner(of: $0) ?? $0 }
        }
    }

    /// Why a connection ended before its request did.
    enum Ending: Error, Equatable {
        /// The module cancelled (its program's conversation failed) or went away.
        case clientLeft
        /// The client broke the protocol (a malformed or oversized frame, an answer nobody asked for).
        case protocolError(String)
        /// A question went unanswered for longer than the daemon waits.
        case timedOut
        /// The daemon is stopping: every login in flight is refused (the daemon was there: no next module judges
        /// a login it was asked for).
        case daemonStopping
    }

    let descriptor: Int32
    let peer: Peer
    /// How long a question may wait for its answer.
    let answerTimeout: Duration

    private struct State: ~Copyable {
        /// The task serving the request, once started.
        var task: Task<Void, Never>?
        /// Since when a question waits for its answer (set before the question goes out, so an answer that
        /// comes at once finds it), the login waiting for it, and an answer that came before the login waited.
        var askedAt: ContinuousClock.Instant?
        var waiting: CheckedContinuation<Secret?, Never>?
        var early: Secret?
        /// Set once: why the connection ended before its request did.
        var ending: Ending?
        /// When the daemon last wrote to the client (for keepalives).
        var lastSent = ContinuousClock.now
        /// Whether the request's task has sent its result (or given up).
        var served = false
    }

    private let state = Locked(State())
    /// One frame at a time, whoever writes it.
    private let writing = Locked(())
    /// Posted once the request's task has sent its result (or given up).
    private let served = Signal()

    /// Keepalives go out this often while a login works without a question.
    static let keepaliveInterval: Duration = .seconds(5)

    /// The client on `descriptor`, as the kernel names it; `nil` when it cannot.
    init?(descriptor: Int32, answerTimeout: Duration, subordinates: SubordinateIDs? = nil) {
        var (pid, uid, gid): (Int32, UInt32, UInt32) = (0, 0, 0)
        guard gk_peer_credentials(descriptor, &pid, &uid, &gid) == 0 else { return nil }
        self.descriptor = descriptor
        peer = Peer(
            pid: pid, uid: uid, gid: gid, realUID: uid == 0 ? Self.realUID(of: pid) : nil, subordinates: subordinates)
        self.answerTimeout = answerTimeout
    }

    /// The real uid of process `pid`, from the first field of `Uid:` in `/proc/PID/status`.
    static func realUID(of pid: Int32) -> UInt32? {
        let descriptor = open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        for line in buffer[..<count].split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Uid:".utf8)) {
            let fields = line.dropFirst(4).split(whereSeparator: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: " ") }
            )
            return fields.first.flatMap { UInt32(String(decoding: $0, as: UTF8.self)) }
        }
        return nil
    }

    // MARK: Reading

    /// The connection's request: the first frame, which must come within `timeout`.
    func readRequest(timeout: Duration) -> Result<DaemonRequest, Ending> {
        switch readFrame(deadline: .now + timeout) {
        case .success(.request(let request)): .success(request)
        case .success: .failure(.protocolError("the first message is not a request"))
        case .failure(let ending): .failure(ending)
        }
    }

    /// One frame, read whole before `deadline`: a client that sends half a frame and stops is cut off.
    private func readFrame(deadline: ContinuousClock.Instant) -> Result<DaemonMessage, Ending> {
        var header = [UInt8](repeating: 0, count: 4)
        if let ending = readExactly(&header, deadline: deadline) { return .failure(ending) }
        let length: Int
        do throws(DaemonProtocolError) {
            length = try DaemonMessage.frameLength(header)
        } catch {
            return .failure(.protocolError(error.description))
        }
        var payload = [UInt8](repeating: 0, count: length)
        defer { Secret.wipe(&payload) }
        if let ending = readExactly(&payload, deadline: deadline) { return .failure(ending) }
        do throws(DaemonProtocolError) {
            return .success(try DaemonMessage.parse(payload))
        } catch {
            return .failure(.protocolError(error.description))
        }
    }

    /// Fills `buffer`, or says why it could not before `deadline`.
    private func readExactly(_ buffer: inout [UInt8], deadline: ContinuousClock.Instant) -> Ending? {
        var filled = 0
        while filled < buffer.count {
            guard waitReadable(until: deadline) else { return .timedOut }
            let count = buffer.withUnsafeMutableBytes { bytes in
                recv(descriptor, bytes.baseAddress! + filled, bytes.count - filled, 0)
            }
            if count > 0 {
                filled += count
            } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                return .clientLeft
            }
        }
        return nil
    }

    /// Whether the socket has something to read (or has ended) before `deadline`.
    private func waitReadable(until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: Self.milliseconds(left) + 1))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }  // recv says what is wrong.
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Reads the socket while `task` serves the request: delivers answers, ends the login when the client
    /// cancels, leaves, breaks the protocol or stops answering, and keeps the client told the daemon is
    /// alive. Returns once the task has sent its result (or given up); the caller then closes the socket.
    func watch(_ task: Task<Void, Never>) {
        let started = state.withLock { state -> Bool in
            state.task = task
            return state.ending == nil
        }
        if !started { task.cancel() }
        while !state.withLock({ $0.served }) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 500)
            if ready > 0 {
                switch readFrame(deadline: .now + .seconds(10)) {
                case .success(.answer(let answer)):
                    if !deliver(answer) { end(.protocolError("an answer to no question")) }
                case .success(.cancel): end(.clientLeft)
                case .success: end(.protocolError("a message the module does not send after its request"))
                case .failure(let ending): end(ending)
                }
                if state.withLock({ $0.ending != nil }) { break }
            } else {
                tick()
            }
        }
        served.wait()
    }

    /// Once a while: an unanswered question past its time ends the login; a silent login sends a keepalive.
    private func tick() {
        let now = ContinuousClock.now
        let (overdue, idle) = state.withLock { state in
            (
                state.askedAt.map { $0.duration(to: now) > answerTimeout } ?? false,
                state.askedAt == nil && state.lastSent.duration(to: now) >= Self.keepaliveInterval
            )
        }
        if overdue {
            end(.timedOut)
        } else if idle {
            _ = send(.keepalive)
        }
    }

    /// Hands `answer` to the question asked; `false` when none is.
    private func deliver(_ answer: Secret) -> Bool {
        let (asked, waiting) = state.withLock { state -> (Bool, CheckedContinuation<Secret?, Never>?) in
            guard state.askedAt != nil else { return (false, nil) }
            state.askedAt = nil
            defer { state.waiting = nil }
            if state.waiting == nil { state.early = answer }
            return (true, state.waiting)
        }
        waiting?.resume(returning: answer)
        return asked
    }

    /// Ends the connection's login for `ending` (the first reason given stays): the question waiting gets
    /// no answer and the task is cancelled.
    func end(_ ending: Ending) {
        let (waiting, task) = state.withLock { state in
            if state.ending == nil { state.ending = ending }
            defer { state.waiting = nil }
            return (state.waiting, state.task)
        }
        waiting?.resume(returning: nil)
        task?.cancel()
    }

    /// Why the connection ended before its request did, if it has.
    var ending: Ending? { state.withLock { $0.ending } }

    // MARK: Writing

    /// Writes one frame; `false` when the client cannot take it (gone, or not reading for 10 s).
    @discardableResult
    func send(_ message: DaemonMessage) -> Bool {
        var frame = message.frame()
        defer { Secret.wipe(&frame) }
        let sent = writing.withLock { _ in
            var written = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while written < frame.count {
                var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero,
                    poll(&poller, 1, Int32(clamping: Self.milliseconds(left) + 1)) >= 0 || errno == EINTR
                else { return false }
                let count = frame.withUnsafeBytes { bytes in
                    Glibc.send(
                        descriptor, bytes.baseAddress! + written, bytes.count - written,
                        Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if count > 0 {
                    written += count
                } else if count < 0 && errno != EINTR && errno != EAGAIN {
                    return false
                }
            }
            return true
        }
        if sent { state.withLock { $0.lastSent = .now } }
        return sent
    }

    /// Asks the person `prompt` through the module, and waits for the answer.
    /// - Throws: ``AuthError/cancelled`` when the connection ends first or the task is cancelled.
    func ask(_ prompt: String, hidden: Bool) async throws(AuthError) -> Secret {
        let open = state.withLock { state -> Bool in
            guard state.ending == nil else { return false }
            state.askedAt = .now
            state.early = nil
            return true
        }
        guard open, send(.question(prompt, hidden: hidden)) else {
            end(.clientLeft)
            throw .cancelled
        }
        let answer = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Secret?, Never>) in
                let ready = state.withLock { state -> Secret?? in
                    if let early = state.early.take() { return .some(early) }
                    guard state.ending == nil, !Task.isCancelled else { return .some(nil) }
                    state.waiting = continuation
                    return .none
                }
                if case .some(let answer) = ready { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiting = state.withLock { state in
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(returning: nil)
        }
        guard let answer else { throw .cancelled }
        return answer
    }

    /// Sends the request's result (unless the client has gone or broke the protocol) and lets ``watch(_:)``
    /// return.
    func finish(_ result: PAMResult, canonicalUser: String? = nil) {
        // A client still there hears the answer; a daemon stopping answers too (a refusal).
        if ending == nil || ending == .daemonStopping { send(.result(result, canonicalUser: canonicalUser)) }
        state.withLock { $0.served = true }
        served.post()
    }
}
