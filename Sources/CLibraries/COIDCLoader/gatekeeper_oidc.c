#include "gatekeeper_oidc.h"

#include "gatekeeper_library.h"

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if LIBCURL_VERSION_NUM < 0x075500
#error "libcurl 7.85 or later is needed (CURLOPT_PROTOCOLS_STR)"
#endif
#if OPENSSL_VERSION_MAJOR < 3
#error "OpenSSL 3 or later is needed (EVP_PKEY_fromdata)"
#endif

static const char *const curl_soname = "libcurl.so.4";
static const char *const crypto_soname = "libcrypto.so.3";

/* Every function used, typed from the libraries' own declarations. */
#define GATEKEEPER_CURL_FUNCTIONS(X)                                                                           \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_cleanup)         \
    X(curl_easy_strerror) X(curl_multi_init) X(curl_multi_add_handle) X(curl_multi_remove_handle)             \
    X(curl_multi_perform) X(curl_multi_poll) X(curl_multi_wakeup) X(curl_multi_info_read) X(curl_multi_cleanup)

#define GATEKEEPER_CRYPTO_FUNCTIONS(X)                                                                         \
    X(BN_bin2bn) X(BN_free) X(OSSL_PARAM_BLD_new) X(OSSL_PARAM_BLD_push_BN) X(OSSL_PARAM_BLD_push_utf8_string) \
    X(OSSL_PARAM_BLD_push_octet_string) X(OSSL_PARAM_BLD_to_param) X(OSSL_PARAM_BLD_free) X(OSSL_PARAM_free)  \
    X(EVP_PKEY_CTX_new_from_name) X(EVP_PKEY_CTX_new_from_pkey) X(EVP_PKEY_fromdata_init) X(EVP_PKEY_fromdata) \
    X(EVP_PKEY_public_check) X(EVP_PKEY_CTX_free) X(EVP_PKEY_free) X(EVP_PKEY_get_bits)                       \
    X(EVP_PKEY_new_raw_public_key) X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestVerifyInit_ex)            \
    X(EVP_DigestVerify) X(EVP_PKEY_CTX_set_rsa_padding) X(EVP_PKEY_CTX_set_rsa_pss_saltlen) X(ECDSA_SIG_new)  \
    X(ECDSA_SIG_set0) X(ECDSA_SIG_free) X(i2d_ECDSA_SIG) X(EVP_Digest) X(EVP_get_digestbyname)                \
    X(ERR_clear_error)

/* Never unloaded: TLS state and libcrypto's tables live as long as the process. */
GATEKEEPER_LIBRARY(crypto, crypto_soname, "OpenSSL's crypto library", GATEKEEPER_CRYPTO_FUNCTIONS)
GATEKEEPER_LIBRARY(curl, curl_soname, "the HTTP client library", GATEKEEPER_CURL_FUNCTIONS)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[512];

