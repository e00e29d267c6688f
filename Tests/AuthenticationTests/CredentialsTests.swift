import Authentication
import Foundation
import TestSupport
import Testing

struct CredentialsTests {
    static let badUsernames: [(String, AuthError)] = [
        ("", .missingUsername),
        ("   ", .missingUsername),
        ("\t", .missingUsername),
        (String(repeating: "a", count: 257), .invalidUsername(.tooLong(maxBytes: 256))),
        (String(repeating: "é", count: 129), .invalidUsername(.tooLong(maxBytes: 256))),
        ("al\u{0}ice", .invalidUsername(.nulByte)),
        ("al\nice", .invalidUsername(.lineBreak)),
        ("alice\r", .invalidUsername(.lineBreak)),
        ("al\u{1B}[2Jice", .invalidUsername(.controlCharacter)),
        ("al\u{7F}ice", .invalidUsername(.controlCharacter)),
        ("al\u{9B}ice", .invalidUsername(.controlCharacter)),
        ("root:x", .invalidUsername(.colon)),
        ("al\u{FFFD}ice", .invalidUsername(.invalidUTF8)),
        (" alice", .invalidUsername(.surroundingWhitespace)),
        ("alice ", .invalidUsername(.surroundingWhitespace)),
        // Names that would look like other names in a list or an audit record.
        ("admin\u{202E}", .invalidUsername(.invisibleCharacter)),
        ("\u{2066}root", .invalidUsername(.invisibleCharacter)),
        ("ad\u{200B}min", .invalidUsername(.invisibleCharacter)),
        ("ad\u{AD}min", .invalidUsername(.invisibleCharacter)),
        ("alice\u{2028}", .invalidUsername(.lineBreak)),
    ]

    /// `#expect(throws:)` compares codes (errors are equal by code); these tables check the detail too.
    static func refusal(_ expected: AuthError) -> @Sendable (any Error) -> Bool {
        { error in
            guard let error = error as? AuthError else { return false }
            return error == expected && error.inputProblem == expected.inputProblem
        }
    }

