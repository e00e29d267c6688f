import Authentication
import Foundation
import GatekeeperDaemon
import GatekeeperSupport
import TestSupport
import Testing

/// gatekeeperd over its socket, spoken to by the test as pam_gatekeeper.so speaks: logins, the account check,
/// hostile clients (half-written, malformed, silent, gone mid-question), the bounds on logins in flight, a
/// reload and a stop with a login in flight.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct DaemonTests {
    func request(
        _ fixture: DaemonFixture, _ operation: DaemonRequest.Operation = .authenticate, service: String = "sudo"
    )
        -> DaemonRequest
    {
        DaemonRequest(operation, service: service, user: fixture.account, terminal: "/dev/pts/9")
    }

    @Test func rightAndWrongPasswords() throws {
        let fixture = try DaemonFixture()
        let right = try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password)
        #expect(right.result == .success)
        #expect(right.seen.contains { if case .question(_, hidden: true) = $0 { true } else { false } })
        let wrong = try DaemonClient(fixture.socket).converse(request(fixture), password: "not-it")
        #expect(wrong.result == .authenticationError)
        #expect(try fixture.failures(of: fixture.account) == 1)
        #expect(fixture.auditRecords.contains { $0.contains("\"signedIn\"") })
        #expect(fixture.auditRecords.contains { $0.contains("\"signInFailed\"") })
        // No password ever reaches the audit log.
        #expect(!fixture.auditRecords.contains { $0.contains(fixture.password) || $0.contains("not-it") })
    }

    /// 16 right passwords of one account at once, `deny=5`, through two service files on one lockout
    /// directory: every one is admitted — none refused as locked for the others still being checked — and
    /// nothing stays counted.
    @Test func rightPasswordsAtOnceAreEachAdmitted() throws {
        let fixture = try DaemonFixture(settings: "lockout deny=5", start: false)
        try fixture.writeService("su", settings: "lockout deny=5")
        try fixture.start()
        let results = Locked<[PAMResult?]>([])
        let (socket, password) = (fixture.socket, fixture.password)
        let requests = (0..<16).map { request(fixture, service: $0 % 2 == 0 ? "sudo" : "su") }
        // A thread each, all connected before any answers: 16 logins in flight at once.
        let done = DispatchGroup()
        for request in requests {
            done.enter()
            Thread {
                let result = try? DaemonClient(socket).converse(request, password: password).result
                results.withLock { $0.append(result) }
                done.leave()
            }.start()
        }
        done.wait()
        let answers = results.withLock { $0 }
        #expect(answers.count == 16 && answers.allSatisfy { $0 == .success }, "\(answers)")
        #expect(try fixture.failures(of: fixture.account) == 0)
        #expect(!fixture.auditRecords.contains { $0.contains("lockedOut") }, "\(fixture.auditRecords)")
    }

    /// `use_first_pass`: the password another module took is the one tried, and nothing is asked; without one
    /// to use, nothing is asked either. `try_first_pass`: the given one first.
    @Test func firstPassFlags() throws {
        let fixture = try DaemonFixture()
        var given = request(fixture)
        given.flags = [.useFirstPass]
        given.authenticationToken = Secret(copying: Array(fixture.password.utf8))
        let used = try DaemonClient(fixture.socket).converse(given, password: nil)
        #expect(used.result == .success && used.seen.count == 1)
        given.authenticationToken = Secret(copying: Array("wrong".utf8))
        #expect(try DaemonClient(fixture.socket).converse(given, password: nil).result == .authenticationError)
        given.authenticationToken = nil
        #expect(
            try DaemonClient(fixture.socket).converse(given, password: nil).result == .authenticationTokenRecoveryError)
        given.flags = [.tryFirstPass]
        given.authenticationToken = Secret(copying: Array(fixture.password.utf8))
        let tried = try DaemonClient(fixture.socket).converse(given, password: nil)
        #expect(tried.result == .success && tried.seen.count == 1)
    }

    @Test func accountCheck() throws {
        let fixture = try DaemonFixture()
        #expect(try DaemonClient(fixture.socket).converse(request(fixture, .account), password: nil).result == .success)
        // Locked in the users file: the account check refuses it, without a password.
        let locked = try run(builtExecutable("gatekeeper-passwd"), ["lock", fixture.users, fixture.account], input: "")
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture, .account), password: nil).result
                == .permissionDenied)
        let expired = try run(
            builtExecutable("gatekeeper-passwd"), ["unlock", fixture.users, fixture.account], input: "")
        #expect(expired.status == 0)
        _ = try run(builtExecutable("gatekeeper-passwd"), ["expire", fixture.users, fixture.account], input: "")
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture, .account), password: nil).result
                == .newAuthenticationTokenRequired)
    }

    /// A stack of two users files, the account in the second: the account check asks both, so the second's
    /// lock and expiry are refused (an answer of the first, which does not have the account, decides nothing),
    /// and the account is `success` where it is valid.
    @Test func accountCheckAsksEveryBackend() throws {
        let fixture = try DaemonFixture(start: false)
        let others = fixture.directory + "/others"
        try "".write(toFile: others, atomically: false, encoding: .utf8)
        chmod(others, 0o600)
        try fixture.writeService(
            "sudo", entry: "sufficient file users=\(others)\nrequired file users=\(fixture.users)")
        try fixture.start()
        func check() throws -> PAMResult? {
            try DaemonClient(fixture.socket).converse(request(fixture, .account), password: nil).result
        }
        #expect(try check() == .success)
        #expect(
            try run(builtExecutable("gatekeeper-passwd"), ["lock", fixture.users, fixture.account], input: "").status
                == 0)
        #expect(try check() == .permissionDenied)
        #expect(
            try run(builtExecutable("gatekeeper-passwd"), ["unlock", fixture.users, fixture.account], input: "").status
                == 0)
        #expect(
            try run(builtExecutable("gatekeeper-passwd"), ["expire", fixture.users, fixture.account], input: "").status
                == 0)
        #expect(try check() == .newAuthenticationTokenRequired)
    }

    /// `pam_chauthtok`'s two calls: the preliminary one changes nothing and asks nothing; the update asks the
    /// current password once, then the new one twice.
    @Test func passwordChange() throws {
        let fixture = try DaemonFixture()
        let check = try DaemonClient(fixture.socket).converse(request(fixture, .checkPasswordChange), password: nil)
        #expect(check.result == .success && check.seen.count == 1)
        let client = try DaemonClient(fixture.socket)
        client.send(.request(request(fixture, .changePassword)))
        var prompts: [String] = []
        let new = "Quartz-Lantern-\(UInt32.random(in: 1000...9999))-x"
        var result: PAMResult?
        while let message = try client.receive() {
            if case .question(let prompt, true) = message {
                prompts.append(prompt)
                client.send(.answer(Secret(copying: Array((prompts.count == 1 ? fixture.password : new).utf8))))
            } else if case .result(let code, _) = message {
                result = code
                break
            }
        }
        #expect(result == .success, "\(prompts)")
        #expect(prompts.count == 3)
        #expect(try DaemonClient(fixture.socket).converse(request(fixture), password: new).result == .success)
    }

    /// A client that sends half a request and stops is cut off once its time is up; one that sends a frame
    /// out of bounds or malformed is cut off at once; neither stops anyone else's login.
    @Test func hostileClientsEndOnlyTheirConnection() throws {
        let fixture = try DaemonFixture()
        let half = try DaemonClient(fixture.socket)
        half.sendRaw([0, 0, 0, 40, 1, 1])
        let oversized = try DaemonClient(fixture.socket)
        oversized.sendRaw([0xff, 0xff, 0xff, 0xff])
        let malformed = try DaemonClient(fixture.socket)
        malformed.sendRaw([0, 0, 0, 3, 1, 1, 99])
        let silent = try DaemonClient(fixture.socket)
        #expect(oversized.isClosed(within: .seconds(5)))
        #expect(malformed.isClosed(within: .seconds(5)))
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
        #expect(half.isClosed(within: .seconds(5)))
        #expect(silent.isClosed(within: .seconds(5)))
        // An answer nobody asked for ends the connection too.
        let eager = try DaemonClient(fixture.socket)
        eager.send(.request(request(fixture, .account)))
        eager.send(.answer(Secret(copying: Array("early".utf8))))
        var ended = false
        for _ in 0..<10 {
            guard let message = try eager.receive(timeout: .seconds(5)) else {
                ended = true
                break
            }
            if case .result = message {
                ended = true
                break
            }
        }
        #expect(ended)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
    }

    /// An answer (or a first password) with a NUL byte or bytes that are not UTF-8 is no text of the protocol's:
    /// the connection ends without a result, nothing is counted, and the next login is served.
    @Test(arguments: [[0x61, 0x00, 0x62], [0xff, 0xfe, 0x41], [0xc3]] as [[UInt8]])
    func answersThatAreNotTextEndTheConnection(_ bytes: [UInt8]) throws {
        let fixture = try DaemonFixture()
        let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
        client.send(.answer(Secret(copying: bytes)))
        #expect(client.isClosed(within: .seconds(5)))
        var given = request(fixture)
        given.flags = [.useFirstPass]
        given.authenticationToken = Secret(copying: bytes)
        let first = try DaemonClient(fixture.socket)
        first.send(.request(given))
        #expect(first.isClosed(within: .seconds(5)))
        #expect(try fixture.failures(of: fixture.account) == 0)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
    }

    /// A name the host's name service does not know (the module's `unknownToHost`: sshd's invalid users) is
    /// asked for a password as any name is, and answered `user_unknown` whatever is typed — the right password
    /// of a users-file account of that name included — with nothing counted and a record that names no one.
    @Test(.enabled(if: getuid() == 0, "asks for an account other than the runner's, which only root may"))
    func aNameTheHostDoesNotKnowCountsNothing() throws {
        let fixture = try DaemonFixture(settings: "lockout deny=2")
        let name = "gkghost\(UInt32.random(in: 100_000...999_999))"
        let added = try run(
            builtExecutable("gatekeeper-passwd"), ["add", fixture.users, name, "--password-stdin"],
            input: fixture.password + "\n")
        #expect(added.status == 0, "\(added.stderr)")
        var ghost = DaemonRequest(.authenticate, service: "sshd", user: name, flags: [.unknownToHost])
        for password in ["\u{8}\n\r\u{7f}INCORRECT", "wrong", "wrong again", fixture.password] {
            let answer = try DaemonClient(fixture.socket).converse(ghost, password: password)
            #expect(answer.result == .userUnknown)
            #expect(answer.seen.contains { if case .question(_, hidden: true) = $0 { true } else { false } })
        }
        #expect(try fixture.failures(of: name) == 0)
        #expect(try fixture.unknownNameFailures() == 0)
        #expect(fixture.auditRecords.filter { $0.contains("a name the host does not know") }.count == 4)
        #expect(!fixture.auditRecords.contains { $0.contains("\"user\":\"\(name)\"") })
        // Once the host knows it (here: asked without the flag), the account signs in: nothing was counted.
        ghost.flags = []
        #expect(try DaemonClient(fixture.socket).converse(ghost, password: fixture.password).result == .success)
    }

    /// The module's `unknownToHost` for a name the daemon's own look-up knows is an ordinary login, counted as
    /// any: no program whose look-up was made to fail (out of descriptors) makes a known account's guesses free.
    @Test func aKnownNameSaidUnknownIsAnOrdinaryLogin() throws {
        let fixture = try DaemonFixture(settings: "lockout deny=5")
        var known = request(fixture)
        known.flags = [.unknownToHost]
        #expect(try DaemonClient(fixture.socket).converse(known, password: "wrong").result == .authenticationError)
        #expect(try fixture.failures(of: fixture.account) == 1)
        #expect(try DaemonClient(fixture.socket).converse(known, password: fixture.password).result == .success)
    }

    /// A locked account is told why, as pam_faillock tells it, before its refusal: sudo would otherwise say only
    /// "Sorry, try again" for a login that asked nothing. Audit records name the service and the client's pid.
    @Test func aLockedAccountIsToldWhy() throws {
        let fixture = try DaemonFixture(settings: "lockout deny=1 unlock=10m")
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: "wrong").result
                == .authenticationError)
        let locked = try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password)
        #expect(locked.result == .authenticationError)
        #expect(
            locked.seen.contains {
                if case .message(let text, isError: true) = $0 {
                    text.contains("Too many failed attempts")
                } else {
                    false
                }
            }, "\(locked.seen)")
        #expect(!locked.seen.contains { if case .question = $0 { true } else { false } })
        let pid = getpid()
        #expect(
            fixture.auditRecords.contains {
                $0.contains("\"lockedOut\"") && $0.contains("\"service\":\"sudo\"") && $0.contains("\"pid\":\(pid)")
            }, "\(fixture.auditRecords)")
    }

    /// Lockout state that cannot be written — a file system out of inodes, which any user who can write /tmp on
    /// the same file system can bring about — is a refusal, never `authinfo_unavail`, which the documented line
    /// and the profile let fall to pam_unix. (A tiny tmpfs over the state directory, in the daemon's own mount
    /// namespace, filled the way such a user fills it.)
    @Test(.enabled(if: getuid() == 0, "mounts a file system in a mount namespace of the daemon's own"))
    func lockoutStateThatCannotBeWrittenIsARefusal() throws {
        let scratch = ScratchDirectory("gatekeeperd-full")
        let state = scratch.path + "/state"
        let fixture = try DaemonFixture(
            arguments: ["--state-dir", state],
            launcher: [
                "/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                "mkdir -p \(state) && mount -t tmpfs -o size=1m,nr_inodes=64,mode=0755 gatekeeper-full \(state) "
                    + "&& exec \"$@\"", "sh",
            ])
        let daemon = try #require(fixture.daemon)
        let filled = try shell(
            "nsenter -t \(daemon.pid) -m sh -c 'i=0; while touch \(state)/fill$i 2>/dev/null; do i=$((i+1)); done; "
                + "echo $i'")
        #expect(filled.status == 0 && (Int(filled.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0)
        for password in [fixture.password, "wrong"] {
            let answer = try DaemonClient(fixture.socket).converse(request(fixture), password: password)
            #expect(answer.result == .authenticationError, "\(answer.seen)")
        }
        #expect(fixture.auditRecords.contains { $0.contains("\"stateUnavailable\"") })
    }

    /// A stack whose backends cannot be reached answers `authinfo_unavail` itself (as pam_sss does offline),
    /// so that `[authinfo_unavail=ignore]` leaves a local account to pam_unix: only the stack's own decision is
    /// read so, never the daemon's state.
    @Test func aStackThatCannotReachItsBackendIsUnavailable() throws {
        let fixture = try DaemonFixture(start: false)
        try fixture.writeService("default", entry: "required debug result=authinfo_unavail")
        try fixture.start()
        let answer = try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password)
        #expect(answer.result == .authinfoUnavailable, "\(answer.seen)")
    }

    /// One caller's flood of malformed requests writes one line, and one summary when its 10 seconds are over:
    /// nobody fills the daemon's log (the journal) by sending garbage.
    @Test func malformedRequestsAreSummarisedPerCaller() throws {
        let fixture = try DaemonFixture()
        for _ in 0..<50 {
            let client = try DaemonClient(fixture.socket)
            client.sendRaw([0, 0, 0, 3, 1, 1, 99])
            #expect(client.isClosed(within: .seconds(5)))
        }
        func lines(_ text: String) -> Int {
            (fixture.daemon?.stderr ?? "").components(separatedBy: "\n").filter { $0.contains(text) }.count
        }
        #expect(lines("refused: ") == 1, "\(fixture.daemon?.stderr ?? "")")
        #expect(eventually(within: 30) { lines("49 more malformed requests of uid \(getuid())") == 1 })
        #expect(lines("refused: ") == 1)
    }

    /// One caller's logins are bounded by rate (`--max-login-rate`), not by dropping records: a burst of N a
    /// minute, then one each 60/N s; the rest are refused at once, saying why, in the call's words — never read
    /// as an absent daemon — audited nowhere, and reported on standard error once per uid each 10 seconds. Root's programs are
    /// bounded by whom each login is for (PAM_RUSER, PAM_RHOST); root's own logins and other origins go on.
    @Test func oneCallersLoginsAreBoundedByRate() throws {
        let fixture = try DaemonFixture(arguments: ["--max-login-rate", "60"])
        var mallory = request(fixture)
        mallory.requestingUser = "mallory"
        var checks = mallory
        checks.operation = .account
        for _ in 0..<59 {
            #expect(try DaemonClient(fixture.socket).converse(checks, password: nil).result == .success)
        }
        #expect(try DaemonClient(fixture.socket).converse(mallory, password: fixture.password).result == .success)
        let signedIn = fixture.auditRecords.count { $0.contains("\"signedIn\"") }
        for _ in 0..<3 {
            let refused = try DaemonClient(fixture.socket).converse(mallory, password: fixture.password)
            #expect(refused.result == .authenticationError)
            #expect(
                refused.seen.contains {
                    if case .message(let text, isError: true) = $0 {
                        text.contains("too many logins of this user")
                    } else {
                        false
                    }
                }, "\(refused.seen)")
        }
        // In each call's own words: the account phase is perm_denied, as a busy daemon's is.
        #expect(try DaemonClient(fixture.socket).converse(checks, password: nil).result == .permissionDenied)
        #expect(fixture.auditRecords.count { $0.contains("\"signedIn\"") } == signedIn)
        let reported = (fixture.daemon?.stderr ?? "").components(separatedBy: "\n").filter {
            $0.contains("over --max-login-rate")
        }
        #expect(reported.count == 1 && reported[0].contains("for mallory"), "\(reported)")
        // Another origin, and root's own logins, are not mallory's.
        var trudy = mallory
        trudy.requestingUser = "trudy"
        #expect(try DaemonClient(fixture.socket).converse(trudy, password: fixture.password).result == .success)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
        // The bucket fills again at one a second.
        usleep(1_200_000)
        #expect(try DaemonClient(fixture.socket).converse(mallory, password: fixture.password).result == .success)
        #expect(try DaemonClient(fixture.socket).converse(mallory, password: fixture.password).result != .success)
    }

    /// A client that goes away while its question waits (sudo's Ctrl-C) ends the login at once: it is
    /// recorded as cancelled, and nothing is counted.
    @Test func clientGoneCancelsTheLogin() throws {
        let fixture = try DaemonFixture()
        do {
            let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
            client.send(.cancel)
        }
        #expect(eventually { fixture.auditRecords.contains { $0.contains("\"signInCancelled\"") } })
        #expect(try fixture.failures(of: fixture.account) == 0)
    }

    /// A client that gives its password and goes away at once, while another process holds the audit log's
    /// lock: the guess is counted, and audited once the lock is free (a cancelled login waits for it too).
    @Test func aGuessIsAuditedWhenItsClientIsGone() throws {
        let fixture = try DaemonFixture()
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
        let lock = open(fixture.audit + ".lock", O_RDWR | O_CLOEXEC)
        defer { close(lock) }
        do {
            let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
            #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
            client.send(.answer(Secret(copying: Array("wrong".utf8))))
        }
        usleep(300_000)
        flock(lock, LOCK_UN)
        #expect(eventually { (try? fixture.failures(of: fixture.account)) == 1 })
        #expect(
            eventually { fixture.auditRecords.contains { $0.contains("\"signInFailed\"") } }, "\(fixture.auditRecords)")
    }

    /// A question unanswered past --answer-timeout ends the login; it is not counted.
    @Test func unansweredQuestionTimesOut() throws {
        let fixture = try DaemonFixture(arguments: ["--answer-timeout", "1s"])
        let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
        #expect(client.isClosed(within: .seconds(10)))
        #expect(try fixture.failures(of: fixture.account) == 0)
    }

    /// Beyond the bound on logins in flight, a login is refused at once, saying why — not queued, and never
    /// answered `authinfo_unavail`, which an admin's `authinfo_unavail=ignore` reads as "fall through".
    @Test func loginsInFlightAreBounded() throws {
        let fixture = try DaemonFixture(arguments: ["--max-logins", "2"])
        var waiting: [DaemonClient] = []
        for _ in 0..<2 {
            let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
            waiting.append(client)
        }
        let third = try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password)
        #expect(third.result == .authenticationError)
        #expect(third.seen.contains { if case .message(let text, true) = $0 { text.contains("busy") } else { false } })
        waiting.removeAll()
        #expect(
            eventually {
                (try? DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result)
                    == .success
            })
    }

    /// A service with a file of its own uses it; one without, the default; with neither, the module is ignored;
    /// a name no file could have is refused.
    @Test func servicesAndTheDefault() throws {
        let fixture = try DaemonFixture(start: false)
        try fixture.writeService("sshd", entry: "required mock")
        try FileManager.default.removeItem(atPath: fixture.services + "/default")
        try fixture.start()
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture, service: "sudo"), password: fixture.password)
                .result == .ignore)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture, service: "../default"), password: nil).result
                == .serviceError)
        // The demo backend knows no account of the test's: refused.
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture, service: "sshd"), password: fixture.password)
                .result
                != .success)
    }

    /// SIGHUP reads the files again: a set with a broken file is refused, and the one in use kept; a good one
    /// replaces it.
    @Test func reloadKeepsTheOldSetOnABadFile() throws {
        let fixture = try DaemonFixture()
        try "required nosuchbackend\n".write(toFile: fixture.services + "/default", atomically: false, encoding: .utf8)
        fixture.daemon?.send(SIGHUP)
        try fixture.daemon?.waitForStderr(containing: "not read again")
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
        try fixture.writeService("default", entry: "required mock")
        fixture.daemon?.send(SIGHUP)
        try fixture.daemon?.waitForStderr(containing: "read 1 service files again")
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result != .success)
    }

    /// A login in flight when the files are read again finishes with the stack it began with; the next login
    /// takes the new one.
    @Test func reloadKeepsLoginsInFlight() throws {
        let fixture = try DaemonFixture()
        let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
        try fixture.writeService("default", entry: "required mock")
        fixture.daemon?.send(SIGHUP)
        try fixture.daemon?.waitForStderr(containing: "read 1 service files again")
        client.send(.answer(Secret(copying: Array(fixture.password.utf8))))
        var result: PAMResult?
        while let message = try client.receive() {
            if case .result(let code, _) = message {
                result = code
                break
            }
        }
        #expect(result == .success)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result != .success)
    }

    /// SIGTERM refuses a login in flight (the daemon was there, and may have been given the password: the
    /// program's next module must not judge it) and exits; its socket goes with it, and a daemon started again
    /// serves with the state it left.
    @Test func stopAnswersLoginsInFlight() throws {
        let fixture = try DaemonFixture()
        _ = try DaemonClient(fixture.socket).converse(request(fixture), password: "wrong")
        let client = try DaemonClient.atQuestion(fixture.socket, request(fixture))
        fixture.daemon?.send(SIGTERM)
        #expect(try client.receive(timeout: .seconds(10)) == .result(.authenticationError, canonicalUser: nil))
        let stopped = fixture.stop()
        #expect(stopped?.status == 0, "\(stopped?.stderr ?? "")")
        #expect(access(fixture.socket, F_OK) != 0)
        try fixture.start()
        #expect(try fixture.failures(of: fixture.account) == 1)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
    }

    /// A helper program (the JSON-lines protocol) that matches names loosely, as a directory's case-insensitive
    /// `uid` would: any spelling of `alice` is alice, whose password is `loose-pw`; it answers `seconds` after
    /// the password comes. Written into the fixture's directory; its path.
    func looseHelper(in fixture: DaemonFixture, answersAfter seconds: Double = 0) throws -> String {
        let helper = fixture.directory + "/loose-helper.py"
        try """
        #!/usr/bin/python3
        import json, sys, time
        def say(message):
            sys.stdout.write(json.dumps(message) + "\\n")
            sys.stdout.flush()
        start = json.loads(sys.stdin.readline())
        say({"prompt": "Password: ", "echo": False})
        reply = json.loads(sys.stdin.readline() or "{}")
        time.sleep(\(seconds))
        if start["user"].lower() != "alice":
            say({"outcome": "user_unknown"})
        elif reply.get("answer") != "loose-pw":
            say({"outcome": "rejected", "rejection": "wrong_credentials"})
        else:
            say({"outcome": "authenticated", "user": "alice"})
        """.write(toFile: helper, atomically: false, encoding: .utf8)
        chmod(helper, 0o755)
        return helper
    }

    /// The account the backend signs in must be the one the program asked for, byte for byte: a backend that
    /// matches names loosely (a helper taking `ALICE` for its `alice`, as a directory's case-insensitive `uid`
    /// would) is refused, after the fail delay a wrong password waits; with `rename_user`, root's program gets
    /// the account's own spelling to go on with instead.
    @Test(.enabled(if: getuid() == 0, "asks for an account other than the runner's, which only root may"))
    func theAccountSignedInIsTheOneAskedFor() throws {
        let fixture = try DaemonFixture(settings: "lockout deny=1000\ndelay 1s", start: false)
        let helper = try looseHelper(in: fixture)
        try fixture.writeService(
            "default", settings: "lockout deny=1000\ndelay 1s", entry: "required helper program=\(helper)")
        try fixture.start()
        var asked = DaemonRequest(.authenticate, service: "sudo", user: "ALICE")
        let started = ContinuousClock.now
        #expect(try DaemonClient(fixture.socket).converse(asked, password: "loose-pw").result == .authenticationError)
        // Refused as a wrong password is: after the fail delay (1 s, ±25 %), so the clock does not tell.
        #expect(started.duration(to: .now) >= .milliseconds(700))
        #expect(fixture.auditRecords.contains { $0.contains("\"accessDenied\"") && $0.contains("rename_user") })
        asked.flags = [.renamesUser]
        let renamed = try DaemonClient(fixture.socket).converse(asked, password: "loose-pw")
        #expect(renamed.seen.last == .result(.success, canonicalUser: "alice"))
        #expect(
            try DaemonClient(fixture.socket).converse(
                DaemonRequest(.authenticate, service: "sudo", user: "alice"), password: "loose-pw"
            ).seen.last
                == .result(.success, canonicalUser: nil))
    }

    /// The right password under another spelling is refused at the time a wrong one is: the fail delay of
    /// both runs from when the password was handed to the backend (``Gatekeeper/delayRefusal(answeredAt:)``),
    /// not from the backend's answer. The backend takes 1.5 s to answer either; the delay is 2 s ±25 % from the
    /// answer, so both refusals come before 2.9 s — a delay counted from the backend's answer could not come
    /// before 3 s.
    @Test(
        .enabled(if: getuid() == 0, "asks for an account other than the runner's, which only root may"),
        arguments: ["right password, another spelling", "wrong password"])
    func aRespelledRightPasswordIsRefusedAsSoonAsAWrongOne(_ attempt: String) throws {
        let fixture = try DaemonFixture(settings: "lockout deny=1000\ndelay 2s", start: false)
        let helper = try looseHelper(in: fixture, answersAfter: 1.5)
        try fixture.writeService(
            "default", settings: "lockout deny=1000\ndelay 2s", entry: "required helper program=\(helper)")
        try fixture.start()
        let password = attempt.hasPrefix("right") ? "loose-pw" : "wrong-pw"
        let started = ContinuousClock.now
        let answer = try DaemonClient(fixture.socket).converse(
            DaemonRequest(.authenticate, service: "sudo", user: "ALICE"), password: password)
        let elapsed = started.duration(to: .now)
        #expect(answer.result == .authenticationError)
        #expect(elapsed >= .milliseconds(1_500), "less than the delay's lower end: \(elapsed)")
        #expect(elapsed < .milliseconds(2_900), "the delay ran from the backend's answer: \(elapsed)")
    }

    /// Where a login comes from (a terminal, a remote host) reaches the lockout's records escaped: nothing a
    /// program sends acts on the terminal `faillock` prints to.
    @Test func originsAreEscaped() throws {
        let fixture = try DaemonFixture()
        var asked = request(fixture)
        asked.terminal = "pts/1\u{1B}[2J"
        #expect(try DaemonClient(fixture.socket).converse(asked, password: "wrong").result == .authenticationError)
        let listed = try shell("faillock --dir \(fixture.stateDirectory)/faillock --user \(fixture.account)").output
        #expect(!listed.contains("\u{1B}") && listed.contains("pts/1\\u{1B}[2J"), "\(listed)")
    }

    /// `PAM_CHANGE_EXPIRED_AUTHTOK`: a password that has not expired is left as it is, and nothing is asked.
    @Test func expiredOnlyLeavesAPasswordThatHasNotExpired() throws {
        let fixture = try DaemonFixture()
        var asked = request(fixture, .changePassword)
        asked.flags = [.expiredOnly]
        let change = try DaemonClient(fixture.socket).converse(asked, password: nil)
        #expect(change.result == .success && change.seen.count == 1)
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
    }

    /// Root's program serves everyone; its logins are bounded by whom each is for (`PAM_RUSER`), so one user's
    /// unanswered sudo prompts do not hold everyone else's.
    @Test(.enabled(if: getuid() == 0, "root's logins are bounded by PAM_RUSER; a caller other than root by its uid"))
    func rootsLoginsAreBoundedByWhomTheyAreFor() throws {
        let fixture = try DaemonFixture(arguments: ["--max-logins-per-user", "2"])
        var mallory = request(fixture)
        mallory.requestingUser = "mallory"
        var waiting: [DaemonClient] = []
        for _ in 0..<2 {
            let client = try DaemonClient.atQuestion(fixture.socket, mallory)
            waiting.append(client)
        }
        let third = try DaemonClient(fixture.socket).converse(mallory, password: fixture.password)
        #expect(third.result == .authenticationError)
        var alice = request(fixture)
        alice.requestingUser = "alice"
        #expect(try DaemonClient(fixture.socket).converse(alice, password: fixture.password).result == .success)
    }

    /// The socket's directory is the daemon's: whoever made it private first (a root tool making its cache
    /// below it, an administrator's umask), every start sets it to 0755, so that every user reaches the socket.
    /// And a tool making a private directory below it leaves the directories above it searchable.
    @Test func theSocketsDirectoryIsReachableWhoeverMadeIt() throws {
        let scratch = ScratchDirectory("gatekeeperd-run")
        let run = scratch.path + "/gatekeeper"
        let cache = try StateDirectory(run + "/cache", creatingWith: 0o700)
        var info = stat()
        #expect(stat(run, &info) == 0 && info.st_mode & 0o7777 == 0o755)
        #expect(fstat(cache.descriptor, &info) == 0 && info.st_mode & 0o7777 == 0o700)
        chmod(run, 0o700)
        let fixture = try DaemonFixture(start: false)
        let daemon = try Spawned(
            builtExecutable("gatekeeperd"),
            [
                "--foreground", "--socket", run + "/socket", "--config-dir", fixture.services, "--state-dir",
                fixture.stateDirectory,
            ])
        defer {
            daemon.send(SIGTERM)
            _ = daemon.finish(timeout: .seconds(20))
        }
        try daemon.waitForStderr(containing: "serving")
        #expect(stat(run, &info) == 0 && info.st_mode & 0o7777 == 0o755)
    }

    /// A second daemon on the same socket refuses to start; a stale socket (nobody answers) is taken over.
    @Test func oneDaemonPerSocket() throws {
        let fixture = try DaemonFixture()
        let second = try run(
            builtExecutable("gatekeeperd"),
            [
                "--foreground", "--socket", fixture.socket, "--config-dir", fixture.services, "--state-dir",
                fixture.stateDirectory,
            ], input: "")
        #expect(second.status != 0 && second.stderr.contains("another gatekeeperd answers"))
        fixture.stop(SIGKILL)
        #expect(access(fixture.socket, F_OK) == 0)  // Left behind by the killed daemon.
        try fixture.start()
        #expect(
            try DaemonClient(fixture.socket).converse(request(fixture), password: fixture.password).result == .success)
    }

    /// Without systemd's socket and without --foreground, the daemon says what to do rather than guess.
    @Test func needsASocketOrForeground() throws {
        let fixture = try DaemonFixture(start: false)
        let result = try run(
            builtExecutable("gatekeeperd"), ["--config-dir", fixture.services, "--state-dir", fixture.stateDirectory],
            input: "")
        #expect(result.status == 64 && result.stderr.contains("--foreground"))
        let check = try run(
            builtExecutable("gatekeeperd"),
            ["--check", "--config-dir", fixture.services, "--state-dir", fixture.stateDirectory], input: "")
        #expect(check.status == 0 && check.stdout.contains("1 service files"), "\(check.stderr)")
    }
}
