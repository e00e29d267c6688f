#include <security/pam_appl.h>
// The shadow database, to recheck an account (locked, expired) without a password.
#include <shadow.h>
