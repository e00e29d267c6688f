import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A helper program at `directory/name`: `#!/bin/sh`, then `body`, which only its owner may run or change
/// (the directory must be one gatekeeper-run trusts, from `trustedDirectory()`).
func writeHelper(_ name: String, in directory: String, _ body: String) throws -> String {
    let path = directory + "/" + name
    try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o700)
    return path
}

/// A new state directory (`--state-dir`) under `directory`, of one test's own: the logins the test counts
/// or cancels count against no one else's.
func makeStateDirectory(in directory: String) throws -> String {
    let path = directory + "/state-\(UUID())"
    guard mkdir(path, 0o700) == 0 else { throw POSIXError(.EEXIST) }
    return path
}
