import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `gatekeeper-passwd add --scheme bcrypt` against `htpasswd -B` (both bcrypt at libxcrypt's and
/// htpasswd's default cost, 5), whole processes, each adding one user to a new file: medians of 21
/// interleaved runs. `make bench` builds gatekeeper-passwd with the Swift runtime linked statically, as
/// gatekeeper-run. Beside them, the floor: `gatekeeper-bench-floor --passwd`, a Swift program linked as the
/// tools are that hashes with libxcrypt's bcrypt and writes the new file durably, and does nothing else.
enum PasswdBench {
    struct Figures {
        var ours: Double
        var htpasswd: Double
        var floor: Double
    }

    static func run(runs: Int = smoke ? 3 : 21) throws -> Figures {
        let passwd = try benchedTool("GATEKEEPER_PASSWD", "gatekeeper-passwd")
        let floor = try benchedTool("GATEKEEPER_FLOOR", "gatekeeper-bench-floor")
        guard FileManager.default.fileExists(atPath: "/usr/bin/htpasswd") else { throw PasswdBenchError.noHtpasswd }
        let directory = privateTemporaryDirectory.appendingPathComponent(
            "gatekeeper-bench-passwd-\(UUID())"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var ours: [Double] = []
        var theirs: [Double] = []
        var floors: [Double] = []
        for round in 0..<(runs + 2) {
            let a = try time([
                passwd, "add", "\(directory)/ours-\(round)", "alice", "--scheme", "bcrypt", "--password-stdin",
                "--create",
            ])
            let b = try time(["/usr/bin/htpasswd", "-B", "-i", "-c", "\(directory)/theirs-\(round)", "alice"])
            let c = try time([floor, "--passwd", "\(directory)/floor-\(round)", "alice"])
            if round >= 2 {  // The first two warm the caches.
                ours.append(a)
                theirs.append(b)
                floors.append(c)
            }
        }
        return Figures(
            ours: ours.sorted()[runs / 2], htpasswd: theirs.sorted()[runs / 2], floor: floors.sorted()[runs / 2])
    }

    /// Seconds for `command`, its password on standard input.
    private static func time(_ command: [String]) throws -> Double {
        let run: (seconds: Double, status: Int32, peakKiB: Int)
        do {
            run = try spawnTimed(command, input: "bench-password\n")
        } catch {
            throw PasswdBenchError.failed(command[0])
        }
        guard run.status == 0 else { throw PasswdBenchError.failed("\(command[0]) exited with \(run.status)") }
        return run.seconds
    }
}

enum PasswdBenchError: Error {
    case noHtpasswd
    case failed(String)
}

func passwdTable(_ result: Result<PasswdBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "gatekeeper-passwd: not measured (\(result))\n" }
    return """
        htpasswd -B -i -c FILE USER, wall               \(fixed(f.htpasswd * 1000, 3)) ms
        gatekeeper-passwd add FILE USER --scheme bcrypt \(fixed(f.ours * 1000, 3)) ms
        ratio gatekeeper-passwd / htpasswd              \(fixed(f.ours / f.htpasswd))         \(Goals.atMost("gatekeeper-passwd add / htpasswd -B, wall", f.ours / f.htpasswd, 1.10))
          the floor: Swift, bcrypt and a durable write  \(fixed(f.floor * 1000, 3)) ms, \(fixed(f.floor / f.htpasswd)) × htpasswd

        """
}

func passwdJSON(_ result: Result<PasswdBench.Figures, any Error>) -> String {
    guard case .success(let f) = result else { return "null" }
    return """
        {"htpasswd_ms":\(fixed(f.htpasswd * 1000, 3)),"gatekeeper_passwd_ms":\(fixed(f.ours * 1000, 3)),"ratio":\(fixed(f.ours / f.htpasswd)),"goal_ratio":1.10,\
        "floor_ms":\(fixed(f.floor * 1000, 3)),"floor_ratio":\(fixed(f.floor / f.htpasswd))}
        """
}
