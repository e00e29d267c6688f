#include <unicase.h>
#include <uninorm.h>
#include "unicode_fold.h"

uint8_t *gk_fold(const uint8_t *s, size_t n, size_t *length) {
    return u8_casefold(s, n, NULL, UNINORM_NFKC, NULL, length);
}