static void load(void) {
    const char *why = NULL;
    if (gatekeeper_crypto_load(&why) != 0 || gatekeeper_curl_load(&why) != 0) {
        snprintf(failure, sizeof failure, "%s", why);
        return;
    }
    /* Thread-safe in libcurl 7.84 and later; SSL and the socket layer only (no signal handlers). libcurl
     * opens SSLKEYLOGFILE here, and would write every TLS session's keys to it (that is, the passwords and
     * tokens of every login to whoever can read the file): it is hidden from libcurl while it starts, and
     * put back for the command the tool runs. */
    char *keylog = getenv("SSLKEYLOGFILE");
    char *saved = keylog != NULL ? strdup(keylog) : NULL;
    if (keylog != NULL) unsetenv("SSLKEYLOGFILE");
    CURLcode code = curl_library.call.curl_global_init(CURL_GLOBAL_DEFAULT);
    if (saved != NULL) {
        setenv("SSLKEYLOGFILE", saved, 1);
        free(saved);
    }
    if (code != CURLE_OK) {
        snprintf(failure, sizeof failure, "libcurl did not start: %s", curl_library.call.curl_easy_strerror(code));
        return;
    }
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int gatekeeper_oidc_load(const char **error) {
    pthread_once(&once, load);
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
    if (error != NULL) *error = failure;
    return -1;
}

#define READY() (gatekeeper_oidc_load(NULL) == 0)

/* MARK: HTTP */

struct gk_http_transfer {
    CURLM *multi;
    int cancelled;
};

gk_http_transfer *gk_http_transfer_new(void) {
    if (!READY()) return NULL;
    gk_http_transfer *transfer = calloc(1, sizeof *transfer);
    if (transfer == NULL) return NULL;
    transfer->multi = curl_library.call.curl_multi_init();
    if (transfer->multi == NULL) {
        free(transfer);
        return NULL;
    }
    return transfer;
}

void gk_http_transfer_cancel(gk_http_transfer *transfer) {
    if (transfer == NULL) return;
    __atomic_store_n(&transfer->cancelled, 1, __ATOMIC_RELEASE);
    curl_library.call.curl_multi_wakeup(transfer->multi);
}

void gk_http_transfer_free(gk_http_transfer *transfer) {
    if (transfer == NULL) return;
    curl_library.call.curl_multi_cleanup(transfer->multi);
    free(transfer);
}

void gk_http_response_free(gk_http_response *response) {
    if (response == NULL) return;
    if (response->body != NULL) {
        /* Answers carry tokens. */
        memset(response->body, 0, response->body_length);
        free(response->body);
    }
    response->body = NULL;
    response->body_length = 0;
}

struct sink {
    uint8_t *data;
    size_t length, capacity, max;
    int too_large, out_of_memory;
};

static size_t receive(char *bytes, size_t size, size_t count, void *context) {
    struct sink *sink = context;
    size_t length = size * count;
    if (length > sink->max - sink->length) {
        sink->too_large = 1;
        return 0;
    }
    if (sink->length + length + 1 > sink->capacity) {
        size_t capacity = sink->capacity ? sink->capacity : 4096;
        while (capacity < sink->length + length + 1) capacity *= 2;
        if (capacity > sink->max + 1) capacity = sink->max + 1;
        uint8_t *grown = malloc(capacity);
        if (grown == NULL) {
            sink->out_of_memory = 1;
            return 0;
        }
        if (sink->data != NULL) {
            memcpy(grown, sink->data, sink->length);
            memset(sink->data, 0, sink->length);
            free(sink->data);
        }
        sink->data = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->data + sink->length, bytes, length);
    sink->length += length;
    return length;
}

/* For plain http://: the socket is opened only to a loopback address (127.0.0.0/8, ::1), whatever the
 * name resolved to. The URL was checked to name one; this holds however the name is read or resolved. */
static curl_socket_t open_loopback_only(void *context, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)context;
    (void)purpose;
    int loopback = 0;
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *ipv4 = (const struct sockaddr_in *)&address->addr;
        loopback = (ntohl(ipv4->sin_addr.s_addr) >> 24) == 127;
    } else if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *)&address->addr;
        loopback = memcmp(&ipv6->sin6_addr, &in6addr_loopback, sizeof in6addr_loopback) == 0;
    }
    if (!loopback) return CURL_SOCKET_BAD;
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

static gk_http_status classify(CURLcode code) {
    switch (code) {
    case CURLE_OK: return GK_HTTP_OK;
    case CURLE_OPERATION_TIMEDOUT: return GK_HTTP_TIMEOUT;
    case CURLE_UNSUPPORTED_PROTOCOL: return GK_HTTP_REFUSED;
    case CURLE_FILESIZE_EXCEEDED: return GK_HTTP_TOO_LARGE;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
        return GK_HTTP_UNREACHABLE;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
        return GK_HTTP_TLS;
    default: return GK_HTTP_FAILED;
    }
}

