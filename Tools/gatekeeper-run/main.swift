// gatekeeper-run: runs a command only after the person signs in (and, with --group, belongs to a group).
import GatekeeperCommands

RunCommand.main()
