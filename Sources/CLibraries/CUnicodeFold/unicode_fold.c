#include "unicode_fold.h"

#include "gatekeeper_library.h"

#include <unicase.h>
#include <uninorm.h>
#include <unistring/version.h>

/* libunistring 1.1 changed its soname (Debian's libunistring5); 1.0 is libunistring2. */
#if _LIBUNISTRING_VERSION >= 0x010100
#define UNISTRING_LIBRARY "libunistring.so.5"
#else
#define UNISTRING_LIBRARY "libunistring.so.2"
#endif

/* Loaded the first time a name is folded (a login no backend recognised), not when the program starts
 * (see gatekeeper_library.h). uninorm_nfkc is data, looked up as the functions are. */
#define UNISTRING_FUNCTIONS(X) X(u8_casefold) X(uninorm_nfkc)
GATEKEEPER_LIBRARY(unistring, UNISTRING_LIBRARY, "GNU's Unicode library", UNISTRING_FUNCTIONS)

uint8_t *gk_fold(const uint8_t *s, size_t n, size_t *length) {
    if (gatekeeper_unistring_load(NULL) != 0) return NULL;
    return unistring_library.call.u8_casefold(s, n, NULL, unistring_library.call.uninorm_nfkc, NULL, length);
}