gk_http_status gk_http_transfer_perform(gk_http_transfer *transfer, const gk_http_request *request,
                                        gk_http_response *response) {
    memset(response, 0, sizeof *response);
    if (transfer == NULL || !READY()) {
        snprintf(response->message, sizeof response->message, "libcurl is not loaded");
        return GK_HTTP_FAILED;
    }
    if (__atomic_load_n(&transfer->cancelled, __ATOMIC_ACQUIRE)) return GK_HTTP_CANCELLED;
    CURL *easy = curl_library.call.curl_easy_init();
    if (easy == NULL) {
        snprintf(response->message, sizeof response->message, "libcurl could not make a request");
        return GK_HTTP_FAILED;
    }
    /* The request's lines, in a list of the caller's strings (nothing copied, nothing left behind). */
    struct curl_slist *lines = NULL;
    if (request->header_count > 0) {
        lines = calloc(request->header_count, sizeof *lines);
        if (lines == NULL) {
            curl_library.call.curl_easy_cleanup(easy);
            snprintf(response->message, sizeof response->message, "out of memory");
            return GK_HTTP_FAILED;
        }
        for (size_t index = 0; index < request->header_count; index++) {
            lines[index].data = (char *)request->headers[index];
            lines[index].next = index + 1 < request->header_count ? &lines[index + 1] : NULL;
        }
    }
    struct sink sink = {.max = request->max_body};
    char reason[CURL_ERROR_SIZE] = "";
    curl_library.call.curl_easy_setopt(easy, CURLOPT_URL, request->url);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, request->allow_plain_http ? "http,https" : "https");
    curl_library.call.curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_library.call.curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (request->ca_file != NULL) curl_library.call.curl_easy_setopt(easy, CURLOPT_CAINFO, request->ca_file);
    /* Plain http:// goes to loopback only, and never through a proxy the environment names (http_proxy,
     * ALL_PROXY), which would see the password in clear; https:// may (the tunnel is verified end to end). */
    if (strncmp(request->url, "https://", 8) != 0) {
        curl_library.call.curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
        curl_library.call.curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_loopback_only);
    }
    curl_library.call.curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, request->timeout_ms);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, request->timeout_ms);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)request->max_body);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, receive);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, reason);
    curl_library.call.curl_easy_setopt(easy, CURLOPT_USERAGENT, "swift-gatekeeper");
    curl_library.call.curl_easy_setopt(easy, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
    if (lines != NULL) curl_library.call.curl_easy_setopt(easy, CURLOPT_HTTPHEADER, lines);
    if (request->body != NULL) {
        curl_library.call.curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_library.call.curl_easy_setopt(easy, CURLOPT_POSTFIELDS, (const char *)request->body);
        curl_library.call.curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
    }

    gk_http_status status = GK_HTTP_FAILED;
    CURLcode result = CURLE_OK;
    int finished = 0;
    if (curl_library.call.curl_multi_add_handle(transfer->multi, easy) != CURLM_OK) {
        snprintf(response->message, sizeof response->message, "libcurl could not start the request");
    } else {
        for (;;) {
            if (__atomic_load_n(&transfer->cancelled, __ATOMIC_ACQUIRE)) {
                status = GK_HTTP_CANCELLED;
                break;
            }
            int running = 0;
            if (curl_library.call.curl_multi_perform(transfer->multi, &running) != CURLM_OK) break;
            int left = 0;
            CURLMsg *message;
            while ((message = curl_library.call.curl_multi_info_read(transfer->multi, &left)) != NULL) {
                if (message->msg == CURLMSG_DONE && message->easy_handle == easy) {
                    result = message->data.result;
                    finished = 1;
                }
            }
            if (finished || running == 0) break;
            /* A cancellation wakes this at once; the bound is for the time-out's sake only. */
            curl_library.call.curl_multi_poll(transfer->multi, NULL, 0, 1000, NULL);
        }
        curl_library.call.curl_multi_remove_handle(transfer->multi, easy);
    }
    if (status != GK_HTTP_CANCELLED && finished) {
        status = classify(result);
        if (result == CURLE_WRITE_ERROR && sink.too_large) status = GK_HTTP_TOO_LARGE;
        if (status == GK_HTTP_OK) {
            curl_library.call.curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response->status_code);
            char *type = NULL;
            if (curl_library.call.curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type != NULL)
                snprintf(response->content_type, sizeof response->content_type, "%s", type);
        } else {
            snprintf(response->message, sizeof response->message, "%s",
                     reason[0] ? reason : curl_library.call.curl_easy_strerror(result));
        }
    }
    curl_library.call.curl_easy_cleanup(easy);
    free(lines);
    if (status == GK_HTTP_OK && !sink.out_of_memory) {
        if (sink.data == NULL) sink.data = calloc(1, 1);
        if (sink.data == NULL) {
            status = GK_HTTP_FAILED;
        } else {
            sink.data[sink.length] = 0;
            response->body = sink.data;
            response->body_length = sink.length;
            return status;
        }
    }
    if (sink.data != NULL) {
        memset(sink.data, 0, sink.length);
        free(sink.data);
    }
    return status == GK_HTTP_OK ? GK_HTTP_FAILED : status;
}

