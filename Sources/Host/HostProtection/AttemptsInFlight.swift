import Authentication
import CUnicodeFold
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The attempts a process counted in tally files and is still checking, by tally, time and tag: while they
/// fill an account's `deny` slots, another attempt of the process waits rather than is refused as locked
/// (``LockoutAttempt/waiting(_:)``), and a success leaves their records standing. One table serves every
/// ``FaillockStore`` of the process (``process``), so a reload that opens the stores anew, or one directory
/// named by two paths, still knows them; another process's attempts count as the failures pam_faillock takes
/// them for, and so does an entry no check ended within a quarter of an hour.
public final class AttemptsInFlight: Sendable {
    struct Entry: Hashable {
        var tally: String
        var time: Int64
        var tag: UInt16
    }

    /// The process's own.
    public static let process = AttemptsInFlight()
    /// How long, in seconds, an entry holds its slot at most, whatever became of its attempt.
    static let longestCheck: Int64 = 900
    private let entries = Locked<Set<Entry>>([])

    /// A table of its own: for a simulation of several processes in one.
    public init() {}

    func enter(_ entry: Entry, now: Int64) {
        entries.withLock { set in
            set = set.filter { now &- $0.time < Self.longestCheck }
            set.insert(entry)
        }
    }

    func leave(_ entry: Entry) {
        entries.withLock { _ = $0.remove(entry) }
    }

    func entries(of tally: String, now: Int64) -> Set<Entry> {
        entries.withLock { set in set.filter { $0.tally == tally && now &- $0.time < Self.longestCheck } }
    }
}
