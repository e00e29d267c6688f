/*
 * libpam, loaded when the first PAM transaction starts rather than when the program starts (see
 * gatekeeper_library.h): linked, it and libaudit and libcap-ng are loaded by every run of every tool.
 *
 * Each gk_pam_X has pam_X's signature and calls it. If libpam cannot be loaded, gk_pam_start_confdir fails
 * with PAM_ABORT and no handle (so no other call is reached), and gatekeeper_pam_load says why.
 */
#ifndef GATEKEEPER_PAM_H
#define GATEKEEPER_PAM_H

#include <security/pam_appl.h>
/* The shadow database, to recheck an account (locked, expired) without a password. */
#include <shadow.h>

int gatekeeper_pam_load(const char **error);

int gk_pam_start_confdir(const char *service_name, const char *user, const struct pam_conv *pam_conversation,
                         const char *confdir, pam_handle_t **pamh);
int gk_pam_end(pam_handle_t *pamh, int pam_status);
int gk_pam_authenticate(pam_handle_t *pamh, int flags);
int gk_pam_setcred(pam_handle_t *pamh, int flags);
int gk_pam_acct_mgmt(pam_handle_t *pamh, int flags);
int gk_pam_open_session(pam_handle_t *pamh, int flags);
int gk_pam_close_session(pam_handle_t *pamh, int flags);
int gk_pam_chauthtok(pam_handle_t *pamh, int flags);
int gk_pam_set_item(pam_handle_t *pamh, int item_type, const void *item);
int gk_pam_get_item(const pam_handle_t *pamh, int item_type, const void **item);
/* Never NULL: "libpam is not loaded" before it is. */
const char *gk_pam_strerror(pam_handle_t *pamh, int errnum);

#endif
