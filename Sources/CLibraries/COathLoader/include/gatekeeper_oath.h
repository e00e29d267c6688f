/*
 * liboath, loaded the first time a one-time code is made or checked rather than when the program starts
 * (see gatekeeper_library.h).
 *
 * Each gk_oath_X has oath_X's signature and calls it; if liboath cannot be loaded they fail
 * (OATH_CRYPTO_ERROR, NULL), and gatekeeper_oath_load says why.
 */
#ifndef GATEKEEPER_OATH_H
#define GATEKEEPER_OATH_H

#include <liboath/oath.h>

int gatekeeper_oath_load(const char **error);

int gk_oath_init(void);
const char *gk_oath_strerror(int err);
int gk_oath_hex2bin(const char *hexstr, char *binstr, size_t *binlen);
int gk_oath_hotp_generate(const char *secret, size_t secret_length, uint64_t moving_factor, unsigned digits,
                          bool add_checksum, size_t truncation_offset, char *output_otp);
int gk_oath_totp_generate2(const char *secret, size_t secret_length, time_t now, unsigned time_step_size,
                           time_t start_offset, unsigned digits, int flags, char *output_otp);
int gk_oath_totp_validate4(const char *secret, size_t secret_length, time_t now, unsigned time_step_size,
                           time_t start_offset, size_t window, int *otp_pos, uint64_t *otp_counter, int flags,
                           const char *otp);
int gk_oath_authenticate_usersfile(const char *usersfile, const char *username, const char *otp, size_t window,
                                   const char *passwd, time_t *last_otp);

#endif
