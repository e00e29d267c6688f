// gatekeeperd: serves the logins of pam_gatekeeper.so (sudo, su, sshd) through gatekeeper stacks.
import GatekeeperDaemon

DaemonCommand.main()