/* MARK: signatures */

static const EVP_MD *named_digest(const char *digest) {
    if (strcmp(digest, "SHA256") != 0 && strcmp(digest, "SHA384") != 0 && strcmp(digest, "SHA512") != 0)
        return NULL;
    return crypto_library.call.EVP_get_digestbyname(digest);
}

/* 1 good, 0 not: a verification that errs is a signature that is not good. */
static int verify_with(EVP_PKEY *key, const char *digest, int pss, const uint8_t *data, size_t data_length,
                       const uint8_t *signature, size_t signature_length) {
    EVP_MD_CTX *context = crypto_library.call.EVP_MD_CTX_new();
    if (context == NULL) return 0;
    EVP_PKEY_CTX *key_context = NULL;
    int good = 0;
    if (crypto_library.call.EVP_DigestVerifyInit_ex(context, &key_context, digest, NULL, NULL, key, NULL) == 1) {
        int ready = 1;
        if (pss) {
            ready = crypto_library.call.EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING) == 1 &&
                    crypto_library.call.EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST) == 1;
        }
        if (ready) good = crypto_library.call.EVP_DigestVerify(context, signature, signature_length, data, data_length) == 1;
    }
    crypto_library.call.EVP_MD_CTX_free(context);
    crypto_library.call.ERR_clear_error();
    return good;
}

/* `check`: whether the key is checked to hold together. An elliptic-curve point off its curve is refused
 * so; an RSA key is not checked (libcrypto's check tests the modulus for primality, some milliseconds a
 * login, and a modulus that is not one a key has only makes every signature fail). */
static EVP_PKEY *key_from(const char *type, OSSL_PARAM_BLD *builder, int check) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM *parameters = crypto_library.call.OSSL_PARAM_BLD_to_param(builder);
    EVP_PKEY_CTX *context = crypto_library.call.EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (parameters == NULL || context == NULL || crypto_library.call.EVP_PKEY_fromdata_init(context) != 1 ||
        crypto_library.call.EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, parameters) != 1)
        key = NULL;
    crypto_library.call.EVP_PKEY_CTX_free(context);
    crypto_library.call.OSSL_PARAM_free(parameters);
    if (key != NULL && check) {
        EVP_PKEY_CTX *check = crypto_library.call.EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        int sound = check != NULL && crypto_library.call.EVP_PKEY_public_check(check) == 1;
        crypto_library.call.EVP_PKEY_CTX_free(check);
        if (!sound) {
            crypto_library.call.EVP_PKEY_free(key);
            key = NULL;
        }
    }
    crypto_library.call.ERR_clear_error();
    return key;
}

int gk_verify_rsa(const char *digest, int pss, const uint8_t *n, size_t n_length, const uint8_t *e,
                  size_t e_length, const uint8_t *data, size_t data_length, const uint8_t *signature,
                  size_t signature_length, int *bits) {
    /* 2048 to 8192 bits: a larger key costs seconds a signature. */
    if (!READY() || named_digest(digest) == NULL || n_length < 256 || n_length > 1024 || e_length == 0 ||
        e_length > 8)
        return -1;
    BIGNUM *modulus = crypto_library.call.BN_bin2bn(n, (int)n_length, NULL);
    BIGNUM *exponent = crypto_library.call.BN_bin2bn(e, (int)e_length, NULL);
    OSSL_PARAM_BLD *builder = crypto_library.call.OSSL_PARAM_BLD_new();
    EVP_PKEY *key = NULL;
    if (modulus != NULL && exponent != NULL && builder != NULL &&
        crypto_library.call.OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, modulus) == 1 &&
        crypto_library.call.OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, exponent) == 1)
        key = key_from("RSA", builder, 0);
    crypto_library.call.OSSL_PARAM_BLD_free(builder);
    crypto_library.call.BN_free(modulus);
    crypto_library.call.BN_free(exponent);
    if (key == NULL) return -1;
    if (bits != NULL) *bits = crypto_library.call.EVP_PKEY_get_bits(key);
    int good = verify_with(key, digest, pss, data, data_length, signature, signature_length);
    crypto_library.call.EVP_PKEY_free(key);
    return good;
}

