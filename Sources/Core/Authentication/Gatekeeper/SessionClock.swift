#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Session time, as whole nanoseconds since the gatekeeper was created.
///
/// By default it reads `CLOCK_BOOTTIME` — the clock `ContinuousClock` reads on Linux: monotonic, never
/// wall time, and still counting while the machine is suspended. Times are kept as plain integers so the
/// signed-in check does no work on `ContinuousClock.Instant`, whose layout is opaque to this module and
/// costs more to copy than the whole check is allowed to take. A clock injected for tests is read
/// through `ContinuousClock.Instant` as given.
///
/// The origin's instant is held behind a reference, so that this struct, and the gatekeeper and state
/// that hold one, have a layout known when this module is compiled: a field of `ContinuousClock.Instant`
/// made every signed-in check look up layouts at run time.
struct SessionClock: Sendable {
    private let origin: Origin
    private let originNanoseconds: Int64
    /// Whether a clock was injected; the check reads this flag, never the closure, so that it copies and
    /// releases nothing.
    private let isInjected: Bool

    private final class Origin: Sendable {
        let instant: ContinuousClock.Instant
        /// The injected clock; unused when none was injected (``now()`` then reads `CLOCK_BOOTTIME`).
        let read: @Sendable () -> ContinuousClock.Instant
        init(_ instant: ContinuousClock.Instant, _ read: @escaping @Sendable () -> ContinuousClock.Instant) {
            self.instant = instant
            self.read = read
        }
    }

    init(_ injected: (@Sendable () -> ContinuousClock.Instant)?) {
        if let injected {
            origin = Origin(injected(), injected)
            originNanoseconds = 0
            isInjected = true
        } else {
            origin = Origin(.now, { .now })
            originNanoseconds = Self.bootTime()
            isInjected = false
        }
    }

    /// Nanoseconds since the origin.
    @inline(__always)
    func now() -> Int64 {
        guard isInjected else { return Self.bootTime() &- originNanoseconds }
        return injectedNow()
    }

    /// Out of line, so that a caller's own code never works with an instant (see above).
    @inline(never)
    private func injectedNow() -> Int64 {
        Self.nanoseconds(origin.instant.duration(to: origin.read()))
    }

    /// The `ContinuousClock` instant of a time from ``now()``.
    func instant(_ nanoseconds: Int64) -> ContinuousClock.Instant {
        origin.instant.advanced(by: .nanoseconds(nanoseconds))
    }

    /// `duration` in whole nanoseconds, saturating at the limits of `Int64`.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflowAgain { return seconds < 0 ? .min : .max }
        return total
    }

    /// `time + duration`, saturating instead of overflowing.
    static func adding(_ time: Int64, _ nanoseconds: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(nanoseconds)
        return overflow ? (nanoseconds > 0 ? .max : .min) : sum
    }

    @inline(__always)
    private static func bootTime() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }
}
