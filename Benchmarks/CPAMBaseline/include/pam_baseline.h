#ifndef GATEKEEPER_PAM_BASELINE_H
#define GATEKEEPER_PAM_BASELINE_H

/// One PAM login with the raw libpam calls and nothing else: pam_start_confdir, a conversation that
/// answers every hidden prompt with `password`, pam_authenticate, pam_acct_mgmt, pam_end.
/// Returns the PAM status (0 for success).
int gatekeeper_pam_baseline_login(const char *service, const char *user, const char *password,
                                  const char *confdir);

#endif
