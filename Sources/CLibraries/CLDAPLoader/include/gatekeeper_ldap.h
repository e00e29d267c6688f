/*
 * libldap, loaded when the first LDAP provider is made rather than when the program starts.
 *
 * Linked, libldap brings GnuTLS, SASL and nine more libraries into every run of every tool, LDAP or not:
 * an empty C program linked against them starts in about 2 ms more than one that is not (most of it
 * GnuTLS's constructor). Through these functions, only a program that configures an LDAP provider pays.
 *
 * Each gk_ldap_X has ldap_X's signature and calls it. Before libldap is loaded they load it; if it cannot
 * be loaded they fail as libldap fails locally (LDAP_LOCAL_ERROR, NULL), and gatekeeper_ldap_load says why.
 */
#ifndef GATEKEEPER_LDAP_H
#define GATEKEEPER_LDAP_H

#define LDAP_DEPRECATED 0
#include <ldap.h>

/* The library loaded: libldap's soname for the version whose headers this was built with. */
extern const char *const gatekeeper_ldap_library;

/* Loads libldap once; 0 when it is loaded, else -1 and *error (static text) says why. */
int gatekeeper_ldap_load(const char **error);

int gk_ldap_initialize(LDAP **ldp, const char *url);
int gk_ldap_set_option(LDAP *ld, int option, const void *invalue);
int gk_ldap_get_option(LDAP *ld, int option, void *outvalue);
int gk_ldap_unbind_ext_s(LDAP *ld, LDAPControl **serverctrls, LDAPControl **clientctrls);
int gk_ldap_start_tls_s(LDAP *ld, LDAPControl **serverctrls, LDAPControl **clientctrls);
int gk_ldap_sasl_bind(LDAP *ld, const char *dn, const char *mechanism, struct berval *cred,
                      LDAPControl **serverctrls, LDAPControl **clientctrls, int *msgidp);
int gk_ldap_sasl_bind_s(LDAP *ld, const char *dn, const char *mechanism, struct berval *cred,
                        LDAPControl **serverctrls, LDAPControl **clientctrls, struct berval **servercredp);
int gk_ldap_search_ext_s(LDAP *ld, const char *base, int scope, const char *filter, char **attrs, int attrsonly,
                         LDAPControl **serverctrls, LDAPControl **clientctrls, struct timeval *timeout,
                         int sizelimit, LDAPMessage **res);
int gk_ldap_result(LDAP *ld, int msgid, int all, struct timeval *timeout, LDAPMessage **result);
int gk_ldap_parse_result(LDAP *ld, LDAPMessage *res, int *errcodep, char **matcheddnp, char **diagmsgp,
                         char ***referralsp, LDAPControl ***serverctrls, int freeit);
int gk_ldap_msgfree(LDAPMessage *lm);
LDAPMessage *gk_ldap_first_entry(LDAP *ld, LDAPMessage *chain);
LDAPMessage *gk_ldap_next_entry(LDAP *ld, LDAPMessage *entry);
char *gk_ldap_get_dn(LDAP *ld, LDAPMessage *entry);
struct berval **gk_ldap_get_values_len(LDAP *ld, LDAPMessage *entry, const char *target);
void gk_ldap_value_free_len(struct berval **vals);
void gk_ldap_memfree(void *p);
char *gk_ldap_err2string(int err);
int gk_ldap_create_passwordpolicy_control(LDAP *ld, LDAPControl **ctrlp);
int gk_ldap_parse_passwordpolicy_control(LDAP *ld, LDAPControl *ctrl, ber_int_t *expirep, ber_int_t *gracep,
                                         LDAPPasswordPolicyError *errorp);
LDAPControl *gk_ldap_control_find(const char *oid, LDAPControl **ctrls, LDAPControl ***nextctrlp);
void gk_ldap_control_free(LDAPControl *ctrl);
void gk_ldap_controls_free(LDAPControl **ctrls);
/* RFC 3062's Password Modify extended operation, and ppolicy's words for its errors. */
int gk_ldap_passwd(LDAP *ld, struct berval *user, struct berval *oldpw, struct berval *newpw, LDAPControl **sctrls,
                   LDAPControl **cctrls, int *msgidp);
const char *gk_ldap_passwordpolicy_err2txt(LDAPPasswordPolicyError error);

#endif
