#include "gatekeeper_oath.h"

#include "gatekeeper_library.h"

#define OATH_FUNCTIONS(X)                                                                                      \
    X(oath_init) X(oath_strerror) X(oath_hex2bin) X(oath_hotp_generate) X(oath_totp_generate2)                \
    X(oath_totp_validate4) X(oath_authenticate_usersfile)
GATEKEEPER_LIBRARY(oath, "liboath.so.0", "the one-time code library", OATH_FUNCTIONS)

#define READY() (gatekeeper_oath_load(NULL) == 0)

int gk_oath_init(void) { return READY() ? oath_library.call.oath_init() : OATH_CRYPTO_ERROR; }

const char *gk_oath_strerror(int err) { return READY() ? oath_library.call.oath_strerror(err) : NULL; }

int gk_oath_hex2bin(const char *hexstr, char *binstr, size_t *binlen) {
    return READY() ? oath_library.call.oath_hex2bin(hexstr, binstr, binlen) : OATH_CRYPTO_ERROR;
}

int gk_oath_hotp_generate(const char *secret, size_t secret_length, uint64_t moving_factor, unsigned digits,
                          bool add_checksum, size_t truncation_offset, char *output_otp) {
    return READY() ? oath_library.call.oath_hotp_generate(secret, secret_length, moving_factor, digits, add_checksum,
                                                          truncation_offset, output_otp)
                   : OATH_CRYPTO_ERROR;
}

int gk_oath_totp_generate2(const char *secret, size_t secret_length, time_t now, unsigned time_step_size,
                           time_t start_offset, unsigned digits, int flags, char *output_otp) {
    return READY() ? oath_library.call.oath_totp_generate2(secret, secret_length, now, time_step_size, start_offset,
                                                           digits, flags, output_otp)
                   : OATH_CRYPTO_ERROR;
}

int gk_oath_totp_validate4(const char *secret, size_t secret_length, time_t now, unsigned time_step_size,
                           time_t start_offset, size_t window, int *otp_pos, uint64_t *otp_counter, int flags,
                           const char *otp) {
    return READY() ? oath_library.call.oath_totp_validate4(secret, secret_length, now, time_step_size, start_offset,
                                                           window, otp_pos, otp_counter, flags, otp)
                   : OATH_CRYPTO_ERROR;
}

int gk_oath_authenticate_usersfile(const char *usersfile, const char *username, const char *otp, size_t window,
                                   const char *passwd, time_t *last_otp) {
    return READY() ? oath_library.call.oath_authenticate_usersfile(usersfile, username, otp, window, passwd, last_otp)
                   : OATH_CRYPTO_ERROR;
}
