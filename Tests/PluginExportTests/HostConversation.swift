import CGatekeeperPlugin
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A host's side of one login: the `gk_conversation` the plugin's callbacks reach, answering from a
/// script, recording what it was asked and shown, and cancelled when the test says.
final class HostConversation: @unchecked Sendable {
    // @unchecked: reached from the plugin's threads through an opaque pointer; its state is behind locks,
    // and the answers it handed out are freed only when it is.

    /// How the host answers one question.
    enum Reply: Sendable {
        /// GK_OK with these bytes (NUL-terminated), and their length.
        case bytes([UInt8])
        /// GK_OK with these bytes, claiming `length` of them (a host that lies).
        case claiming(length: Int, [UInt8])
        /// GK_OK, and no answer at all.
        case noAnswer
        /// This status, and no answer.
        case status(Int32)
        /// Blocks until the login is cancelled, then answers GK_CANCELLED (as a person at a terminal
        /// who never answers, until the host cancels).
        case untilCancelled
        /// Blocks until the login is cancelled, then takes a while longer before it answers GK_CANCELLED
        /// (a host whose prompt notices the cancellation at its next poll).
        case lingeringAfterCancel

        static func text(_ text: String) -> Reply { .bytes(Array(text.utf8)) }
        static let cancelled = Reply.status(Int32(GK_CANCELLED.rawValue))
        static let failed = Reply.status(Int32(GK_FAILED.rawValue))
    }

    /// A question asked or a message shown, with its style.
    enum Event: Hashable, Sendable {
        case asked(Int32, String)
        case shown(Int32, String)
    }

    private let script: Locked<[Reply]>
    private let recorded = Locked<[Event]>([])
    private let cancelledFlag = Locked(false)
    private let handedOut = Locked<[Allocation]>([])
    private let inside = Locked(0)

    /// An answer handed to the plugin, wiped and freed with the conversation.
    private struct Allocation: @unchecked Sendable {
        // @unchecked: the memory is touched only by the plugin during the login, and freed after it.
        let buffer: UnsafeMutableRawBufferPointer
    }

    /// When the script runs out, the next question is answered GK_CANCELLED.
    init(_ replies: Reply...) { script = Locked(replies) }

    deinit {
        for answer in handedOut.withLock({ $0 }) {
            answer.buffer.initializeMemory(as: UInt8.self, repeating: 0)
            answer.buffer.deallocate()
        }
    }

    /// Everything asked and shown, in order.
    var events: [Event] { recorded.withLock { $0 } }

    var isCancelled: Bool { cancelledFlag.withLock { $0 } }

    /// How many of the host's callbacks are running now.
    var callbacksRunning: Int { inside.withLock { $0 } }

    /// What the host passes to `authenticate`.
    var conversation: gk_conversation {
        gk_conversation(
            abi_version: UInt32(GK_PLUGIN_ABI_VERSION), size: UInt32(MemoryLayout<gk_conversation>.size),
            context: context, ask: hostAsk, show: hostShow, is_cancelled: hostIsCancelled)
    }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Cancels the login, as a host does: marks it, then calls the plugin's `cancel` with this context.
    func cancel(_ instance: ExportedInstance) {
        cancelledFlag.withLock { $0 = true }
        ExportedPlugin.table.entry.cancel(instance.pointer, context)
    }

    /// Marks the login cancelled without calling the plugin (what `is_cancelled` then answers).
    func markCancelled() { cancelledFlag.withLock { $0 = true } }

    fileprivate func ask(
        _ style: Int32, _ prompt: String, _ answer: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
        _ length: UnsafeMutablePointer<Int>?
    ) -> Int32 {
        recorded.withLock { $0.append(.asked(style, prompt)) }
        inside.withLock { $0 += 1 }
        defer { inside.withLock { $0 -= 1 } }
        let reply = script.withLock { $0.isEmpty ? Reply.cancelled : $0.removeFirst() }
        switch reply {
        case .status(let status):
            return status
        case .noAnswer:
            answer?.pointee = nil
            length?.pointee = 0
            return Int32(GK_OK.rawValue)
        case .bytes(let bytes):
            return give(bytes, claiming: bytes.count, answer, length)
        case .claiming(let claimed, let bytes):
            return give(bytes, claiming: claimed, answer, length)
        case .untilCancelled:
            _ = eventually { isCancelled }
            return Int32(isCancelled ? GK_CANCELLED.rawValue : GK_FAILED.rawValue)
        case .lingeringAfterCancel:
            _ = eventually { isCancelled }
            usleep(300_000)
            return Int32(isCancelled ? GK_CANCELLED.rawValue : GK_FAILED.rawValue)
        }
    }

    private func give(
        _ bytes: [UInt8], claiming claimed: Int, _ answer: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
        _ length: UnsafeMutablePointer<Int>?
    ) -> Int32 {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 1, alignment: 1)
        copy.copyBytes(from: bytes)
        copy[bytes.count] = 0
        let allocation = Allocation(buffer: copy)
        handedOut.withLock { $0.append(allocation) }
        answer?.pointee = UnsafePointer(copy.baseAddress!.assumingMemoryBound(to: CChar.self))
        length?.pointee = claimed
        return Int32(GK_OK.rawValue)
    }

    fileprivate func show(_ style: Int32, _ message: String) -> Int32 {
        recorded.withLock { $0.append(.shown(style, message)) }
        return Int32(GK_OK.rawValue)
    }
}

private func host(_ context: UnsafeMutableRawPointer?) -> HostConversation? {
    context.map { Unmanaged<HostConversation>.fromOpaque($0).takeUnretainedValue() }
}

private func text(_ pointer: UnsafePointer<CChar>?) -> String {
    pointer.map { String(cString: $0) } ?? "<NULL>"
}

private let hostAsk:
    @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafePointer<CChar>?>?,
        UnsafeMutablePointer<Int>?
    ) -> Int32 = { context, style, prompt, answer, length in
        host(context)?.ask(style, text(prompt), answer, length) ?? Int32(GK_FAILED.rawValue)
    }

private let hostShow: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Int32 = {
    context, style, message in
    host(context)?.show(style, text(message)) ?? Int32(GK_FAILED.rawValue)
}

private let hostIsCancelled: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { context in
    host(context)?.isCancelled == false ? 0 : 1
}

/// The styles, as the ABI numbers them.
enum Style {
    static let hidden = Int32(GK_ASK_HIDDEN.rawValue)
    static let visible = Int32(GK_ASK_VISIBLE.rawValue)
    static let info = Int32(GK_SHOW_INFO.rawValue)
    static let error = Int32(GK_SHOW_ERROR.rawValue)
}
