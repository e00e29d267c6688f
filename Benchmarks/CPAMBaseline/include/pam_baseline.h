#ifndef GATEKEEPER_PAM_BASELINE_H
#define GATEKEEPER_PAM_BASELINE_H

/// One PAM login with the raw libpam calls and nothing else: pam_start_confdir, a conversation that
/// answers every hidden prompt with `password`, pam_authenticate, pam_acct_mgmt, pam_end.
/// Returns the PAM status (0 for success).
int gatekeeper_pam_baseline_login(const char *service, const char *user, const char *password,
                                  const char *confdir);

/// What the provider adds to a login to make its identity: the account (getpwnam_r) and the names of its
/// groups (getgrouplist, getgrgid_r), as the C a hand-written tool would use. Returns the group count.
int gatekeeper_identity_baseline(const char *user);

/// pam_start_confdir, pam_authenticate, pam_end: a login through a stack, as libpam interprets one (the
/// stack this package's chain is measured against). Every prompt is answered with an empty line.
int gatekeeper_pam_baseline_authenticate(const char *service, const char *user, const char *confdir);

#include <sys/types.h>

/// Starts `argv` (argv[0] an absolute path) with `input` as its standard input, its output discarded, in a
/// session of its own, as `uid`/`gid` with no supplementary groups when `uid` is not negative (as a user
/// starts sudo). Returns the process, or -1.
pid_t gatekeeper_spawn_as(long uid, long gid, char *const argv[], int input);

#endif
