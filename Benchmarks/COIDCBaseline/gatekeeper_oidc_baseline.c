#include "gatekeeper_oidc_baseline.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct buffer {
    char data[1 << 16];
    size_t length;
};

static size_t collect(char *bytes, size_t size, size_t count, void *context) {
    struct buffer *buffer = context;
    size_t length = size * count;
    if (length > sizeof buffer->data - 1 - buffer->length) return 0;
    memcpy(buffer->data + buffer->length, bytes, length);
    buffer->length += length;
    buffer->data[buffer->length] = 0;
    return length;
}

/* One request; its status, or -1. */
static long request(const char *url, const char *body, const char *userpwd, struct curl_slist *headers,
                    struct buffer *answer) {
    CURL *easy = curl_easy_init();
    if (easy == NULL) return -1;
    answer->length = 0;
    answer->data[0] = 0;
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, answer);
    if (headers != NULL) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    if (userpwd != NULL) {
        curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(easy, CURLOPT_USERPWD, userpwd);
    }
    if (body != NULL) curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
    long status = -1;
    if (curl_easy_perform(easy) == CURLE_OK) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(easy);
    return status;
}

double gatekeeper_oidc_baseline(const char *token_url, const char *userinfo_url, const char *client_id,
                                const char *client_secret, const char *user, const char *password, int count) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char userpwd[512], body[1024];
    snprintf(userpwd, sizeof userpwd, "%s:%s", client_id, client_secret);
    snprintf(body, sizeof body, "grant_type=password&username=%s&password=%s&scope=openid%%20profile%%20email&nonce=n",
             user, password);
    struct curl_slist *form = curl_slist_append(NULL, "Accept: application/json");
    static struct buffer answer;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double seconds = 0;
    for (int login = 0; login < count; login++) {
        if (request(token_url, body, userpwd, form, &answer) != 200) {
            seconds = -1;
            break;
        }
        const char *found = strstr(answer.data, "\"access_token\":\"");
        if (found == NULL) {
            seconds = -1;
            break;
        }
        found += strlen("\"access_token\":\"");
        const char *stop = strchr(found, '"');
        if (stop == NULL || stop - found > 4000) {
            seconds = -1;
            break;
        }
        char bearer[4096 + 32];
        snprintf(bearer, sizeof bearer, "Authorization: Bearer %.*s", (int)(stop - found), found);
        struct curl_slist *headers = curl_slist_append(NULL, bearer);
        headers = curl_slist_append(headers, "Accept: application/json");
        long status = request(userinfo_url, NULL, NULL, headers, &answer);
        curl_slist_free_all(headers);
        if (status != 200) {
            seconds = -1;
            break;
        }
    }
    curl_slist_free_all(form);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (seconds < 0) return seconds;
    return (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
}