    @Test(arguments: badUsernames)
    func refusesBadUsernames(_ name: String, _ expected: AuthError) {
        #expect(performing: { try Username.validate(name) }, throws: Self.refusal(expected))
        #expect(
            performing: { try Credentials(username: name, password: Secret(copying: "pw".utf8)) },
            throws: Self.refusal(expected))
    }

    @Test(arguments: ["alice", "o'brien", "名前", "a.b-c_d@example.org", String(repeating: "a", count: 256)])
    func acceptsGoodUsernames(_ name: String) throws {
        #expect(try Username.validate(name) == name)
    }

    @Test func refusesInvalidUTF8WithoutRepairingIt() throws {
        let invalidUTF8 = Self.refusal(.invalidUsername(.invalidUTF8))
        #expect(performing: { try Username.validate(utf8: [0x61, 0xFF, 0x62]) }, throws: invalidUTF8)
        #expect(performing: { try Username.validate(utf8: [0xC3]) }, throws: invalidUTF8)
        #expect(throws: AuthError.missingUsername) { try Username.validate(utf8: []) }
        #expect(
            performing: { try Username.validate(utf8: [UInt8](repeating: 0x61, count: 300)) },
            throws: Self.refusal(.invalidUsername(.tooLong(maxBytes: 256))))
        #expect(try Username.validate(utf8: Array("bob".utf8)) == "bob")
    }

    struct BadPassword: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let bytes: [UInt8]
        let expected: AuthError
    }

    static let badPasswords = [
        BadPassword(testDescription: "empty", bytes: [], expected: .missingPassword),
        BadPassword(
            testDescription: "4097 bytes",
            bytes: [UInt8](repeating: 0x61, count: 4097),
            expected: .invalidPassword(.tooLong(maxBytes: 4096))
        ),
        BadPassword(testDescription: "NUL inside", bytes: [0x61, 0x00, 0x62], expected: .invalidPassword(.nulByte)),
    ]

    @Test(arguments: badPasswords)
    func refusesBadPasswords(_ password: BadPassword) {
        #expect(
            performing: { try Credentials(username: "alice", password: Secret(copying: password.bytes)) },
            throws: Self.refusal(password.expected))
    }

    /// Errors are equal by code, whatever their details; switching over the code needs a default, so a
    /// code added later breaks no caller.
    @Test func errorsCompareByCode() {
        #expect(AuthError.invalidUsername(.nulByte) == .invalidUsername(.colon))
        #expect(AuthError.invalidUsername(.nulByte).inputProblem == .nulByte)
        #expect(AuthError.providerUnavailable(reason: "a") == .providerUnavailable(reason: "b"))
        #expect(AuthError.providerUnavailable(reason: "down").reason == "down")
        #expect(AuthError.invalidCredentials != .userNotFound)
        #expect(AuthError.tooManyAttempts(retryAfter: .seconds(3)).retryAfter == .seconds(3))
    }

    @Test func acceptsAPasswordOfTheMaximumLength() throws {
        let password = Secret(copying: [UInt8](repeating: 0x61, count: 4096))
        #expect(try Credentials(username: "alice", password: password).password.count == 4096)
    }

    @Test func describesWithoutThePassword() throws {
        let credentials = try Credentials(username: "alice", password: Secret(copying: "hunter2".utf8))
        #expect(!"\(credentials)".contains("hunter2"))
        #expect("\(credentials)".contains("alice"))
    }

    @Test func everyErrorHasAMessageWithoutDetailsOfTheInput() {
        let errors: [AuthError] =
            Self.badUsernames.map(\.1) + Self.badPasswords.map(\.expected) + [
                .invalidCredentials, .userNotFound, .accountLocked(until: nil), .accountExpired,
                .refusedByPolicy, .passwordChangeRequired, .notAuthorized(requirement: "x"),
                .tooManyAttempts(retryAfter: .seconds(1.5)), .tooManyAttempts(retryAfter: nil), .cancelled,
                .providerUnavailable(reason: "down"),
            ]
        for error in errors {
            #expect(error.description.count > 10)
            #expect(error.description.first?.isUppercase == true)
        }
        #expect(AuthError.tooManyAttempts(retryAfter: .seconds(1.5)).description.contains("2 seconds"))
        // PAM's PAM_MAXTRIES knows no time to wait: none is made up.
        #expect(AuthError.tooManyAttempts(retryAfter: nil).description == "Too many failed attempts; try again later.")
        let lockedUntil = AuthError.accountLocked(until: Date(timeIntervalSince1970: 86_400))
        #expect(lockedUntil.description == "The account is locked until 1970-01-02T00:00:00Z.")
    }
}

struct TextSafetyTests {
    @Test func escapesWhatCouldRewriteATerminalOrHideText() {
        #expect(TextSafety.escaped("Bob\u{1B}]0;owned\u{7}") == "Bob\\u{1B}]0;owned\\u{7}")
        #expect(TextSafety.escaped("a\u{202E}b\u{9B}c\u{200D}") == "a\\u{202E}b\\u{9B}c\\u{200D}")
        #expect(TextSafety.escaped("two\nlines\t", keepingLineBreaks: true) == "two\nlines\\u{9}")
        #expect(TextSafety.escaped("two\nlines") == "two\\u{A}lines")
        // Letters, marks and symbols of every script are shown as they are.
        #expect(TextSafety.escaped("Zoë Ünal · 李 · ൎ · 😀") == "Zoë Ünal · 李 · ൎ · 😀")
        #expect(TextSafety.codePoint("\u{7}") == "U+0007")
    }
}

/// Fixed credentials answer the user-name question and one hidden prompt, and nothing else: a
/// provider's own visible question (a one-time code) never gets the user name as its answer.
struct CredentialsConversationTests {
    @Test func answersOnlyTheQuestionsItWasGivenAnswersFor() async throws {
        let conversation = CredentialsConversation(try credentials("alice", "secret"))
        #expect(try await conversation.askUsername("Username: ") == "alice")
        await #expect(throws: AuthError.cancelled) { try await conversation.ask("One-time code: ") }
        #expect(try await conversation.askSecret("Password: ") == Secret(copying: "secret".utf8))
        await #expect(throws: AuthError.cancelled) { try await conversation.askSecret("PIN: ") }
    }
}

