#define LDAP_DEPRECATED 0
#include <ldap.h>
