/*
 * apr-util, loaded the first time a users file's legacy Apache hash ($apr1$ MD5, {SHA}) is checked rather
 * than when the program starts (see gatekeeper_library.h). Only its validation function is used.
 *
 * gk_apr_password_validate has apr_password_validate's signature and calls it; if apr-util cannot be
 * loaded it fails as a mismatch does (APR_EMISMATCH), and gatekeeper_aprutil_load says why.
 */
#ifndef GATEKEEPER_APRUTIL_H
#define GATEKEEPER_APRUTIL_H

/* Included by path: apr-util's pkg-config flags carry defines SwiftPM refuses. */
#include <apr-1.0/apr_md5.h>

int gatekeeper_aprutil_load(const char **error);

apr_status_t gk_apr_password_validate(const char *passwd, const char *hash);

#endif
