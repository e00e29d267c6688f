#ifndef GATEKEEPER_UNICODE_FOLD_H
#define GATEKEEPER_UNICODE_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* The NFKC case fold of the UTF-8 text `s` (`n` bytes), through libunistring's u8_casefold with
   normalization form NFKC: `ALICE`, `Alice`, fullwidth and mathematical letters, ligatures and the long s
   all fold to the same text. Returns a buffer of `*length` bytes the caller frees, or NULL (invalid
   UTF-8, no memory). */
uint8_t *gk_fold(const uint8_t *s, size_t n, size_t *length);

#endif
