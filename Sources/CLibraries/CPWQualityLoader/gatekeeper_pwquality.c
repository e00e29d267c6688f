#include "gatekeeper_pwquality.h"

#include "gatekeeper_library.h"

const char *const gatekeeper_pwquality_library = "libpwquality.so.1";

/* Every function used, typed from libpwquality's own declarations. Never unloaded: cheap to keep, and
 * cracklib's dictionary state lives in it. */
#define PWQUALITY_FUNCTIONS(X)                                                                                 \
    X(pwquality_default_settings) X(pwquality_free_settings) X(pwquality_read_config) X(pwquality_check)        \
    X(pwquality_strerror)
GATEKEEPER_LIBRARY(pwquality, gatekeeper_pwquality_library, "the password quality library", PWQUALITY_FUNCTIONS)

#define READY() (gatekeeper_pwquality_load(NULL) == 0)

pwquality_settings_t *gk_pwquality_default_settings(void) {
    return READY() ? pwquality_library.call.pwquality_default_settings() : NULL;
}
void gk_pwquality_free_settings(pwquality_settings_t *pwq) {
    if (READY()) pwquality_library.call.pwquality_free_settings(pwq);
}
int gk_pwquality_read_config(pwquality_settings_t *pwq, const char *cfgfile, void **auxerror) {
    return READY() ? pwquality_library.call.pwquality_read_config(pwq, cfgfile, auxerror) : PWQ_ERROR_MEM_ALLOC;
}
int gk_pwquality_check(pwquality_settings_t *pwq, const char *password, const char *oldpassword, const char *user,
                       void **auxerror) {
    return READY() ? pwquality_library.call.pwquality_check(pwq, password, oldpassword, user, auxerror) : PWQ_ERROR_MEM_ALLOC;
}
const char *gk_pwquality_strerror(char *buf, size_t len, int errcode, void *auxerror) {
    return READY() ? pwquality_library.call.pwquality_strerror(buf, len, errcode, auxerror) : NULL;
}
