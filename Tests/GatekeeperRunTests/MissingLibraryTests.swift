import Foundation
import TestSupport
import Testing

/// A backend whose C library cannot be loaded (it is loaded the first time it is called) answers
/// "unavailable" and names the library: never "wrong password", which the lockout would count against a
/// person who typed the right one. Each case puts a stand-in library of the same soname first on
/// LD_LIBRARY_PATH, lacking the function the backend calls.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MissingLibraryTests {
    /// A directory holding `soname`, a shared object exporting only `exports` (empty functions).
    func standIn(_ soname: String, exporting exports: [String]) throws -> String {
        let directory = temporaryDirectory("gatekeeper-missing-library")
        let source = directory + "/stand-in.c"
        try exports.map { "int \($0)(void) { return -1; }\n" }.joined().write(
            toFile: source, atomically: true, encoding: .utf8)
        let (status, output) = try shell(
            "cc -shared -fPIC -o '\(directory)/\(soname)' -Wl,-soname,\(soname) '\(source)'")
        guard status == 0 else {
            throw StandInError(description: "cc could not build the stand-in \(soname):\n\(output)")
        }
        return directory
    }

    /// Nothing was counted: every tally file in `state` is empty.
    func nothingCounted(in state: String) -> Bool {
        let files = FileManager.default.enumerator(atPath: state)?.compactMap { $0 as? String } ?? []
        return files.allSatisfy { file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: state + "/" + file)
            return attributes?[.type] as? FileAttributeType != .typeRegular || file.hasSuffix("/key")
                || (attributes?[.size] as? Int ?? 0) == 0
        }
    }

    @Test(arguments: ["apr1", "sha1"])
    func aLegacyHashWithoutAprUtilIsUnavailableNotWrong(scheme: String) throws {
        let directory = temporaryDirectory("gatekeeper-missing-aprutil")
        let users = directory + "/users"
        // htpasswd -m (apr1) and -s ({SHA}), as Apache writes them.
        let flag = scheme == "apr1" ? "-m" : "-s"
        let made = try shell("htpasswd -b -c \(flag) '\(users)' bob right-password 2>&1")
        try #require(made.status == 0, "htpasswd: \(made.output)")
        let state = directory + "/state"
        let library = try standIn("libaprutil-1.so.0", exporting: ["apr_md5_init"])
        // More than the lockout's 5 (deny=) for one scheme: were they counted, the last login would be locked.
        for _ in 0..<(scheme == "apr1" ? 6 : 1) {
            let result = try run(
                builtExecutable("gatekeeper-run"),
                [
                    "--provider", "file", "--users", users, "--state-dir", state, "--user", "bob", "--password-stdin",
                    "--", "true",
                ],
                input: "right-password\n", environment: ["LD_LIBRARY_PATH": library])
            #expect(result.status == 69, "\(result.status): \(result.stderr)")
            #expect(result.stderr.contains("libaprutil-1.so.0"), "\(result.stderr)")
        }
        #expect(nothingCounted(in: state), "a login that could not be checked was counted")
        // With apr-util back, the right password still gets in: nothing was locked.
        let back = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "file", "--users", users, "--state-dir", state, "--user", "bob", "--password-stdin", "--",
                "true",
            ], input: "right-password\n")
        #expect(back.status == 0, "\(back.status): \(back.stderr)")
        // gatekeeper-passwd verify says the check could not be made (3), not that the password is wrong (1).
        let verify = try run(
            builtExecutable("gatekeeper-passwd"), ["verify", users, "bob", "--password-stdin"],
            input: "right-password\n", environment: ["LD_LIBRARY_PATH": library])
        #expect(
            verify.status == 69 && verify.stderr.contains("libaprutil-1.so.0"), "\(verify.status): \(verify.stderr)")
    }

    @Test func aOneTimeCodeWithoutLiboathIsUnavailableNotWrong() throws {
        let directory = temporaryDirectory("gatekeeper-missing-oath")
        let codes = directory + "/users.oath"
        let added = try run(
            builtExecutable("gatekeeper-passwd"),
            ["otp-add", codes, "gina", "--create", "--totp", "--algorithm", "sha256"],
            input: "")
        try #require(added.status == 0, "otp-add: \(added.stderr)")
        let state = directory + "/state"
        let library = try standIn("liboath.so.0", exporting: ["oath_init", "oath_strerror"])
        let result = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "otp", "--usersfile", codes, "--state-dir", state, "--user", "gina", "--", "true",
            ],
            input: "123456\n", environment: ["LD_LIBRARY_PATH": library])
        #expect(result.status == 69, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("liboath.so.0"), "\(result.stderr)")
        #expect(nothingCounted(in: state), "a code that could not be checked was counted")
    }

    @Test func aUsersFileWithoutLibxcryptNamesIt() throws {
        let directory = temporaryDirectory("gatekeeper-missing-crypt")
        let users = directory + "/users"
        let made = try shell("htpasswd -b -c -B '\(users)' alice right-password 2>&1")
        try #require(made.status == 0, "htpasswd: \(made.output)")
        let library = try standIn("libcrypt.so.1", exporting: ["crypt_r"])
        let result = try run(
            builtExecutable("gatekeeper-run"),
            [
                "--provider", "file", "--users", users, "--state-dir", directory + "/state", "--user", "alice",
                "--password-stdin", "--", "true",
            ],
            input: "right-password\n", environment: ["LD_LIBRARY_PATH": library])
        #expect(result.status == 69, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("libcrypt.so.1"), "\(result.stderr)")
    }
}

struct StandInError: Error, CustomStringConvertible {
    let description: String
}
