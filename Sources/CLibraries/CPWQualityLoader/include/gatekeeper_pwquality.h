/*
 * libpwquality, loaded the first time a new password is checked rather than when the program starts:
 * linked, it and cracklib would be loaded by every run of every tool, though only a password change of
 * a users file uses them.
 *
 * Each gk_pwquality_X has pwquality_X's signature and calls it. Before libpwquality is loaded they load
 * it; if it cannot be loaded they fail (NULL, PWQ_ERROR_MEM_ALLOC), and gatekeeper_pwquality_load says why.
 */
#ifndef GATEKEEPER_PWQUALITY_H
#define GATEKEEPER_PWQUALITY_H

#include <pwquality.h>

/* The library loaded: libpwquality's soname. */
extern const char *const gatekeeper_pwquality_library;

/* Loads libpwquality once; 0 when it is loaded, else -1 and *error (static text) says why. */
int gatekeeper_pwquality_load(const char **error);

pwquality_settings_t *gk_pwquality_default_settings(void);
void gk_pwquality_free_settings(pwquality_settings_t *pwq);
int gk_pwquality_read_config(pwquality_settings_t *pwq, const char *cfgfile, void **auxerror);
int gk_pwquality_check(pwquality_settings_t *pwq, const char *password, const char *oldpassword, const char *user,
                       void **auxerror);
const char *gk_pwquality_strerror(char *buf, size_t len, int errcode, void *auxerror);

#endif
