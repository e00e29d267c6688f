#include "ldap_baseline.h"

#define LDAP_DEPRECATED 0
#include <ldap.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct work {
    const char *uri, *cafile, *base, *user, *password;
    int count;
    int as_provider;
    int failed;
};

static LDAP *open_connection(const struct work *work) {
    LDAP *ld = NULL;
    if (ldap_initialize(&ld, work->uri) != LDAP_SUCCESS) return NULL;
    int version = LDAP_VERSION3, demand = LDAP_OPT_X_TLS_HARD, fresh = 0;
    ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
    ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand);
    ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, work->cafile);
    ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &fresh);
    if (ldap_start_tls_s(ld, NULL, NULL) != LDAP_SUCCESS) {
        ldap_unbind_ext_s(ld, NULL, NULL);
        return NULL;
    }
    return ld;
}

static void *run(void *argument) {
    struct work *work = argument;
    LDAP *ld = open_connection(work);
    if (!ld) {
        work->failed = 1;
        return NULL;
    }
    char filter[256];
    snprintf(filter, sizeof filter, "(&(objectClass=posixAccount)(uid=%s))", work->user);
    for (int i = 0; i < work->count && !work->failed; i++) {
        struct berval empty = {0, NULL};
        if (ldap_sasl_bind_s(ld, "", LDAP_SASL_SIMPLE, &empty, NULL, NULL, NULL) != LDAP_SUCCESS) { work->failed = 1; break; }
        LDAPMessage *result = NULL;
        if (ldap_search_ext_s(ld, work->base, LDAP_SCOPE_SUBTREE, filter, NULL, 0, NULL, NULL, NULL, 2, &result)
            != LDAP_SUCCESS) {
            work->failed = 1;
            break;
        }
        LDAPMessage *entry = ldap_first_entry(ld, result);
        char *dn = entry ? ldap_get_dn(ld, entry) : NULL;
        ldap_msgfree(result);
        if (!dn) { work->failed = 1; break; }
        struct berval credential = {strlen(work->password), (char *)work->password};
        LDAPControl *policy = NULL;
        if (work->as_provider && ldap_create_passwordpolicy_control(ld, &policy) != LDAP_SUCCESS) policy = NULL;
        LDAPControl *controls[] = {policy, NULL};
        if (ldap_sasl_bind_s(ld, dn, LDAP_SASL_SIMPLE, &credential, policy ? controls : NULL, NULL, NULL) != LDAP_SUCCESS)
            work->failed = 1;
        if (policy) ldap_control_free(policy);
        ldap_memfree(dn);
        if (work->as_provider && !work->failed) {
            /* The groups naming the user, as the provider reads them for the identity. */
            char group_filter[256];
            snprintf(group_filter, sizeof group_filter, "(&(objectClass=posixGroup)(memberUid=%s))", work->user);
            LDAPMessage *groups = NULL;
            if (ldap_search_ext_s(ld, work->base, LDAP_SCOPE_SUBTREE, group_filter, NULL, 0, NULL, NULL, NULL, 1000,
                                  &groups) != LDAP_SUCCESS) {
                work->failed = 1;
                ldap_msgfree(groups);
                break;
            }
            for (LDAPMessage *group = ldap_first_entry(ld, groups); group; group = ldap_next_entry(ld, group)) {
                struct berval **names = ldap_get_values_len(ld, group, "cn");
                ldap_value_free_len(names);
            }
            ldap_msgfree(groups);
        }
    }
    ldap_unbind_ext_s(ld, NULL, NULL);
    return NULL;
}

double gatekeeper_ldap_baseline(const char *uri, const char *cafile, const char *base, const char *user,
                                const char *password, int count, int threads, int as_provider) {
    pthread_t ids[64];
    struct work works[64];
    if (threads < 1 || threads > 64) return -1;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int t = 0; t < threads; t++) {
        works[t] = (struct work){uri, cafile, base, user, password, count / threads + (t < count % threads),
                                as_provider, 0};
        pthread_create(&ids[t], NULL, run, &works[t]);
    }
    int failed = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        failed |= works[t].failed;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (failed) return -1;
    return (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
}
