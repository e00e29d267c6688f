import GatekeeperSupport

/// Bounds how much one caller can make the daemon write about it: the first event of a caller's uid is
/// written at once; those in the 10 seconds after it, in one summary when the 10 seconds are over. A flood
/// fills no log, and no event goes unrecorded. The table holds only recent callers.
final class CallerThrottle: Sendable {
    let window: Duration
    /// Each uid's last written event and the events left out since.
    private let callers = Locked<[UInt32: (at: ContinuousClock.Instant, leftOut: Int)]>([:])

    init(window: Duration = .seconds(10)) { self.window = window }

    /// Notes an event of `uid`: `write` is called at once with how many of the uid's events a window before
    /// left out unsummarised (0 mostly), or the event is left out and `summarize` called once with the count
    /// when its window is over.
    func note(
        _ uid: UInt32, write: (_ carried: Int) -> Void, summarize: @escaping @Sendable (_ leftOut: Int) -> Void
    ) {
        let now = ContinuousClock.now
        let window = window
        let (written, carried, firstLeftOut) = callers.withLock {
            callers -> (Bool, Int, ContinuousClock.Instant?) in
            callers = callers.filter { $0.value.at.duration(to: now) < window || $0.value.leftOut > 0 }
            guard let last = callers[uid], last.at.duration(to: now) < window else {
                let carried = callers[uid]?.leftOut ?? 0
                callers[uid] = (now, 0)
                return (true, carried, nil)
            }
            callers[uid]?.leftOut += 1
            return (false, 0, last.leftOut == 0 ? last.at : nil)
        }
        if written {
            write(carried)
        } else if let windowStart = firstLeftOut {
            // The events left out are summarised once their window is over, whether or not another comes.
            Task { [callers] in
                try? await Task.sleep(for: window)
                let leftOut = callers.withLock { callers -> Int in
                    // An event after the window, written meanwhile, carried the count already.
                    guard let entry = callers[uid], entry.at == windowStart else { return 0 }
                    callers[uid] = nil
                    return entry.leftOut
                }
                if leftOut > 0 { summarize(leftOut) }
            }
        }
    }
}
