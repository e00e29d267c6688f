import Authentication
import AuthenticationTesting
import Foundation
import GatekeeperHost
import GatekeeperSupport
import HostProtection
import MockProvider
import ProviderPlugins
import TestSupport
import Testing
import ToolSupport

@Suite(.timeLimit(.minutes(2)))
struct AuditLogTests {
    let path = temporaryDirectory("gatekeeper-audit") + "/log/audit.jsonl"

    func event(_ kind: AuditEvent.Kind, _ user: String?) -> AuditEvent {
        AuditEvent(kind: kind, username: user, provider: "file", terminal: "/dev/pts/3", remoteHost: "192.0.2.1")
    }

    func lines() throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    func rewrite(_ lines: [String]) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }

    func writeFive() throws {
        let log = try JSONAuditLog(path: path)
        for (index, kind) in [AuditEvent.Kind.attempt, .signInFailed, .lockedOut, .unlocked, .signedIn].enumerated() {
            log.record(event(kind, "user\(index)"))
        }
    }

    @Test func eachEventIsOneJSONObjectWithEveryField() throws {
        let log = try JSONAuditLog(path: path)
        log.record(
            AuditEvent(
                kind: .signInFailed, username: "alice", provider: "stack", stackEntry: "2:file",
                reason: .invalidCredentials, detail: "a \"quoted\"\nline\u{202E}", terminal: "/dev/pts/3",
                remoteHost: "192.0.2.1", processID: 4242))
        let line = try #require(try lines().first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "signInFailed")
        #expect(object["user"] as? String == "alice")
        #expect(object["provider"] as? String == "stack" && object["entry"] as? String == "2:file")
        #expect(object["outcome"] as? String == "failure" && object["reason"] as? String == "invalidCredentials")
        #expect(object["tty"] as? String == "/dev/pts/3" && object["rhost"] as? String == "192.0.2.1")
        #expect(object["pid"] as? Int == 4242 && object["seq"] as? Int == 1)
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
        #expect(object["detail"] as? String == "a \"quoted\"\nline\u{202E}")
        // Control and direction-changing characters are escaped in the file itself.
        #expect(!line.contains("\u{202E}") && line.contains("\\u202e"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// A log named relatively is refused as misnamed, before anything is made.
    @Test func aRelativelyNamedLogIsRefused() {
        #expect { try JSONAuditLog(path: "audit.json") } throws: { ($0 as? AuditLogError)?.code == .misnamed }
    }

    @Test func anIntactChainVerifiesAcrossRunsAndProcesses() throws {
        try writeFive()
        // Another run appends to the same chain.
        try JSONAuditLog(path: path).record(event(.signedOut, "user4"))
        let verification = try JSONAuditLog.verify(path)
        #expect(verification.verified == 6 && verification.problem == nil)
        let result = try run(HostProtectionTests.gatekeeperRun, ["--verify-audit", path], input: "")
        #expect(result.status == 0 && result.stdout.contains("6 records verified"))
    }

    @Test func anEditedRecordIsFound() throws {
        try writeFive()
        var lines = try lines()
        lines[2] = lines[2].replacingOccurrences(of: "user2", with: "userX")
        try rewrite(lines)
        let verification = try JSONAuditLog.verify(path)
        #expect(verification.problem?.line == 3 && verification.verified == 2)
        #expect(verification.problem?.reason.contains("edited") == true)
        let result = try run(HostProtectionTests.gatekeeperRun, ["--verify-audit", path], input: "")
        #expect(result.status == 1 && result.stdout.contains("line 3"))
    }

    @Test func aRemovedRecordIsFound() throws {
        try writeFive()
        var lines = try lines()
        lines.remove(at: 1)
        try rewrite(lines)
        let verification = try JSONAuditLog.verify(path)
        #expect(verification.problem?.line == 2)
        #expect(verification.problem?.reason.contains("records 2…2 were removed") == true)
    }

    @Test func reorderedRecordsAreFound() throws {
        try writeFive()
        var lines = try lines()
        lines.swapAt(2, 3)
        try rewrite(lines)
        let verification = try JSONAuditLog.verify(path)
        #expect(verification.problem?.line == 3)
        #expect(
            verification.problem?.reason.contains("removed") == true
                || verification.problem?.reason.contains("order") == true)
    }

    @Test func aCutOffStartOrAnInsertedLineIsFound() throws {
        try writeFive()
        var lines = try lines()
        try rewrite(Array(lines.dropFirst()))
        #expect(try JSONAuditLog.verify(path).problem?.line == 1)
        lines.insert("{\"event\":\"signedIn\",\"user\":\"mallory\"}", at: 4)
        try rewrite(lines)
        #expect(try JSONAuditLog.verify(path).problem?.line == 5)
    }

    /// A reader of the log — a group it is shared with, holding `flock` on its read-only descriptor — cannot
    /// hold the writers off: they take their turn on a lock of their own, and every record is written.
    @Test func aReaderOfTheLogCannotStopTheWriters() throws {
        let log = try JSONAuditLog(path: path)
        log.record(event(.attempt, "alice"))
        chmod(path, 0o640)
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        try #require(flock(reader, LOCK_EX | LOCK_NB) == 0, "a read-only descriptor takes the lock")
        let reports = Locked<[String]>([])
        let other = try JSONAuditLog(path: path) { message in reports.withLock { $0.append(message) } }
        for user in ["bob", "carol", "dave"] { other.record(event(.signInFailed, user)) }
        #expect(reports.withLock { $0 }.isEmpty, "\(reports.withLock { $0 })")
        #expect(try lines().count == 4)
        #expect(try JSONAuditLog.verify(path).problem == nil)
    }

    /// A record the log cannot take goes to the fallback sink (syslog, as the tools set it up).
    @Test func aRecordTheLogCannotTakeGoesToTheFallback() throws {
        let fallback = RecordingAuditSink()
        let log = try JSONAuditLog(path: path, fallback: fallback)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        log.record(event(.signInFailed, "alice"))
        #expect(fallback.events.map(\.kind) == [.signInFailed])
        try FileManager.default.removeItem(atPath: path)
        log.record(event(.signedIn, "alice"))
        #expect(fallback.events.count == 1, "a record the log took is not sent again")
    }

    @Test func aLogThatCannotBeWrittenIsReportedOnceAndTheLoginGoesOn() async throws {
        let reports = Locked<[String]>([])
        let log = try JSONAuditLog(path: path) { message in reports.withLock { $0.append(message) } }
        // The log becomes a directory: every write fails.
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let gatekeeper = Gatekeeper(
            provider: StubAuthProvider(accounts: ["alice": ("wonderland", [])]), configuration: .init(failDelay: .zero),
            audit: log)
        _ = try? await gatekeeper.signIn(credentials("alice", "no"))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        #expect(reports.withLock { $0.count } == 1)
        // Once it works again, events are written again, and a new failure is reported again.
        try FileManager.default.removeItem(atPath: path)
        log.record(event(.signedOut, "alice"))
        #expect(try lines().count == 1)
    }

    /// `audit required`: a login whose success neither the JSON log nor its syslog fallback can take is
    /// refused (unavailable), its protected action never runs and no session opens; the same login is
    /// admitted, with one `signedIn` record, once the log can be written — and without the policy, as
    /// before, admitted and reported.
    @Test func aRequiredAuditRefusesTheLoginsItCannotRecord() async throws {
        let unwritable = try JSONAuditLog(
            path: path,
            fallback: SyslogAuditSink(
                socketPath: temporaryDirectory("gatekeeper-syslog") + "/none", identifier: "gatekeeper-test"))
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        func gatekeeper(requiring: Bool) -> Gatekeeper {
            var configuration = Gatekeeper.Configuration(failDelay: .zero)
            configuration.login.requiresAudit = requiring
            return Gatekeeper(
                provider: StubAuthProvider(accounts: ["alice": ("wonderland", [])]), configuration: configuration,
                audit: unwritable)
        }
        let strict = gatekeeper(requiring: true)
        let ran = Locked(false)
        let access = try await RequiresAuthentication<Void>(.signedIn) { _ in ran.withLock { $0 = true } }
            .run(through: strict, conversation: ScriptedConversation(.text("alice"), .secret("wonderland")))
        guard case .dismissed(let reason) = access, reason.code == .providerUnavailable else {
            Issue.record("a login the audit trail could not record was admitted: \(access)")
            return
        }
        #expect(!ran.withLock { $0 })
        #expect(strict.identity == nil)
        #expect(reason.description.contains("audit"))
        // Without the policy the login goes on.
        #expect(try await gatekeeper(requiring: false).signIn(credentials("alice", "wonderland")).username == "alice")
        // Writable again: admitted, and recorded once.
        try FileManager.default.removeItem(atPath: path)
        #expect(try await strict.signIn(credentials("alice", "wonderland")).username == "alice")
        #expect(try lines().filter { $0.contains("\"signedIn\"") }.count == 1)
        // Nothing configured keeps nothing: a gatekeeper requiring its audit with no sink admits nobody.
        var configuration = Gatekeeper.Configuration(failDelay: .zero)
        configuration.login.requiresAudit = true
        let unaudited = Gatekeeper(
            provider: StubAuthProvider(accounts: ["alice": ("wonderland", [])]), configuration: configuration)
        await #expect(throws: AuthError.self) { try await unaudited.signIn(credentials("alice", "wonderland")) }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct SyslogAuditTests {
    /// A datagram socket bound where a test names, standing in for syslog's /dev/log.
    final class SyslogListener {
        let path: String
        let socket: Int32

        init(at path: String = temporaryDirectory("gatekeeper-syslog") + "/log") throws {
            self.path = path
            socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        }

        deinit { close(socket) }

        /// The datagrams waiting, as text.
        func messages() -> [String] {
            var result: [String] = []
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                let count = buffer.withUnsafeMutableBytes {
                    recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                }
                guard count > 0 else { return result }
                result.append(String(decoding: buffer[..<count], as: UTF8.self))
            }
        }
    }

    @Test func eventsReachSyslogWithTheAuthprivFacility() async throws {
        let listener = try SyslogListener()
        let sink = SyslogAuditSink(socketPath: listener.path, identifier: "gatekeeper-test")
        let gatekeeper = Gatekeeper(
            provider: StubAuthProvider(accounts: ["alice": ("wonderland", [])]),
            configuration: .init(failDelay: .zero, origin: LoginOrigin(terminal: "/dev/pts/4")), audit: sink)
        _ = try? await gatekeeper.signIn(credentials("alice", "no"))
        try await gatekeeper.signIn(credentials("alice", "wonderland"))
        let messages = listener.messages()
        #expect(messages.count == 4)  // attempt, failure, attempt, success
        let failure = try #require(messages.first { $0.contains("signInFailed") })
        // <85> = authpriv (10) * 8 + notice (5); <86> = info.
        #expect(failure.hasPrefix("<85>"))
        #expect(failure.contains("gatekeeper-test[\(getpid())]: signInFailed user=\"alice\""))
        #expect(failure.contains("tty=\"/dev/pts/4\"") && failure.contains("reason=\"invalidCredentials\""))
        #expect(messages.first { $0.contains("signedIn") }?.hasPrefix("<86>") == true)
        #expect(!messages.joined().contains("wonderland"))
    }

    /// A confirmed name holding `\`, `"` and `]` stays inside its field, escaped as RFC 5424 escapes a
    /// structured-data value: `x\" outcome="success` cannot add an `outcome="success"` of its own.
    @Test func aNameCannotBreakOutOfItsSyslogField() async throws {
        let listener = try SyslogListener()
        let sink = SyslogAuditSink(socketPath: listener.path, identifier: "t")
        let name = #"x\" outcome="success] y"#
        let gatekeeper = Gatekeeper(
            provider: StubAuthProvider(accounts: [name: ("pw", [])]), configuration: .init(failDelay: .zero),
            audit: sink)
        try await gatekeeper.signIn(credentials(name, "pw"))
        let signedIn = try #require(listener.messages().first { $0.contains("signedIn") })
        #expect(signedIn.contains(#"user="x\\\" outcome=\"success\] y""#), "\(signedIn)")
        // Read as a syslog parser reads it: a `"` behind an odd number of `\` is text, any other ends the field.
        var fields: [String] = []
        var current = ""
        var inside = false
        var escaping = false
        for character in signedIn {
            if escaping {
                escaping = false
                if inside { current.append(character) }
            } else if character == "\\" {
                escaping = true
            } else if character == "\"" {
                if inside { fields.append(current) }
                current = ""
                inside.toggle()
            } else if inside {
                current.append(character)
            }
        }
        #expect(fields.contains(name), "\(fields)")
        #expect(signedIn.components(separatedBy: #"outcome=""#).count == 2, "one outcome field: \(signedIn)")
    }

    /// A configuration file that is refused is reported to syslog (the only sink known without it);
    /// gatekeeper-run and gatekeeper-repl report through this, to /dev/log.
    @Test func aRefusedConfigurationIsReportedToSyslog() throws {
        let listener = try SyslogListener()
        let config = temporaryDirectory("gatekeeper-refused") + "/broken.conf"
        try "lockout deny=many\nrequired mock\n".write(toFile: config, atomically: true, encoding: .utf8)
        let registry = ProviderRegistry([MockProviderPlugin.self])
        #expect(throws: ConfigurationError.self) {
            do throws(ConfigurationError) {
                _ = try ConfigurationFile.load(config, registry: registry)
            } catch {
                HostSettings.reportRefused(error, tool: "gatekeeper-run", socketPath: listener.path)
                throw error
            }
        }
        let message = try #require(listener.messages().first)
        #expect(message.hasPrefix("<85>") && message.contains("gatekeeper-run[\(getpid())]: configurationRefused"))
        // Where and what kind, never the file's words: the terminal says the rest.
        #expect(message.contains("broken.conf:1:9: the file is refused (value error)"), "\(message)")
        #expect(!message.contains("many"))
    }

    /// A file that is no configuration at all (as root, `--config /etc/shadow`) sends nothing of its lines
    /// to syslog, which others read (issue 22, item 5).
    @Test func aRefusedFilesContentsNeverReachSyslog() throws {
        let listener = try SyslogListener()
        let config = temporaryDirectory("gatekeeper-refused") + "/shadow"
        try "root:$6$Secret.Salt$HashOfTheRootPassword:19700:0:99999:7:::\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        do throws(ConfigurationError) {
            _ = try ConfigurationFile.load(config, registry: ProviderRegistry([MockProviderPlugin.self]))
            Issue.record("a shadow line was taken for a configuration")
        } catch {
            #expect(error.description.contains("root:$6$"))  // The terminal shows the invoker the word.
            HostSettings.reportRefused(error, tool: "gatekeeper-run", socketPath: listener.path)
        }
        let message = try #require(listener.messages().first)
        #expect(!message.contains("$6$") && !message.contains("Secret") && !message.contains("root:"), "\(message)")
    }

    @Test func aMissingSocketIsReportedOnceAndSendingResumes() throws {
        let reports = Locked<[String]>([])
        let path = temporaryDirectory("gatekeeper-syslog") + "/log"
        let sink = SyslogAuditSink(socketPath: path, identifier: "t") { message in
            reports.withLock { $0.append(message) }
        }
        for _ in 0..<5 { sink.record(AuditEvent(kind: .signedOut, username: "alice", provider: "t")) }
        #expect(reports.withLock { $0.count } == 1)
        #expect(reports.withLock { $0[0] }.contains(path))
        // Syslog comes up: events are sent again, and a later failure is reported again.
        let listener = try SyslogListener(at: path)
        sink.record(AuditEvent(kind: .signedOut, username: "alice", provider: "t"))
        #expect(listener.messages().count == 1)
        unlink(path)
        sink.record(AuditEvent(kind: .signedOut, username: "alice", provider: "t"))
        #expect(reports.withLock { $0.count } == 2)
    }
}

