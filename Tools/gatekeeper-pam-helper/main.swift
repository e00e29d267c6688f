// gatekeeper-pam-helper: one PAM transaction in a process of its own, for the PAM provider's `isolated` mode.
import PAMProvider

await PAMHelperProgram.main()
