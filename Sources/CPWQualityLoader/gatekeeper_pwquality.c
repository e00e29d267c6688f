#include "gatekeeper_pwquality.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

const char *const gatekeeper_pwquality_library = "libpwquality.so.1";

/* Every function used, typed from libpwquality's own declarations. */
#define GATEKEEPER_PWQUALITY_FUNCTIONS(X)                                                                      \
    X(pwquality_default_settings) X(pwquality_free_settings) X(pwquality_read_config) X(pwquality_check)        \
    X(pwquality_strerror)

static struct {
#define GATEKEEPER_FIELD(name) __typeof__(&name) name;
    GATEKEEPER_PWQUALITY_FUNCTIONS(GATEKEEPER_FIELD)
#undef GATEKEEPER_FIELD
} functions;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[512];

static void load(void) {
    /* Never unloaded: cheap to keep, and cracklib's dictionary state lives in it. */
    void *library = dlopen(gatekeeper_pwquality_library, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "%s, the password quality library, cannot be loaded: %s",
                 gatekeeper_pwquality_library, why ? why : "no reason given");
        return;
    }
#define GATEKEEPER_LOOKUP(name)                                                                                 \
    functions.name = (__typeof__(&name))dlsym(library, #name);                                                  \
    if (functions.name == NULL) {                                                                               \
        snprintf(failure, sizeof failure, "%s has no %s", gatekeeper_pwquality_library, #name);                 \
        return;                                                                                                 \
    }
    GATEKEEPER_PWQUALITY_FUNCTIONS(GATEKEEPER_LOOKUP)
#undef GATEKEEPER_LOOKUP
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int gatekeeper_pwquality_load(const char **error) {
    pthread_once(&once, load);
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
    if (error != NULL) *error = failure;
    return -1;
}

#define READY() (gatekeeper_pwquality_load(NULL) == 0)

pwquality_settings_t *gk_pwquality_default_settings(void) {
    return READY() ? functions.pwquality_default_settings() : NULL;
}
void gk_pwquality_free_settings(pwquality_settings_t *pwq) {
    if (READY()) functions.pwquality_free_settings(pwq);
}
int gk_pwquality_read_config(pwquality_settings_t *pwq, const char *cfgfile, void **auxerror) {
    return READY() ? functions.pwquality_read_config(pwq, cfgfile, auxerror) : PWQ_ERROR_MEM_ALLOC;
}
int gk_pwquality_check(pwquality_settings_t *pwq, const char *password, const char *oldpassword, const char *user,
                       void **auxerror) {
    return READY() ? functions.pwquality_check(pwq, password, oldpassword, user, auxerror) : PWQ_ERROR_MEM_ALLOC;
}
const char *gk_pwquality_strerror(char *buf, size_t len, int errcode, void *auxerror) {
    return READY() ? functions.pwquality_strerror(buf, len, errcode, auxerror) : NULL;
}
