import Foundation
import TestSupport
import Testing

/// gatekeeperd and SSSD side by side (``SideBySide``): the same directory, the same accounts, the same logins
/// through `pamtester`, and each outcome the same — or the difference docs/fleet.md names and defends, asserted
/// here so that it stays what the page says.
@Suite(
    .serialized,
    .timeLimit(.minutes(8)),
    .enabled(if: getuid() == 0, "needs root for sssd, a mount namespace and /etc/pam.d; run as root (CI does)")
)
struct SSSDComparisonTests {
    typealias Service = SideBySide.Service

    /// pamtester's outcome through each service.
    func both(
        _ host: SideBySide, _ user: String, _ operations: String, _ input: String
    ) throws -> [Service: (outcome: String, output: String)] {
        var answers: [Service: (outcome: String, output: String)] = [:]
        for service in Service.allCases {
            answers[service] = try host.pamtester(service, user, operations, input: input)
        }
        return answers
    }

    /// The directory up: the right password, a wrong one, an account ppolicy locked — the same answers. A name
    /// neither the directory nor the host's name service has: both say so (`user_unknown`) — the module tells
    /// the daemon the host does not know it, and nothing is asked of the directory or counted.
    @Test func onlineAnswersAgree() throws {
        let host = try SideBySide()
        for (user, password, outcome) in [
            ("alice", "wonderland", "account management done."), ("alice", "wrong", "Authentication failure"),
            ("dave", "dave-2026", "Authentication failure"),
        ] {
            let answers = try both(host, user, "authenticate acct_mgmt", password + "\n")
            for service in Service.allCases {
                #expect(answers[service]?.outcome == outcome, "\(service), \(user): \(answers[service]?.output ?? "")")
            }
        }
        #expect(try host.daemon.failures(of: "alice") == 1)
        let unknown = try both(host, "nobody7", "authenticate", "x\n")
        #expect(unknown[.sssd]?.outcome == "User not known to the underlying authentication module")
        #expect(
            unknown[.gatekeeper]?.outcome == "User not known to the underlying authentication module",
            "\(unknown[.gatekeeper]?.output ?? "")")
    }

    /// The account phase alone, as sshd runs it for a key-only login: both admit a current account and say a
    /// name the directory lacks is unknown. An account ppolicy locked, or whose password an administrator
    /// reset: gatekeeperd reads the entry and refuses (`perm_denied`, `new_authtok_reqd`); SSSD, whose
    /// default access provider is `permit` (it checks nothing unless `access_provider = ldap` is set, with
    /// `ldap_access_order = ppolicy` for the lock), admits both. Another spelling of a locked account is
    /// refused too.
    @Test func theAccountPhaseAloneSeesTheDirectory() throws {
        let host = try SideBySide()
        for (user, sssd, ours) in [
            ("alice", "account management done.", "account management done."),
            (
                "nobody7", "User not known to the underlying authentication module",
                "User not known to the underlying authentication module"
            ),
            ("dave", "account management done.", "Permission denied"),
            ("fay", "account management done.", "Authentication token is no longer valid; new one required"),
            // Another spelling of an account (the directory matches names without regard to case): not the
            // program's account — but a locked one is refused as under its own spelling, so a name service that
            // folds case does not open it by key.
            (
                "ALICE", "User not known to the underlying authentication module",
                "User not known to the underlying authentication module"
            ),
            ("DAVE", "User not known to the underlying authentication module", "Permission denied"),
        ] {
            let answers = try both(host, user, "acct_mgmt", "")
            #expect(answers[.sssd]?.outcome == sssd, "SSSD, \(user): \(answers[.sssd]?.output ?? "")")
            #expect(
                answers[.gatekeeper]?.outcome == ours, "gatekeeperd, \(user): \(answers[.gatekeeper]?.output ?? "")")
        }
    }

    /// A password an administrator reset (ppolicy's `pwdReset`) is changed at the prompt by both, with the same
    /// questions in the same order: the password, the current one again, the new one twice. SSSD asks them in
    /// `pam_chauthtok` (which programs call once `acct_mgmt` said `new_authtok_reqd`), gatekeeperd in
    /// `pam_authenticate`. Then the new password signs in and the old one does not.
    @Test func expiredPasswordsAreChangedAtThePrompt() throws {
        let host = try SideBySide()
        for (service, user) in [(Service.sssd, "fay"), (.gatekeeper, "hal")] {
            let new = "New-\(user)-Pass-2026"
            let answers = "\(user)-2026\n\(user)-2026\n\(new)\n\(new)\n"
            if service == .sssd {
                let account = try host.pamtester(service, user, "authenticate acct_mgmt", input: "\(user)-2026\n")
                #expect(
                    account.outcome == "Authentication token is no longer valid; new one required", "\(account.output)")
            }
            let operations =
                service == .sssd
                ? "authenticate \"chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)\""
                : "authenticate acct_mgmt \"chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)\""
            let changed = try host.pamtester(service, user, operations, input: answers)
            #expect(changed.outcome == "authentication token altered successfully.", "\(service): \(changed.output)")
            let prompts = changed.output.lowercased().components(separatedBy: ": ").filter {
                $0.hasSuffix("password")
            }
            #expect(
                prompts.map { $0.components(separatedBy: "\n").last ?? $0 } == [
                    "password", "current password", "new password",
                    service == .sssd ? "reenter new password" : "retype new password",
                ], "\(service): \(changed.output)")
            #expect(
                try host.pamtester(service, user, "authenticate acct_mgmt", input: new + "\n").outcome
                    == "account management done.")
            #expect(
                try host.pamtester(service, user, "authenticate", input: "\(user)-2026\n").outcome
                    == "Authentication failure")
        }
    }

    /// A password past ppolicy's `pwdMaxAge` with grace logins left: SSSD admits it and counts a grace login
    /// down; gatekeeperd spends that grace login on the change, there and then — the grace logins exist for
    /// it, and an account whose grace logins run out with the old password is locked until an administrator
    /// resets it.
    @Test func graceLogins() throws {
        let host = try SideBySide()
        let sssd = try host.pamtester(.sssd, "erin", "authenticate acct_mgmt", input: "erin-2026\n")
        #expect(sssd.outcome == "account management done.", "\(sssd.output)")
        #expect(sssd.output.contains("grace login(s) remaining"), "\(sssd.output)")
        let new = "New-Jill-Pass-2026"
        let ours = try host.pamtester(
            .gatekeeper, "jill", "authenticate acct_mgmt", input: "jill-2026\njill-2026\n\(new)\n\(new)\n")
        #expect(ours.outcome == "account management done.", "\(ours.output)")
        #expect(ours.output.contains("change your password"), "\(ours.output)")
        #expect(
            try host.pamtester(.gatekeeper, "jill", "authenticate acct_mgmt", input: new + "\n").outcome
                == "account management done.")
    }

    /// The directory stopped after one online login: both admit the cached password and refuse a wrong one;
    /// failures offline are counted (gatekeeperd's in its faillock tally too), and after six both refuse even the
    /// right password. A name never cached: SSSD answers `user_unknown`, gatekeeperd `authinfo_unavail` (it
    /// cannot tell, and `[authinfo_unavail=ignore]` lets local accounts through).
    @Test func offlineAsSSSDDoesIt() throws {
        let host = try SideBySide()
        for service in Service.allCases {
            #expect(
                try host.pamtester(service, "alice", "authenticate", input: "wonderland\n").outcome
                    == "successfully authenticated")
        }
        #expect(host.slapd.kill())
        let cached = try both(host, "alice", "authenticate acct_mgmt", "wonderland\n")
        for service in Service.allCases {
            #expect(
                cached[service]?.outcome == "account management done.", "\(service): \(cached[service]?.output ?? "")")
        }
        #expect(cached[.sssd]?.output.contains("cached credentials") == true)
        for attempt in 1...6 {
            let wrong = try both(host, "alice", "authenticate", "wrong-\(attempt)\n")
            #expect(wrong[.gatekeeper]?.outcome == "Authentication failure", "\(wrong[.gatekeeper]?.output ?? "")")
            // SSSD says "Permission denied" once it has stopped checking offline.
            #expect(wrong[.sssd]?.outcome == (attempt <= 5 ? "Authentication failure" : "Permission denied"))
        }
        #expect(try host.daemon.failures(of: "alice") == 6)
        let refused = try both(host, "alice", "authenticate", "wonderland\n")
        #expect(refused[.gatekeeper]?.outcome == "Authentication failure")
        #expect(refused[.sssd]?.outcome == "Permission denied")
        let unknown = try both(host, "nobody7", "authenticate", "x\n")
        #expect(unknown[.sssd]?.outcome == "User not known to the underlying authentication module")
        // A name the host does not know is no one's, online or not: nothing is asked of the cache either.
        #expect(unknown[.gatekeeper]?.outcome == "User not known to the underlying authentication module")
    }

    /// A password changed in the directory while this host was offline: once the directory is back, gatekeeperd
    /// asks it at the next login — the old password is refused, the new one admitted. SSSD stays offline until
    /// its `offline_timeout` (60 s) passes: meanwhile it admits the old password from its cache and refuses the
    /// new one.
    @Test func aPasswordChangedWhileOfflineIsNotAdmittedOnceBack() throws {
        let host = try SideBySide()
        for service in Service.allCases {
            #expect(
                try host.pamtester(service, "bob", "authenticate", input: "builder\n").outcome
                    == "successfully authenticated")
        }
        #expect(host.slapd.kill())
        let offline = try both(host, "bob", "authenticate", "builder\n")
        #expect(offline.values.allSatisfy { $0.outcome == "successfully authenticated" })
        try host.slapd.restart()
        let new = "Builder-Changed-2026"
        try host.slapd.changeOwnPassword(of: "bob", from: "builder", to: new)
        let old = try both(host, "bob", "authenticate", "builder\n")
        let current = try both(host, "bob", "authenticate", new + "\n")
        #expect(old[.gatekeeper]?.outcome == "Authentication failure", "\(old[.gatekeeper]?.output ?? "")")
        #expect(current[.gatekeeper]?.outcome == "successfully authenticated", "\(current[.gatekeeper]?.output ?? "")")
        // SSSD, still offline: the old password admitted from its cache, the new one refused.
        #expect(
            old[.sssd]?.outcome == "successfully authenticated"
                && old[.sssd]?.output.contains("cached credentials") == true, "\(old[.sssd]?.output ?? "")")
        #expect(current[.sssd]?.outcome == "Authentication failure", "\(current[.sssd]?.output ?? "")")
    }

    /// A directory that hangs (slapd stopped with SIGSTOP: connections accepted, nothing answered): both admit
    /// the cached password and refuse a wrong one, each after its time-out (3 s here) at most once.
    @Test func aHangingDirectory() throws {
        let host = try SideBySide()
        for service in Service.allCases {
            #expect(
                try host.pamtester(service, "carol", "authenticate", input: "carol-2026\n").outcome
                    == "successfully authenticated")
        }
        host.slapd.hang()
        defer { host.slapd.resume() }
        let right = try both(host, "carol", "authenticate acct_mgmt", "carol-2026\n")
        let wrong = try both(host, "carol", "authenticate", "wrong\n")
        for service in Service.allCases {
            #expect(
                right[service]?.outcome == "account management done.", "\(service): \(right[service]?.output ?? "")")
            #expect(wrong[service]?.outcome == "Authentication failure", "\(service): \(wrong[service]?.output ?? "")")
        }
    }
}
