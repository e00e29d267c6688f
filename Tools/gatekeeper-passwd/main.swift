// gatekeeper-passwd: manages an htpasswd-compatible users file, as Apache's htpasswd does, with the extra
// groups and display-name fields of swift-gatekeeper's file provider; and pam_oath's users file.
import PasswdCommands

PasswdCommand.main()
