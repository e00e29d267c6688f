#include "gatekeeper_crypt.h"

#include "gatekeeper_library.h"

#include <errno.h>

#define CRYPT_FUNCTIONS(X) X(crypt_r) X(crypt_gensalt_rn)
GATEKEEPER_LIBRARY(crypt, "libcrypt.so.1", "the password hashing library", CRYPT_FUNCTIONS)

char *gk_crypt_r(const char *phrase, const char *setting, struct crypt_data *data) {
    if (gatekeeper_crypt_load(NULL) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return crypt_library.call.crypt_r(phrase, setting, data);
}

char *gk_crypt_gensalt_rn(const char *prefix, unsigned long count, const char *rbytes, int nrbytes, char *output,
                          int output_size) {
    if (gatekeeper_crypt_load(NULL) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return crypt_library.call.crypt_gensalt_rn(prefix, count, rbytes, nrbytes, output, output_size);
}
