import Authentication
import GatekeeperBackends
import GatekeeperCommands
import GatekeeperSupport
import PasswdCommands
import TestSupport
import ToolSupport

/// What a command performed in this process said, and the status its tool would exit with.
struct Performed {
    var status: Int32
    var stdout = ""
    var stderr = ""
}

/// Words a command says, kept for the test to read.
private final class Said: Sendable {
    let stdout = Locked("")
    let stderr = Locked("")

    /// An output that keeps what is said and answers `--password-stdin` with `password` (cancelled when
    /// `nil`), and neither stops helpers nor touches the terminal: the test process goes on.
    func output(password: String?) -> ToolOutput {
        ToolOutput(
            print: { line in self.stdout.withLock { $0 += line + "\n" } },
            error: { line in self.stderr.withLock { $0 += line + "\n" } },
            passwordFromStandardInput: { password.map { Secret(copying: $0.utf8) } })
    }

    func performed(_ status: ExitStatus) -> Performed {
        Performed(status: status.code, stdout: stdout.withLock { $0 }, stderr: stderr.withLock { $0 })
    }
}

/// gatekeeper-run's command line, read and performed in this process as the tool performs it.
func performRun(_ arguments: [String], password: String? = nil) -> Performed {
    let said = Said()
    do throws(UsageError) {
        let invocation = try RunInvocation.parse(arguments[...], registry: BuiltInBackends.registry)
        return said.performed(
            RunCommand.perform(invocation, registry: BuiltInBackends.registry, output: said.output(password: password)))
    } catch {
        return Performed(status: ExitStatus.usage.code, stderr: "gatekeeper-run: \(error)\n")
    }
}

/// gatekeeper-passwd's command line, read and performed in this process as the tool performs it.
func performPasswd(_ arguments: [String], password: String? = nil) -> Performed {
    let said = Said()
    do throws(ToolExit) {
        guard let invocation = try PasswdInvocation.parse(arguments[...]) else {
            return Performed(status: 0, stdout: PasswdInvocation.usage + "\n")
        }
        return said.performed(PasswdCommand.perform(invocation, output: said.output(password: password)))
    } catch {
        return Performed(status: error.status.code, stderr: error.message.map { "gatekeeper-passwd: \($0)\n" } ?? "")
    }
}
