// The fuzz targets: what each parser or decoder of hostile input must do with any bytes at all. Each
// target returns normally or traps; a trap is a defect (libFuzzer saves the input as crash-*).
import Authentication
import AuthenticationTesting
import DebugProvider
import Foundation
import GatekeeperDaemon
import GatekeeperHost
import MockProvider
import PAMProvider
import ProviderPlugins

@testable import FileProvider
@testable import HelperPrograms
@testable import HostProtection
@testable import LDAPProvider
@testable import OIDCProvider
@testable import PluginHost

#if canImport(Glibc)
    import Glibc
#endif

enum FuzzTarget: String, CaseIterable {
    case usersFile = "users-file"
    case configuration
    case validation
    case pamConversation = "pam-conversation"
    case helperProtocol = "helper-protocol"
    case faillock
    case ldapFilter = "ldap-filter"
    case oidcToken = "oidc-token"
    case ledger
    case daemonMessage = "daemon-message"

    func run(_ bytes: [UInt8]) {
        switch self {
        case .usersFile: FuzzUsersFile.run(bytes)
        case .configuration: FuzzConfiguration.run(bytes)
        case .validation: FuzzValidation.run(bytes)
        case .pamConversation: FuzzPAMConversation.run(bytes)
        case .helperProtocol: FuzzHelperProtocol.run(bytes)
        case .faillock: FuzzFaillock.run(bytes)
        case .ldapFilter: FuzzLDAPFilter.run(bytes)
        case .oidcToken: FuzzOIDCToken.run(bytes)
        case .ledger: FuzzLedger.run(bytes)
        case .daemonMessage: FuzzDaemonMessage.run(bytes)
        }
    }
}

/// A property that must hold; when it does not, the process stops with the reason (never with a secret:
/// fuzz inputs are not secrets).
func require(_ condition: @autoclosure () -> Bool, _ reason: @autoclosure () -> String) {
    if !condition() {
        FileHandle.standardError.write(Data("property broken: \(reason())\n".utf8))
        abort()
    }
}

