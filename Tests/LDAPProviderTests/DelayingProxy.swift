import Foundation
import TestSupport

/// A plain-LDAP proxy on loopback in front of a directory that holds back the answer to every bind as one
/// DN, by `delay`: a directory that checked a password at once and answers late, as a slow network or a
/// loaded server does. Reads whole LDAP messages (BER) both ways and passes everything else on at once.
/// It writes `held` beside its script the first time it holds an answer back. (TLS would hide the messages:
/// the provider speaks to it with `tls=none`.)
final class DelayingProxy {
    let uri: String
    let held: String
    private let process: Spawned

    init(to port: Int, delaying dn: String, by delay: Duration) throws {
        let directory = temporaryDirectory("gatekeeper-ldap-proxy")
        let script = directory + "/proxy.py"
        held = directory + "/held"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        process = try Spawned(
            URL(fileURLWithPath: "/usr/bin/python3"), [script, String(port), dn, String(seconds), held],
            mergingStandardError: true)
        var listening: Int?
        let deadline = ContinuousClock.now + .seconds(10)
        while listening == nil, ContinuousClock.now < deadline {
            listening = process.stdout.split(separator: "\n").first.flatMap { Int($0) }
            if listening == nil { usleep(10_000) }
        }
        guard let listening else {
            process.send(SIGKILL)
            _ = process.finish(timeout: .seconds(5))
            throw FixtureFailure("the LDAP proxy did not start: \(process.stdout)")
        }
        uri = "ldap://127.0.0.1:\(listening)"
    }

    /// Stops the proxy (SIGKILL: its threads may be holding an answer back) and reaps it.
    func stop() {
        process.send(SIGKILL)
        _ = process.finish(timeout: .seconds(5))
    }

    static let script = """
        import socket, sys, threading, time
        port, dn, delay, held = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3]), sys.argv[4]
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        print(listener.getsockname()[1], flush=True)

        def length(data, at):
            first = data[at]
            if first < 0x80:
                return first, at + 1
            count = first & 0x7F
            return int.from_bytes(data[at + 1:at + 1 + count], "big"), at + 1 + count

        def whole(data):
            try:
                size, start = length(data, 1)
            except IndexError:
                return None
            return start + size if len(data) >= start + size else None

        def parts(message):
            _, at = length(message, 1)
            size, at = length(message, at + 1)
            number = int.from_bytes(message[at:at + size], "big")
            at += size
            return number, message[at], at

        def bound_dn(message, at):
            _, at = length(message, at + 1)
            size, at = length(message, at + 1)
            at += size
            size, at = length(message, at + 1)
            return message[at:at + size]

        def pump(source, sink, upward, binds):
            data = b""
            while True:
                try:
                    chunk = source.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
                while True:
                    size = whole(data)
                    if size is None:
                        break
                    message, data = data[:size], data[size:]
                    try:
                        number, operation, at = parts(message)
                        if upward and operation == 0x60 and bound_dn(message, at) == dn:
                            binds.add(number)
                        elif not upward and operation == 0x61 and number in binds:
                            open(held, "w").close()
                            time.sleep(delay)
                    except (IndexError, ValueError):
                        pass
                    try:
                        sink.sendall(message)
                    except OSError:
                        return
            for end in (sink, source):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        while True:
            client, _ = listener.accept()
            server = socket.create_connection(("127.0.0.1", port))
            binds = set()
            threading.Thread(target=pump, args=(client, server, True, binds), daemon=True).start()
            threading.Thread(target=pump, args=(server, client, False, binds), daemon=True).start()
        """
}
