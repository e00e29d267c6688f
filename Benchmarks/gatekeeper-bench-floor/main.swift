// The floor a whole-process login through this package is measured against (make bench): a Swift program,
// linked as the tools are, that does the least any Swift tool guarding a command with PAM must — read a
// password line from standard input, log in through libpam in process (pam_start, pam_authenticate,
// pam_acct_mgmt, pam_end: pamtester's calls) and exec the command.
//   gatekeeper-bench-floor SERVICE USER COMMAND [ARGS...]
//
// And the floor gatekeeper-passwd add is measured against: read a password line, hash it with libxcrypt's
// bcrypt at its default cost (loaded as the tools load it), and write `USER:HASH` to a new FILE durably —
// a temporary file synced, renamed over FILE, the directory synced — nothing else.
//   gatekeeper-bench-floor --passwd FILE USER
import CCryptLoader
import CPAMBaseline

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    let usage =
        "usage: gatekeeper-bench-floor SERVICE USER COMMAND [ARGS...]\n"
        + "       gatekeeper-bench-floor --passwd FILE USER\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(64)
}
var line: [UInt8] = []
var byte: UInt8 = 0
while read(0, &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }

if arguments[1] == "--passwd" {
    let (file, user) = (arguments[2], arguments[3])
    var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
    guard gk_crypt_gensalt_rn("$2b$", 0, nil, 0, &setting, Int32(setting.count)) != nil else { exit(70) }
    let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
    memset(data, 0, MemoryLayout<crypt_data>.size)
    guard let hash = gk_crypt_r(String(decoding: line, as: UTF8.self), setting, data) else { exit(70) }
    let entry = user + ":" + String(cString: hash) + "\n"
    let temporary = file + ".new"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0, entry.withCString({ write(descriptor, $0, strlen($0)) }) == entry.utf8.count,
        fsync(descriptor) == 0, close(descriptor) == 0, rename(temporary, file) == 0
    else { exit(74) }
    let slash = file.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(file[..<$0]) } ?? "."
    let directory = open(slash.isEmpty ? "/" : slash, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directory >= 0, fsync(directory) == 0 else { exit(74) }
    exit(0)
}
let status = gatekeeper_pam_baseline_login(arguments[1], arguments[2], String(decoding: line, as: UTF8.self), nil)
guard status == 0 else { exit(77) }
var argv = arguments[3...].map { strdup($0) } + [nil]
execv(arguments[3], &argv)
exit(126)
