/*
 * HTTP (libcurl) and signature checks (OpenSSL's libcrypto) for the OpenID Connect provider, loaded when the
 * first `oidc` provider is made rather than when the program starts, as libldap is: linked, libcurl brings
 * OpenSSL, nghttp2, libssh2, Kerberos and a dozen more libraries into every run of every tool.
 *
 * The interface speaks only C types, so neither curl.h nor OpenSSL's headers reach Swift. Every function
 * fails closed: before its library is loaded it loads it, and if that fails it reports an error (never a
 * success), with gatekeeper_oidc_load saying why.
 */
#ifndef GATEKEEPER_OIDC_H
#define GATEKEEPER_OIDC_H

#include <stddef.h>
#include <stdint.h>

/* Loads libcurl and libcrypto once; 0 when both are loaded, else -1 and *error (static text) says why. */
int gatekeeper_oidc_load(const char **error);

/* What ended a request. */
typedef enum {
    GK_HTTP_OK = 0,          /* an answer came (of any status) */
    GK_HTTP_UNREACHABLE = 1, /* no connection: the name did not resolve, nothing listened, the peer hung up */
    GK_HTTP_TLS = 2,         /* TLS failed: the certificate was not trusted, or the handshake failed */
    GK_HTTP_TIMEOUT = 3,     /* the whole request took longer than its time-out */
    GK_HTTP_TOO_LARGE = 4,   /* the answer was longer than the bound */
    GK_HTTP_CANCELLED = 5,   /* gk_http_transfer_cancel was called */
    GK_HTTP_REFUSED = 6,     /* the URL's scheme is not allowed (plain http:// where only https:// is) */
    GK_HTTP_FAILED = 7,      /* anything else (libcurl could not be loaded, out of memory, ...) */
} gk_http_status;

typedef struct {
    const char *url;
    /* NULL for GET; else the body of a POST, sent as it is (the caller wipes it afterwards). */
    const uint8_t *body;
    size_t body_length;
    /* Extra request lines ("Content-Type: ...", "Authorization: ..."), read only during the call. */
    const char *const *headers;
    size_t header_count;
    /* The CA certificates to check the server's against, or NULL for the system's. */
    const char *ca_file;
    /* Non-zero allows http:// as well as https:// (the caller allows it only for loopback addresses). */
    int allow_plain_http;
    /* The whole request, connecting included. */
    long timeout_ms;
    /* Answers longer than this end the request with GK_HTTP_TOO_LARGE. */
    size_t max_body;
} gk_http_request;

typedef struct {
    long status_code;
    /* The answer's body (malloc'd, NUL-terminated after body_length bytes); free with gk_http_response_free. */
    uint8_t *body;
    size_t body_length;
    /* The Content-Type of the answer, cut to fit ("" when none). */
    char content_type[128];
    /* libcurl's reason when the request did not end with GK_HTTP_OK ("" otherwise). */
    char message[256];
} gk_http_response;

/* One request at a time, which another thread may cancel while it runs. */
typedef struct gk_http_transfer gk_http_transfer;

gk_http_transfer *gk_http_transfer_new(void);
/* Thread-safe; a request running stops within a few milliseconds, one started later stops at once. */
void gk_http_transfer_cancel(gk_http_transfer *transfer);
/* Runs `request` (redirects are not followed: a 3xx is an answer like any other). */
gk_http_status gk_http_transfer_perform(gk_http_transfer *transfer, const gk_http_request *request,
                                        gk_http_response *response);
void gk_http_transfer_free(gk_http_transfer *transfer);
void gk_http_response_free(gk_http_response *response);

/*
 * Signatures, as JSON Web Signatures make them. `digest` names the hash ("SHA256", "SHA384", "SHA512").
 * Each returns 1 when the signature is good, 0 when it is not, and -1 when the key cannot be made from
 * the parts given (a point not on the curve, a modulus too short, an unknown curve); *bits gets the
 * key's size where it is not NULL.
 */
/* RSASSA-PKCS1-v1_5 (RS256...), or RSASSA-PSS with a salt the digest's length when `pss` is non-zero. */
int gk_verify_rsa(const char *digest, int pss, const uint8_t *n, size_t n_length, const uint8_t *e,
                  size_t e_length, const uint8_t *data, size_t data_length, const uint8_t *signature,
                  size_t signature_length, int *bits);
/* ECDSA (ES256: group "prime256v1", ES384: "secp384r1"); `signature` is JWS's r || s. */
int gk_verify_ec(const char *digest, const char *group, const uint8_t *x, size_t x_length, const uint8_t *y,
                 size_t y_length, const uint8_t *data, size_t data_length, const uint8_t *signature,
                 size_t signature_length);
/* Ed25519 (EdDSA): `x` is the 32-byte public key. */
int gk_verify_ed25519(const uint8_t *x, size_t x_length, const uint8_t *data, size_t data_length,
                      const uint8_t *signature, size_t signature_length);
/* The digest of `data` into `out` (room for 64 bytes); its length, or -1. */
int gk_digest(const char *digest, const uint8_t *data, size_t data_length, uint8_t *out);

#endif
