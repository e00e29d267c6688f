#include "gatekeeper_aprutil.h"

#include "gatekeeper_library.h"

#include <apr-1.0/apr_errno.h>

#define APRUTIL_FUNCTIONS(X) X(apr_password_validate)
GATEKEEPER_LIBRARY(aprutil, "libaprutil-1.so.0", "Apache's utility library", APRUTIL_FUNCTIONS)

apr_status_t gk_apr_password_validate(const char *passwd, const char *hash) {
    return gatekeeper_aprutil_load(NULL) == 0 ? aprutil_library.call.apr_password_validate(passwd, hash) : APR_EMISMATCH;
}
