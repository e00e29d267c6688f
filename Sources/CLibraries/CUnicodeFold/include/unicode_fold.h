#ifndef GATEKEEPER_UNICODE_FOLD_H
#define GATEKEEPER_UNICODE_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* The NFKC case fold of the UTF-8 text `s` (`n` bytes), through libunistring's u8_casefold with
   normalization form NFKC: `ALICE`, `Alice`, fullwidth and mathematical letters, ligatures and the long s
   all fold to the same text. Returns a buffer of `*length` bytes the caller frees, or NULL (invalid
   UTF-8, no memory, libunistring not loadable). libunistring is loaded the first time. */
uint8_t *gk_fold(const uint8_t *s, size_t n, size_t *length);

/* Loads libunistring once (gk_fold does too); 0 when it is loaded, else -1 and *error (static text) says why. */
int gatekeeper_unistring_load(const char **error);

#endif
