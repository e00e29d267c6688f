#include "gatekeeper_pam.h"

#include "gatekeeper_library.h"

#define PAM_FUNCTIONS(X)                                                                                       \
    X(pam_start_confdir) X(pam_end) X(pam_authenticate) X(pam_setcred) X(pam_acct_mgmt) X(pam_open_session)     \
    X(pam_close_session) X(pam_chauthtok) X(pam_set_item) X(pam_get_item) X(pam_strerror)
/* Global, as linked: a PAM module built without -lpam finds libpam's functions in the program. */
GATEKEEPER_LIBRARY_GLOBAL(pam, "libpam.so.0", "Linux-PAM", PAM_FUNCTIONS)

/* Every call but the first is made with a handle gk_pam_start_confdir gave, so libpam is loaded by then. */
#define CALL(name, ...) (gatekeeper_pam_load(NULL) == 0 ? pam_library.call.name(__VA_ARGS__) : PAM_ABORT)

int gk_pam_start_confdir(const char *service_name, const char *user, const struct pam_conv *pam_conversation,
                         const char *confdir, pam_handle_t **pamh) {
    if (gatekeeper_pam_load(NULL) != 0) {
        *pamh = NULL;
        return PAM_ABORT;
    }
    return pam_library.call.pam_start_confdir(service_name, user, pam_conversation, confdir, pamh);
}
int gk_pam_end(pam_handle_t *pamh, int pam_status) { return CALL(pam_end, pamh, pam_status); }
int gk_pam_authenticate(pam_handle_t *pamh, int flags) { return CALL(pam_authenticate, pamh, flags); }
int gk_pam_setcred(pam_handle_t *pamh, int flags) { return CALL(pam_setcred, pamh, flags); }
int gk_pam_acct_mgmt(pam_handle_t *pamh, int flags) { return CALL(pam_acct_mgmt, pamh, flags); }
int gk_pam_open_session(pam_handle_t *pamh, int flags) { return CALL(pam_open_session, pamh, flags); }
int gk_pam_close_session(pam_handle_t *pamh, int flags) { return CALL(pam_close_session, pamh, flags); }
int gk_pam_chauthtok(pam_handle_t *pamh, int flags) { return CALL(pam_chauthtok, pamh, flags); }
int gk_pam_set_item(pam_handle_t *pamh, int item_type, const void *item) {
    return CALL(pam_set_item, pamh, item_type, item);
}
int gk_pam_get_item(const pam_handle_t *pamh, int item_type, const void **item) {
    return CALL(pam_get_item, pamh, item_type, item);
}
const char *gk_pam_strerror(pam_handle_t *pamh, int errnum) {
    return gatekeeper_pam_load(NULL) == 0 ? pam_library.call.pam_strerror(pamh, errnum) : "libpam is not loaded";
}