/// Runs `body` to its end from synchronous code (the fuzzer's callback).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// A private directory for targets that need files, removed at exit.
let scratchDirectory: String = {
    // In memory where there is a tmpfs: the faillock and PAM targets write a file every run, and a disk's
    // fsync would bound them to a thousand runs a second.
    var info = stat()
    let base = stat("/dev/shm", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR ? "/dev/shm" : "/tmp"
    var template = Array("\(base)/gatekeeper-fuzz.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fatalError("mkdtemp: \(String(cString: strerror(errno)))") }
    let path = String(cString: made)
    atexit { if let path = scratchPath { _ = try? FileManager.default.removeItem(atPath: path) } }
    scratchPath = path
    return path
}()
nonisolated(unsafe) private var scratchPath: String?

// MARK: users file

/// Any bytes either fail to parse with a typed error or parse to entries that survive writing out and
/// reading back unchanged (the file `gatekeeper-passwd` writes is the file every reader reads).
enum FuzzUsersFile {
    static func run(_ bytes: [UInt8]) {
        guard let file = try? UsersFile(parsing: bytes) else { return }
        let written = file.serialized()
        let again: UsersFile
        do { again = try UsersFile(parsing: written) } catch {
            require(false, "a parsed file did not read back: \(error)")
            return
        }
        func fields(_ file: UsersFile) -> [String] {
            file.entries.map { "\($0.username)|\($0.password)|\($0.groups)|\($0.displayName ?? "-")" }
        }
        require(fields(file) == fields(again), "entries changed when written and read back")
        for entry in file.entries {
            require(again[entry.username] != nil, "an entry cannot be found by its name after a round trip")
        }
    }
}

// MARK: configuration

/// The configuration-file parser on any text: a typed error, or a stack whose providers can be built
/// (with the mock and debug backends, which touch no files) or refused with a typed error. The input is
/// split at lines `---` into a main file and files it may include or name as substacks (`/fuzz/1.conf`,
/// `1.conf` beside it, …). A configuration that parses prints, normalised, as text that parses as the
/// same configuration and prints the same again; every duration the grammar reads prints as itself.
enum FuzzConfiguration {
    static let registry = ProviderRegistry([MockProviderPlugin.self, DebugProviderPlugin.self])

    static func run(_ bytes: [UInt8]) {
        var parts: [[UInt8]] = [[]]
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            if line.elementsEqual("---".utf8) {
                parts.append([])
            } else {
                parts[parts.count - 1] += line + [0x0A]
            }
        }
        let files = Dictionary(uniqueKeysWithValues: parts.enumerated().map { ("/fuzz/\($0.offset).conf", $0.element) })
        let read = { (path: String) throws(ConfigurationError) -> [UInt8] in
            guard let text = files[path] else {
                throw ConfigurationError(.file, at: .init(file: path, line: 0, column: 0), word: path, "no such file")
            }
            return text
        }
        let (parsed, settings): (StackConfiguration, StackSettings)
        do {
            (parsed, settings) = try ConfigurationFile.parse(
                parts[0], file: "/fuzz/0.conf", registry: registry, read: read)
        } catch {
            require(!error.description.isEmpty, "a configuration error without a message")
            require(!error.withoutContents.isEmpty, "a configuration error without a summary")
            return
        }
        _ = settings.gatekeeperConfiguration()
        _ = try? parsed.makeChain(registry: registry)
        let layout = parsed.layout
        let entries = parsed.providerEntries.count
        _ = ProviderChain.dispatch(layout, answers: Array(repeating: .success, count: entries))
        _ = ProviderChain.jumpsPastTheEnd(layout)
        // The round trip.
        let printed = parsed.normalized(settings: settings.lines)
        do {
            let (again, settingsAgain) = try ConfigurationFile.parse(
                Array(printed.utf8), file: "/fuzz/0.conf", registry: registry, read: read)
            require(settingsAgain.lines == settings.lines, "the normalised text parses as other settings")
            require(
                again.normalized(settings: settingsAgain.lines) == printed,
                "the normalised text prints differently when parsed again")
            require(again.layout == layout, "the normalised text parses as another stack")
            require(
                again.normalizedLines(annotated: true, settings: settingsAgain.lines)
                    == parsed.normalizedLines(annotated: true, settings: settings.lines),
                "the normalised text parses as another configuration")
        } catch {
            require(false, "the normalised text does not parse: \(error)")
        }
        // Every word the grammar reads as a duration prints as itself.
        for word in String(decoding: parts[0], as: UTF8.self).split(whereSeparator: { " \t\n=".contains($0) })
        where word.utf8.count <= 24 && word.utf8.first.map({ (0x30...0x39).contains($0) }) == true {
            guard let duration = try? ConfigurationValue.duration(String(word), in: .zero ... .seconds(90 * 86_400))
            else { continue }
            let text = ConfigurationValue.describe(duration)
            require(
                (try? ConfigurationValue.duration(text, in: .zero ... .seconds(90 * 86_400))) == duration,
                "a duration prints as text read as another")
        }
    }
}

// MARK: validation

/// User names, passwords, groups and display names: what is accepted is safe to print and store, and
/// accepting is stable; escaped text has nothing left that a terminal would act on.
enum FuzzValidation {
    static func run(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let rest = bytes.dropFirst()
        switch selector % 4 {
        case 0:
            if let name = try? Username.validate(utf8: rest) {
                require(Array(name.utf8) == Array(rest), "an accepted name is not the bytes given")
                require((try? Username.validate(name)) == name, "validating an accepted name again changed it")
                require(!name.contains(":"), "an accepted name holds a colon")
                require(
                    name.unicodeScalars.allSatisfy { !isControl($0) && !TextSafety.isUnsafe($0) },
                    "an accepted name holds a control or invisible character")
                require(TextSafety.escaped(name) == name, "an accepted name changes when escaped for display")
            }
        case 1:
            let secret = Secret(copying: rest)
            if (try? Credentials.validatePassword(secret)) != nil {
                require(!rest.isEmpty && !rest.contains(0), "an empty password or one with NUL was accepted")
            }
        case 2:
            let text = String(decoding: rest, as: UTF8.self)
            if (try? UsersFile.validateGroup(text)) != nil {
                require(
                    !text.isEmpty && !text.contains(",") && !text.contains(":")
                        && text.unicodeScalars.allSatisfy { !isControl($0) },
                    "an unsafe group was accepted")
            }
            if (try? UsersFile.validateDisplayName(text)) != nil {
                require(
                    !text.contains(":") && text.unicodeScalars.allSatisfy { !isControl($0) },
                    "an unsafe display name was accepted")
            }
        default:
            let text = String(decoding: rest, as: UTF8.self)
            for keep in [false, true] {
                let escaped = TextSafety.escaped(text, keepingLineBreaks: keep)
                require(
                    escaped.unicodeScalars.allSatisfy {
                        (keep && $0 == "\n") || (!isControl($0) && !TextSafety.isUnsafe($0))
                    }, "escaped text still holds a control or invisible character")
            }
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}

// MARK: PAM conversation

/// A login through libpam whose module sends the conversation function any message sequence (counts,
/// styles, NULL pointers, NULs, huge texts; see pam_fuzz_conversation.c). Whatever it sends, the login
/// ends; it succeeds exactly when every message was well formed and every prompt got the answer.
enum FuzzPAMConversation {
    static let setup: (provider: PAMAuthProvider, input: String) = {
        let directory = scratchDirectory
        // Compiled from the source tree this program was built from.
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../pam_fuzz_conversation.c").standardized.path
        let module = directory + "/pam_fuzz_conversation.so"
        let input = directory + "/messages"
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
        compiler.arguments = ["-shared", "-fPIC", "-O1", "-o", module, source]
        do { try compiler.run() } catch { fatalError("gcc: \(error)") }
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { fatalError("gcc could not build \(source)") }
        let service = "auth required \(module) \(input)\naccount required \(module)\n"
        _ = FileManager.default.createFile(atPath: directory + "/fuzz", contents: Data(service.utf8))
        let provider = try! PAMAuthProvider(.init(service: "fuzz", configurationDirectory: directory))
        return (provider, input)
    }()

    static func run(_ bytes: [UInt8]) {
        let (provider, input) = setup
        _ = FileManager.default.createFile(atPath: input, contents: Data(bytes))
        let outcome = blocking { () async -> Result<AuthOutcome, AuthError> in
            do throws(AuthError) {
                return .success(
                    try await provider.authenticate(AuthRequest(username: "fuzz", conversation: Answering())))
            } catch {
                return .failure(error)
            }
        }
        let wellFormed = isWellFormed(bytes)
        if case .success(.authenticated) = outcome {
            require(wellFormed, "a malformed message sequence ended in a successful login")
        } else if wellFormed {
            require(false, "a well-formed message sequence did not log in: \(outcome)")
        }
    }

    /// Whether the module's messages are ones the conversation must answer: 1 to PAM_MAX_NUM_MSG of them,
    /// each of PAM's four styles, with a text.
    static func isWellFormed(_ bytes: [UInt8]) -> Bool {
        var reader = bytes.makeIterator()
        let count = Int(Int8(bitPattern: reader.next() ?? 0))
        guard count >= 1, count <= 32 else { return false }
        for _ in 0..<count {
            let style = reader.next() ?? 0
            let length = Int(reader.next() ?? 0) | Int(reader.next() ?? 0) << 8
            for _ in 0..<length { _ = reader.next() }
            guard (1...4).contains(style) else { return false }
        }
        return true
    }

    struct Answering: Conversation {
        func ask(_ prompt: String) async throws(AuthError) -> String { "answer" }
        func askSecret(_ prompt: String) async throws(AuthError) -> Secret { Secret(copying: "answer".utf8) }
        func show(_ message: String, as kind: MessageKind) async {}
    }
}

// MARK: helper protocol

/// A helper program's line, decoded as the host decodes it: refused, or an outcome whose user name is
/// valid and whose texts are safe to print.
enum FuzzHelperProtocol {
    static func run(_ bytes: [UInt8]) {
        guard let message = try? JSONDecoder().decode(HelperProtocol.Message.self, from: Data(bytes)),
            let outcome = message.outcome
        else { return }
        let request = AuthRequest(username: "alice", conversation: FuzzPAMConversation.Answering())
        let result = HelperProtocol.read(outcome, message, request: request, name: "fuzz")
        switch result {
        case .success(.authenticated(let identity)):
            require((try? Username.validate(identity.username)) != nil, "an invalid user name was accepted")
            // What a helper says is shown and logged: nothing in it may act on a terminal.
            let texts = [identity.displayName] + Array(identity.groups) + identity.attributes.flatMap { [$0, $1] }
            for text in texts {
                require(
                    text.unicodeScalars.allSatisfy { !FuzzValidation.isControl($0) && !TextSafety.isUnsafe($0) },
                    "a helper's answer reached the identity unescaped")
            }
        case .success(.unavailable(let reason)):
            require(
                !reason.unicodeScalars.contains { FuzzValidation.isControl($0) }, "a reason holds control characters")
        case .success(.failed(let code, let reason)):
            require(
                !reason.unicodeScalars.contains { FuzzValidation.isControl($0) }, "a reason holds control characters")
            // A failure naming a code with an answer of its own (a wrong password) would escape the lockout.
            require(
                code != .success
                    && AuthOutcome.failed(code, reason: reason).normalized == .failed(code, reason: reason),
                "a failed answer stands for a code with an answer of its own: \(code.rawValue)")
        default:
            break
        }
    }
}

// MARK: faillock

/// Any bytes as a pam_faillock tally file, under any policy: reading it gives a status, and recording a
/// failure leaves a file of whole records, at most the cap, the new failure among them.
enum FuzzFaillock {
    static let store: FaillockStore = try! FaillockStore(directory: scratchDirectory + "/faillock")

    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 6 else { return }
        func duration(_ high: UInt8, _ low: UInt8) -> Duration? {
            let seconds = Int16(bitPattern: UInt16(high) << 8 | UInt16(low))
            return seconds == 0 ? nil : .seconds(Int64(seconds))
        }
        let policy = LockoutPolicy(
            deny: Int(bytes[0] % 8),
            interval: duration(bytes[1], bytes[2]) ?? .zero,
            unlockAfter: duration(bytes[3], bytes[4]),
            evenDenyRoot: bytes[5] & 1 != 0,
            rootUnlock: bytes[5] & 2 != 0 ? .after(.seconds(Int64(bytes[5] >> 2))) : .asOthers)
        // An account the system has, found in its first source: the store looks the name up (a tally file may
        // belong to its account) on every open, and a name no source has is looked for in every one of them
        // (files, then systemd's userdb directories), which cost this target two thirds of its time.
        let path = store.directory + "/root"
        let tally = Array(bytes.dropFirst(6))
        writeFile(path, tally)
        let account = LockoutAccount("root")
        _ = try? store.status(of: account, policy: policy)
        // An attempt counted and taken back leaves no record of its own behind.
        if case .counted(let ticket, _)? = try? store.beginAttempt(account, source: .service("fuzz"), policy: policy) {
            require((try? store.withdraw(ticket)) != nil, "an attempt could not be taken back")
            let left = readFile(path)
            let tagged = stride(from: 0, to: left.count - FaillockStore.recordSize + 1, by: FaillockStore.recordSize)
                .map { FaillockStore.Record(left[$0..<$0 + FaillockStore.recordSize]) }
                .contains { $0.reserved == ticket.tag && $0.time == UInt64(bitPattern: ticket.time) }
            require(!tagged, "a withdrawn attempt is still in the tally file")
        }
        guard (try? store.recordFailure(of: account, source: .service("fuzz"), policy: policy)) != nil
        else {
            require(false, "a failure could not be recorded over a damaged tally file")
            return
        }
        let after = readFile(path)
        require(after.count % FaillockStore.recordSize == 0, "the tally file holds a partial record")
        require(after.count <= FaillockStore.maxRecords * FaillockStore.recordSize, "the tally file grew past its cap")
        let records = stride(from: 0, to: after.count, by: FaillockStore.recordSize).map {
            FaillockStore.Record(after[$0..<$0 + FaillockStore.recordSize])
        }
        require(
            records.contains { $0.status & FaillockStore.statusValid != 0 && $0.sourceText == "fuzz" },
            "the failure just recorded is not in the file")
    }
}

/// The file's bytes, through read(2): FoundationEssentials' `Data(contentsOf:)` leaks a read buffer a call
/// in Swift 6.3.1 (see `make sanitize`), which over millions of runs is the process's whole memory.
private func readFile(_ path: String) -> [UInt8] {
    let file = open(path, O_RDONLY | O_CLOEXEC)
    guard file >= 0 else { return [] }
    defer { close(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        if count <= 0 { return bytes }
        bytes += chunk[..<count]
    }
}

/// Replaces the file's contents with `bytes` (mode 0600), through write(2).
private func writeFile(_ path: String, _ bytes: [UInt8]) {
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { return }
    defer { close(file) }
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        if count <= 0 { return }
        written += count
    }
}

// MARK: LDAP filter

/// RFC 4515 escaping: the escaped value holds none of the filter's special bytes raw, and unescaping it
/// gives back exactly the name, so `(uid=escaped)` can only ever match the name's own value.
enum FuzzLDAPFilter {
    static func run(_ bytes: [UInt8]) {
        let name = String(decoding: bytes, as: UTF8.self)
        let escaped = Array(LDAPAuthProvider.escapedForFilter(name).utf8)
        var unescaped: [UInt8] = []
        var index = 0
        while index < escaped.count {
            let byte = escaped[index]
            require(![0x2A, 0x28, 0x29, 0x00].contains(byte), "a special byte survived escaping")
            if byte == 0x5C {
                require(index + 2 < escaped.count, "an escape is cut short")
                let hex = String(decoding: escaped[index + 1...index + 2], as: UTF8.self)
                guard let value = UInt8(hex, radix: 16) else {
                    require(false, "an escape is not two hex digits")
                    return
                }
                unescaped.append(value)
                index += 3
            } else {
                unescaped.append(byte)
                index += 1
            }
        }
        require(unescaped == Array(name.utf8), "unescaping does not give the name back")
    }
}

// MARK: OpenID Connect

/// What an identity provider sends, as the oidc provider reads it: any bytes parse as JSON or are refused,
/// in one pass (a nesting too deep is refused, not recursed into); base64url has one spelling per value;
/// a token and a key set are read or refused, whatever their parts hold.
enum FuzzOIDCToken {
    static func run(_ bytes: [UInt8]) {
        let value = JSONValue.parse(bytes)
        if case .object(let fields)? = value {
            _ = JSONWebKey(fields)
            require(JSONValue.object(parsing: bytes) == fields, "an object parsed twice is not the same object")
        }
        _ = JSONWebKey.set(parsing: bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        if let decoded = Base64URL.decode(text) {
            require(Base64URL.encode(decoded) == text, "base64url decoded from a spelling that is not its own")
        }
        require(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "base64url does not give back what it encoded")
        // The bytes as a token's claims (and header), signed by nobody: read or refused, never trusted.
        let token = "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(bytes) + ".c2ln"
        if let parsed = CompactToken(token) {
            require(parsed.header["alg"]?.string == "RS256", "a token's header is not what it holds")
            require(value.map { .object(parsed.claims) == $0 } ?? false, "a token's claims are not its JSON")
        }
        _ = CompactToken(text)
    }
}

/// The attempt ledger against its reference model, on scenarios the fuzzer's bytes choose (the same
/// scenarios `make test` draws 10,000 of at random): every tally file must hold what the model says after
/// every step.
enum FuzzLedger {
    nonisolated(unsafe) static var runs = 0

    static func run(_ bytes: [UInt8]) {
        var choices = ChoiceSource(bytes: bytes)
        let scenario = LedgerScenario(&choices)
        runs += 1
        let directory = scratchDirectory + "/ledger-\(runs)"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: directory + ".unknown")
        }
        guard let names = try? FaillockStore(directory: directory) else {
            require(false, "the lockout directory could not be made")
            return
        }
        // Each process its own table of attempts in flight, as separate processes have: a killed one's go with it.
        let access = LedgerStoreAccess.faillockFiles(
            directory: directory, open: { try FaillockStore(directory: directory, inFlight: AttemptsInFlight()) }
        ) {
            let folded = (try? FaillockStore.folded(LockoutAccount($0, known: false))) ?? $0
            return (names.bucketName(of: folded), names.bucketTag(of: folded))
        }
        let problems = blocking { await scenario.check(access) }
        require(problems.isEmpty, "the ledger broke its rule:\n\(scenario)\n\(problems.joined(separator: "\n"))")
    }
}

/// gatekeeperd's reader: the bytes as a client's stream of frames, each read as the daemon reads one (its
/// length bounded first, then its message). Whatever is read writes back to a frame within the bounds that
/// reads as the same message; a request's texts hold no NUL byte and fit their bounds.
enum FuzzDaemonMessage {
    static func run(_ bytes: [UInt8]) {
        var rest = bytes[...]
        while rest.count >= 4 {
            guard let length = try? DaemonMessage.frameLength(rest.prefix(4)) else { return }
            rest = rest.dropFirst(4)
            guard rest.count >= length else { return }
            let payload = Array(rest.prefix(length))
            rest = rest.dropFirst(length)
            guard let message = try? DaemonMessage.parse(payload) else { return }
            let frame = message.frame()
            require(frame.count - 4 <= DaemonMessage.maxFrame, "a message writes a frame over the bound")
            require((try? DaemonMessage.parse(Array(frame.dropFirst(4)))) == message, "a message reads back otherwise")
            if case .request(let request) = message {
                for text in [request.service, request.user]
                    + [request.remoteHost, request.terminal, request.requestingUser]
                    .compactMap({ $0 })
                {
                    require(!text.utf8.contains(0) && text.utf8.count <= 1024, "a request's text out of bounds")
                }
                require((request.authenticationToken?.count ?? 0) <= DaemonMessage.maxAnswer, "a token over the bound")
            }
        }
    }
}
