#include "gatekeeper_ldap.h"

#include "gatekeeper_library.h"

#if LDAP_VENDOR_VERSION >= 20600
const char *const gatekeeper_ldap_library = "libldap.so.2";
#elif LDAP_VENDOR_VERSION >= 20500
const char *const gatekeeper_ldap_library = "libldap-2.5.so.0";
#else
const char *const gatekeeper_ldap_library = "libldap_r-2.4.so.2";
#endif

/* Every function used, typed from libldap's own declarations. */
#define GATEKEEPER_LDAP_FUNCTIONS(X)                                                                           \
    X(ldap_initialize) X(ldap_set_option) X(ldap_get_option) X(ldap_unbind_ext_s) X(ldap_start_tls_s)           \
    X(ldap_sasl_bind) X(ldap_sasl_bind_s) X(ldap_search_ext_s) X(ldap_result) X(ldap_parse_result)               \
    X(ldap_msgfree) X(ldap_first_entry) X(ldap_next_entry) X(ldap_get_dn) X(ldap_get_values_len)                \
    X(ldap_value_free_len) X(ldap_memfree) X(ldap_err2string) X(ldap_create_passwordpolicy_control)            \
    X(ldap_parse_passwordpolicy_control) X(ldap_control_find) X(ldap_control_free) X(ldap_controls_free)       \
    X(ldap_passwd) X(ldap_passwordpolicy_err2txt)

/* Never unloaded: connections and TLS state live as long as the process. */
GATEKEEPER_LIBRARY(ldap, gatekeeper_ldap_library, "OpenLDAP's client library", GATEKEEPER_LDAP_FUNCTIONS)

#define READY() (gatekeeper_ldap_load(NULL) == 0)

