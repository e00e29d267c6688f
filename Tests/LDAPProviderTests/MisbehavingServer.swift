import Foundation
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP listener on a loopback port that speaks no LDAP: it either accepts and never answers (a server
/// that hangs, or a firewall that swallows packets after the handshake), or accepts and closes at once (a
/// port that drops connections). Stopped when released.
final class MisbehavingServer: @unchecked Sendable {
    enum Behaviour { case silent, dropping }

    let port: Int
    var uri: String { "ldap://127.0.0.1:\(port)" }
    private let listener: Int32
    private let accepted = Locked<[Int32]>([])
    private let thread: Thread

    init(_ behaviour: Behaviour) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let accepted = accepted
        thread = Thread {
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 {
                    if errno == EINTR { continue }
                    return  // the listener was shut down
                }
                switch behaviour {
                case .dropping: close(connection)
                case .silent: accepted.withLock { $0.append(connection) }
                }
            }
        }
        thread.start()
    }

    /// Blocks until a connection has arrived (and, for a silent server, is being held open).
    func waitForConnection() -> Int32? {
        for _ in 0..<2000 {
            if let first = accepted.withLock({ $0.first }) { return first }
            usleep(10_000)
        }
        return nil
    }

    /// How many connections a silent server has accepted so far.
    var connections: Int { accepted.withLock { $0.count } }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for connection in accepted.withLock({ $0 }) { close(connection) }
    }
}
