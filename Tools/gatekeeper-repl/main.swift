// gatekeeper-repl: a tabbed terminal app showing protected actions, cancellable logins, fallback to the
// previous tab, and swappable backends.
import GatekeeperCommands

await ReplCommand.main()
