#ifndef GATEKEEPER_LDAP_BASELINE_H
#define GATEKEEPER_LDAP_BASELINE_H

/// `count` LDAP logins with the raw libldap calls, spread over `threads` threads that each keep one
/// connection (StartTLS, certificate checked against `cafile`): per login an anonymous bind, a search for
/// the user under `base`, and a simple bind as the entry found. With `as_provider`, the work
/// LDAPAuthProvider does for a login as well: the bind carries the password-policy request control, and
/// the posixGroup entries naming the user are searched for and their names read. Returns the seconds
/// taken, or a negative number when a login fails.
double gatekeeper_ldap_baseline(const char *uri, const char *cafile, const char *base, const char *user,
                                const char *password, int count, int threads, int as_provider);

#endif
