/*
 * libxcrypt, loaded the first time a password is hashed or checked (a users file, the offline cache)
 * rather than when the program starts (see gatekeeper_library.h).
 *
 * gk_crypt_r and gk_crypt_gensalt_rn have the signatures of crypt_r and crypt_gensalt_rn and call them;
 * if libcrypt cannot be loaded they fail as those do (NULL, errno EINVAL), and gatekeeper_crypt_load says why.
 */
#ifndef GATEKEEPER_CRYPT_H
#define GATEKEEPER_CRYPT_H

#include <crypt.h>

int gatekeeper_crypt_load(const char **error);

char *gk_crypt_r(const char *phrase, const char *setting, struct crypt_data *data);
char *gk_crypt_gensalt_rn(const char *prefix, unsigned long count, const char *rbytes, int nrbytes, char *output,
                          int output_size);

#endif