int gk_verify_ec(const char *digest, const char *group, const uint8_t *x, size_t x_length, const uint8_t *y,
                 size_t y_length, const uint8_t *data, size_t data_length, const uint8_t *signature,
                 size_t signature_length) {
    size_t size;
    if (strcmp(group, "prime256v1") == 0) size = 32;
    else if (strcmp(group, "secp384r1") == 0) size = 48;
    else if (strcmp(group, "secp521r1") == 0) size = 66;
    else return -1;
    if (!READY() || named_digest(digest) == NULL || x_length != size || y_length != size) return -1;
    if (signature_length != 2 * size) return 0;
    uint8_t point[1 + 2 * 66];
    point[0] = 0x04; /* uncompressed */
    memcpy(point + 1, x, size);
    memcpy(point + 1 + size, y, size);
    OSSL_PARAM_BLD *builder = crypto_library.call.OSSL_PARAM_BLD_new();
    EVP_PKEY *key = NULL;
    if (builder != NULL &&
        crypto_library.call.OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) == 1 &&
        crypto_library.call.OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, 1 + 2 * size) == 1)
        key = key_from("EC", builder, 1);
    crypto_library.call.OSSL_PARAM_BLD_free(builder);
    if (key == NULL) return -1;
    /* JWS's r || s as the DER ECDSA-Sig-Value libcrypto checks. */
    int good = 0;
    ECDSA_SIG *value = crypto_library.call.ECDSA_SIG_new();
    BIGNUM *r = crypto_library.call.BN_bin2bn(signature, (int)size, NULL);
    BIGNUM *s = crypto_library.call.BN_bin2bn(signature + size, (int)size, NULL);
    if (value != NULL && r != NULL && s != NULL && crypto_library.call.ECDSA_SIG_set0(value, r, s) == 1) {
        r = s = NULL; /* the signature value owns them now */
        uint8_t der[2 * 66 + 16];
        int length = crypto_library.call.i2d_ECDSA_SIG(value, NULL);
        if (length > 0 && (size_t)length <= sizeof der) {
            uint8_t *end = der;
            crypto_library.call.i2d_ECDSA_SIG(value, &end);
            good = verify_with(key, digest, 0, data, data_length, der, (size_t)length);
        }
    }
    crypto_library.call.BN_free(r);
    crypto_library.call.BN_free(s);
    crypto_library.call.ECDSA_SIG_free(value);
    crypto_library.call.EVP_PKEY_free(key);
    crypto_library.call.ERR_clear_error();
    return good;
}

int gk_verify_ed25519(const uint8_t *x, size_t x_length, const uint8_t *data, size_t data_length,
                      const uint8_t *signature, size_t signature_length) {
    if (!READY() || x_length != 32) return -1;
    if (signature_length != 64) return 0;
    EVP_PKEY *key = crypto_library.call.EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, x_length);
    if (key == NULL) {
        crypto_library.call.ERR_clear_error();
        return -1;
    }
    int good = verify_with(key, NULL, 0, data, data_length, signature, signature_length);
    crypto_library.call.EVP_PKEY_free(key);
    return good;
}

int gk_digest(const char *digest, const uint8_t *data, size_t data_length, uint8_t *out) {
    if (!READY()) return -1;
    const EVP_MD *md = named_digest(digest);
    unsigned int length = 0;
    if (md == NULL || crypto_library.call.EVP_Digest(data, data_length, out, &length, md, NULL) != 1) {
        crypto_library.call.ERR_clear_error();
        return -1;
    }
    return (int)length;
}
