// The floor a whole-process login through this package is measured against (make bench): a Swift program,
// linked as the tools are, that does the least any Swift tool guarding a command with PAM must — read a
// password line from standard input, log in through libpam in process (pam_start, pam_authenticate,
// pam_acct_mgmt, pam_end: pamtester's calls) and exec the command.
//   gatekeeper-bench-floor SERVICE USER COMMAND [ARGS...]
import CPAMBaseline

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    let usage = "usage: gatekeeper-bench-floor SERVICE USER COMMAND [ARGS...]\n"
    _ = usage.withCString { write(2, $0, strlen($0)) }
    exit(64)
}
var line: [UInt8] = []
var byte: UInt8 = 0
while read(0, &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }
let status = gatekeeper_pam_baseline_login(arguments[1], arguments[2], String(decoding: line, as: UTF8.self), nil)
guard status == 0 else { exit(77) }
var argv = arguments[3...].map { strdup($0) } + [nil]
execv(arguments[3], &argv)
exit(126)