int gk_ldap_initialize(LDAP **ldp, const char *url) {
    return READY() ? ldap_library.call.ldap_initialize(ldp, url) : LDAP_LOCAL_ERROR;
}
int gk_ldap_set_option(LDAP *ld, int option, const void *invalue) {
    return READY() ? ldap_library.call.ldap_set_option(ld, option, invalue) : LDAP_OPT_ERROR;
}
int gk_ldap_get_option(LDAP *ld, int option, void *outvalue) {
    return READY() ? ldap_library.call.ldap_get_option(ld, option, outvalue) : LDAP_OPT_ERROR;
}
int gk_ldap_unbind_ext_s(LDAP *ld, LDAPControl **serverctrls, LDAPControl **clientctrls) {
    return READY() ? ldap_library.call.ldap_unbind_ext_s(ld, serverctrls, clientctrls) : LDAP_LOCAL_ERROR;
}
int gk_ldap_start_tls_s(LDAP *ld, LDAPControl **serverctrls, LDAPControl **clientctrls) {
    return READY() ? ldap_library.call.ldap_start_tls_s(ld, serverctrls, clientctrls) : LDAP_LOCAL_ERROR;
}
int gk_ldap_sasl_bind(LDAP *ld, const char *dn, const char *mechanism, struct berval *cred,
                      LDAPControl **serverctrls, LDAPControl **clientctrls, int *msgidp) {
    return READY() ? ldap_library.call.ldap_sasl_bind(ld, dn, mechanism, cred, serverctrls, clientctrls, msgidp)
                   : LDAP_LOCAL_ERROR;
}
int gk_ldap_sasl_bind_s(LDAP *ld, const char *dn, const char *mechanism, struct berval *cred,
                        LDAPControl **serverctrls, LDAPControl **clientctrls, struct berval **servercredp) {
    return READY() ? ldap_library.call.ldap_sasl_bind_s(ld, dn, mechanism, cred, serverctrls, clientctrls, servercredp)
                   : LDAP_LOCAL_ERROR;
}
int gk_ldap_search_ext_s(LDAP *ld, const char *base, int scope, const char *filter, char **attrs, int attrsonly,
                         LDAPControl **serverctrls, LDAPControl **clientctrls, struct timeval *timeout,
                         int sizelimit, LDAPMessage **res) {
    return READY() ? ldap_library.call.ldap_search_ext_s(ld, base, scope, filter, attrs, attrsonly, serverctrls,
                                                 clientctrls, timeout, sizelimit, res)
                   : LDAP_LOCAL_ERROR;
}
int gk_ldap_result(LDAP *ld, int msgid, int all, struct timeval *timeout, LDAPMessage **result) {
    return READY() ? ldap_library.call.ldap_result(ld, msgid, all, timeout, result) : -1;
}
int gk_ldap_parse_result(LDAP *ld, LDAPMessage *res, int *errcodep, char **matcheddnp, char **diagmsgp,
                         char ***referralsp, LDAPControl ***serverctrls, int freeit) {
    return READY() ? ldap_library.call.ldap_parse_result(ld, res, errcodep, matcheddnp, diagmsgp, referralsp, serverctrls,
                                                 freeit)
                   : LDAP_LOCAL_ERROR;
}
int gk_ldap_msgfree(LDAPMessage *lm) { return READY() ? ldap_library.call.ldap_msgfree(lm) : -1; }
LDAPMessage *gk_ldap_first_entry(LDAP *ld, LDAPMessage *chain) {
    return READY() ? ldap_library.call.ldap_first_entry(ld, chain) : NULL;
}
LDAPMessage *gk_ldap_next_entry(LDAP *ld, LDAPMessage *entry) {
    return READY() ? ldap_library.call.ldap_next_entry(ld, entry) : NULL;
}
char *gk_ldap_get_dn(LDAP *ld, LDAPMessage *entry) { return READY() ? ldap_library.call.ldap_get_dn(ld, entry) : NULL; }
struct berval **gk_ldap_get_values_len(LDAP *ld, LDAPMessage *entry, const char *target) {
    return READY() ? ldap_library.call.ldap_get_values_len(ld, entry, target) : NULL;
}
void gk_ldap_value_free_len(struct berval **vals) {
    if (READY()) ldap_library.call.ldap_value_free_len(vals);
}
void gk_ldap_memfree(void *p) {
    if (READY()) ldap_library.call.ldap_memfree(p);
}
char *gk_ldap_err2string(int err) {
    static char unloaded[] = "libldap is not loaded";
    return READY() ? ldap_library.call.ldap_err2string(err) : unloaded;
}
int gk_ldap_create_passwordpolicy_control(LDAP *ld, LDAPControl **ctrlp) {
    return READY() ? ldap_library.call.ldap_create_passwordpolicy_control(ld, ctrlp) : LDAP_LOCAL_ERROR;
}
int gk_ldap_parse_passwordpolicy_control(LDAP *ld, LDAPControl *ctrl, ber_int_t *expirep, ber_int_t *gracep,
                                         LDAPPasswordPolicyError *errorp) {
    return READY() ? ldap_library.call.ldap_parse_passwordpolicy_control(ld, ctrl, expirep, gracep, errorp)
                   : LDAP_LOCAL_ERROR;
}
LDAPControl *gk_ldap_control_find(const char *oid, LDAPControl **ctrls, LDAPControl ***nextctrlp) {
    return READY() ? ldap_library.call.ldap_control_find(oid, ctrls, nextctrlp) : NULL;
}
void gk_ldap_control_free(LDAPControl *ctrl) {
    if (READY()) ldap_library.call.ldap_control_free(ctrl);
}
void gk_ldap_controls_free(LDAPControl **ctrls) {
    if (READY()) ldap_library.call.ldap_controls_free(ctrls);
}
int gk_ldap_passwd(LDAP *ld, struct berval *user, struct berval *oldpw, struct berval *newpw, LDAPControl **sctrls,
                   LDAPControl **cctrls, int *msgidp) {
    return READY() ? ldap_library.call.ldap_passwd(ld, user, oldpw, newpw, sctrls, cctrls, msgidp) : LDAP_LOCAL_ERROR;
}
const char *gk_ldap_passwordpolicy_err2txt(LDAPPasswordPolicyError error) {
    return READY() ? ldap_library.call.ldap_passwordpolicy_err2txt(error) : "libldap is not loaded";
}