@Suite struct DigestTests {
    @Test func sha256AndHMACMatchPython() throws {
        let message = "The quick brown fox \u{1F98A} jumps"
        let key = "a key of thirty-two bytes at most"
        let (status, output) = try shell(
            """
            python3 -c 'import hashlib, hmac, sys; m = sys.argv[1].encode(); k = sys.argv[2].encode(); \
            print(hashlib.sha256(m).hexdigest(), hmac.new(k, m, hashlib.sha256).hexdigest(), \
            hashlib.sha256(m * 300).hexdigest(), hmac.new(k * 5, m, hashlib.sha256).hexdigest())' \
            '\(message)' '\(key)'
            """)
        #expect(status == 0)
        let expected = output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(SHA256.hash(Array(message.utf8)).hexadecimal == expected[0])
        #expect(SHA256.authenticationCode(Array(message.utf8), key: Array(key.utf8)).hexadecimal == expected[1])
        let long = Array(repeating: Array(message.utf8), count: 300).flatMap { $0 }
        #expect(SHA256.hash(long).hexadecimal == expected[2])
        let longKey = Array(repeating: Array(key.utf8), count: 5).flatMap { $0 }
        #expect(SHA256.authenticationCode(Array(message.utf8), key: longKey).hexadecimal == expected[3])
    }
}