/// Every provider answer is one PAM return code, and every refusal one error a caller can act on.
struct AuthOutcomeTests {
    /// A login's error as the PAM code gatekeeperd answers with: a locked account as a wrong password is (no
    /// oracle), and only `auth_err` and `maxtries` refuse a credential.
    @Test func everyErrorMapsToOnePAMReturnCode() {
        let errors: [(AuthError, PAMResult)] = [
            (.invalidCredentials, .authenticationError), (.accountLocked(until: nil), .authenticationError),
            (.tooManyAttempts(retryAfter: nil), .authenticationError), (.loginsInFlight, .authenticationError),
            (.cancelled, .conversationError), (.userNotFound, .userUnknown), (.accountExpired, .accountExpired),
            (.passwordChangeRequired, .newAuthenticationTokenRequired), (.refusedByPolicy, .permissionDenied),
            (.accountNotActivated, .permissionDenied), (.notAuthorized(requirement: "admin"), .permissionDenied),
            (.credentialsExpired, .credentialsExpired), (.providerUnavailable(reason: "down"), .authinfoUnavailable),
            (.passwordNotChanged(reason: "short"), .authenticationTokenError),
        ]
        for (error, code) in errors { #expect(error.pamResult == code, "\(error)") }
        #expect(PAMResult.allCases.filter(\.refusesCredential) == [.authenticationError, .maximumTries])
    }

    @Test func everyAnswerMapsToOnePAMReturnCode() {
        let identity = Identity(username: "alice", provider: "test")
        let answers: [(AuthOutcome, PAMResult)] = [
            (.authenticated(identity), .success),
            (.rejected(.wrongCredentials), .authenticationError),
            (.rejected(.locked(until: nil)), .authenticationError),
            (.rejected(.expiredAccount), .accountExpired),
            (.rejected(.passwordChangeRequired), .newAuthenticationTokenRequired),
            (.rejected(.tooManyTries), .maximumTries),
            (.rejected(.refusedByPolicy, canonicalUsername: "alice"), .permissionDenied),
            (.rejected(.activationRequired), .permissionDenied),
            (.notMine, .userUnknown),
            (.unavailable(reason: "down"), .authinfoUnavailable),
            (.ignored, .ignore),
            (.failed(.credentialsError, reason: "x"), .credentialsError),
            (.failed(.incomplete, reason: "x"), .incomplete),
        ]
        for (answer, code) in answers { #expect(answer.pamResult == code, "\(answer)") }
        // Every one of PAM's codes is reached, by the answer that stands for it, named as Linux-PAM names it.
        for code in PAMResult.allCases where code != .success {
            #expect(AuthOutcome(pamResult: code, reason: "x").pamResult == code, "\(code.rawValue)")
        }
        #expect(
            PAMResult.allCases.map(\.rawValue) == [
                "success", "open_err", "symbol_err", "service_err", "system_err", "buf_err", "perm_denied", "auth_err",
                "cred_insufficient", "authinfo_unavail", "user_unknown", "maxtries", "new_authtok_reqd",
                "acct_expired", "session_err", "cred_unavail", "cred_expired", "cred_err", "no_module_data", "conv_err",
                "authtok_err", "authtok_recover_err", "authtok_lock_busy", "authtok_disable_aging", "try_again",
                "ignore", "abort", "authtok_expired", "module_unknown", "bad_item", "conv_again", "incomplete",
            ])
    }

    @Test func refusalsBecomeTheErrorsCallersCatch() {
        #expect(Rejection.wrongCredentials.error == .invalidCredentials)
        #expect(Rejection.tooManyTries.error == .tooManyAttempts(retryAfter: nil))
        #expect(Rejection.refusedByPolicy.error == .refusedByPolicy)
        #expect(Rejection.locked(until: nil).error == .accountLocked(until: nil))
        #expect(Rejection.activationRequired.error == .accountNotActivated)
        #expect(AuthError.accountNotActivated.description == "This account has not been activated yet.")
        // Only these two are said after the right credential, and so are not counted as guesses.
        #expect(
            [
                Rejection.wrongCredentials, .locked(until: nil), .expiredAccount, .passwordChangeRequired,
                .tooManyTries,
                .refusedByPolicy, .activationRequired,
            ].filter(\.followsTheRightCredential)
                == [.passwordChangeRequired, .activationRequired])
    }
}
