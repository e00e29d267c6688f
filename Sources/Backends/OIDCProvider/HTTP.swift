import Authentication
import BlockingPools
import COIDCLoader
import GatekeeperSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Requests to the identity provider, through libcurl on a thread of their own: TLS verified always,
/// plain `http://` only where the configuration allowed it for a loopback address, redirects never
/// followed, every answer bounded in size and the whole request in time. Cancelling the task stops the
/// request in progress within milliseconds (libcurl's poll is woken), so nothing is left in flight.
struct HTTPClient: Sendable {
    var caFile: String?
    var allowsPlainHTTP: Bool
    var timeout: Duration
    /// Where the requests run.
    var threads: BlockingPool = .shared
    /// The longest answer read; a longer one is a failure of its own.
    var maxBody = 1 << 20

    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var contentType: String

        /// The body as a JSON object, when it is one.
        var object: [String: JSONValue]? { JSONValue.object(parsing: body) }
    }

    /// Why a request got no answer. Descriptions name the host and libcurl's reason, never a body.
    enum Failure: Error, Sendable, Equatable {
        case unreachable(String)
        case tls(String)
        case timedOut
        case tooLarge(Int)
        case refused(String)
        case failed(String)
        case cancelled

        var description: String {
            switch self {
            case .unreachable(let why): "cannot be reached (\(why))"
            case .tls(let why): "failed TLS (\(why))"
            case .timedOut: "did not answer in time"
            case .tooLarge(let bound): "sent an answer longer than \(bound) bytes"
            case .refused(let why): why
            case .failed(let why): "could not be asked (\(why))"
            case .cancelled: "was not asked: the login was cancelled"
            }
        }
    }

    /// A value of a form: text, or a secret (a password, the client's secret) wiped once sent.
    enum FormValue {
        case text(String)
        case secret(Secret)
    }

    func get(_ url: String, bearer: String? = nil) async -> Result<Answer, Failure> {
        var headers = ["Accept: application/json"]
        if let bearer { headers.append("Authorization: Bearer \(bearer)") }
        return await send(url, body: nil, headers: headers)
    }

    /// POSTs `form` as `application/x-www-form-urlencoded`, with HTTP Basic authentication when
    /// `basic` holds the client's id and secret.
    func post(_ url: String, form: [(String, FormValue)], basic: (String, Secret)? = nil) async -> Result<
        Answer, Failure
    > {
        var body = Self.encoded(form)
        defer { Secret.wipe(&body) }
        var authorization: [UInt8] = []
        defer { Secret.wipe(&authorization) }
        let headers = ["Accept: application/json", "Content-Type: application/x-www-form-urlencoded"]
        if let (id, secret) = basic {
            // RFC 6749 §2.3.1: each form-encoded, then joined by a colon.
            var pair = Self.formEncoded(id.utf8) + [UInt8(ascii: ":")]
            secret.withUnsafeBytes { pair += Self.formEncoded($0) }
            authorization = Array("Authorization: Basic ".utf8) + Array(Self.base64(pair).utf8)
            Secret.wipe(&pair)
        }
        return await send(url, body: body, headers: headers, secretHeader: authorization.isEmpty ? nil : authorization)
    }

    private func send(_ url: String, body: [UInt8]?, headers: [String], secretHeader: [UInt8]? = nil) async
        -> Result<Answer, Failure>
    {
        var problem: UnsafePointer<CChar>?
        guard gatekeeper_oidc_load(&problem) == 0 else {
            return .failure(.failed(problem.map { String(cString: $0) } ?? "libcurl cannot be loaded"))
        }
        let transfer = Transfer()
        guard transfer.handle != nil else { return .failure(.failed("libcurl could not make a request")) }
        let bridge = BlockingBridge<Result<Answer, Failure>>()
        bridge.onCancel { transfer.cancel() }
        let client = self
        let outcome = await bridge.run(on: threads) { _ in
            client.perform(transfer, url, body, headers, secretHeader)
        }
        return outcome ?? .failure(.cancelled)
    }

    private func perform(
        _ transfer: Transfer, _ url: String, _ body: [UInt8]?, _ headers: [String], _ secretHeader: [UInt8]?
    ) -> Result<Answer, Failure> {
        // C strings of the header lines, alive for the call; the secret one is wiped after.
        var lines: [UnsafeMutablePointer<CChar>?] = headers.map { strdup($0) }
        var secretLine: UnsafeMutablePointer<CChar>?
        if let secretHeader {
            let line = UnsafeMutablePointer<CChar>.allocate(capacity: secretHeader.count + 1)
            for (index, byte) in secretHeader.enumerated() { line[index] = CChar(bitPattern: byte) }
            line[secretHeader.count] = 0
            secretLine = line
            lines.append(line)
        }
        defer {
            for case let line? in lines where line != secretLine { free(line) }
            if let secretLine, let secretHeader {
                memset(secretLine, 0, secretHeader.count)
                secretLine.deallocate()
            }
        }
        var response = gk_http_response()
        let status: gk_http_status = url.withCString { url in
            caFile.withOptionalCString { ca in
                lines.map { UnsafePointer($0) }.withUnsafeBufferPointer { lineBuffer in
                    func run(_ bodyPointer: UnsafePointer<UInt8>?, _ length: Int) -> gk_http_status {
                        var request = gk_http_request(
                            url: url, body: bodyPointer, body_length: length, headers: lineBuffer.baseAddress,
                            header_count: lineBuffer.count, ca_file: ca, allow_plain_http: allowsPlainHTTP ? 1 : 0,
                            timeout_ms: Int(
                                timeout.components.seconds * 1000 + timeout.components.attoseconds
                                    / 1_000_000_000_000_000),
                            max_body: maxBody)
                        return gk_http_transfer_perform(transfer.handle, &request, &response)
                    }
                    guard let body else { return run(nil, 0) }
                    return body.withUnsafeBufferPointer {
                        run($0.baseAddress ?? UnsafePointer(bitPattern: 1), $0.count)
                    }
                }
            }
        }
        defer { gk_http_response_free(&response) }
        let message = withUnsafeBytes(of: response.message) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        switch status {
        case GK_HTTP_OK:
            let type = withUnsafeBytes(of: response.content_type) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            let bytes = response.body.map { Array(UnsafeBufferPointer(start: $0, count: response.body_length)) } ?? []
            return .success(Answer(status: response.status_code, body: bytes, contentType: type))
        case GK_HTTP_UNREACHABLE: return .failure(.unreachable(TextSafety.escaped(message)))
        case GK_HTTP_TLS: return .failure(.tls(TextSafety.escaped(message)))
        case GK_HTTP_TIMEOUT: return .failure(.timedOut)
        case GK_HTTP_TOO_LARGE: return .failure(.tooLarge(maxBody))
        case GK_HTTP_CANCELLED: return .failure(.cancelled)
        case GK_HTTP_REFUSED:
            return .failure(.refused("is not https:// (plain http:// is allowed only for loopback, with allow_http)"))
        default: return .failure(.failed(TextSafety.escaped(message)))
        }
    }

    /// One libcurl transfer, which a cancellation may stop from another thread; freed when neither the
    /// request nor the cancellation handler holds it any more.
    final class Transfer: @unchecked Sendable {
        let handle: OpaquePointer?
        init() { handle = gk_http_transfer_new() }
        func cancel() { gk_http_transfer_cancel(handle) }
        deinit { gk_http_transfer_free(handle) }
    }

    /// `application/x-www-form-urlencoded`: every byte but the unreserved ones percent-encoded.
    static func encoded(_ form: [(String, FormValue)]) -> [UInt8] {
        var body: [UInt8] = []
        for (index, (name, value)) in form.enumerated() {
            if index > 0 { body.append(UInt8(ascii: "&")) }
            body += formEncoded(name.utf8) + [UInt8(ascii: "=")]
            switch value {
            case .text(let text): body += formEncoded(text.utf8)
            case .secret(let secret): secret.withUnsafeBytes { body += formEncoded($0) }
            }
        }
        return body
    }

    static func formEncoded(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return output
    }

    /// Standard base64 with padding, for HTTP Basic.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = Base64URL.encode(bytes).replacing("-", with: "+").replacing("_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        return text
    }
}

extension Optional<String> {
    fileprivate func withOptionalCString<T>(_ body: (UnsafePointer<CChar>?) -> T) -> T {
        switch self {
        case .some(let text): text.withCString { body($0) }
        case .none: body(nil)
        }
    }
}
