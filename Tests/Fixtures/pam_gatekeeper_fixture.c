/*
 * A PAM module for tests: a conversation with several prompts and messages, as one-time-code modules
 * have. It shows an info and an error message, asks "Code: " (echo on) and "PIN: " (echo off), and
 * succeeds when the code is 123456 and the PIN 0000.
 */
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <stdlib.h>
#include <string.h>

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags; (void)argc; (void)argv;
    char *code = NULL, *pin = NULL;
    if (pam_info(pamh, "Welcome to the fixture.") != PAM_SUCCESS) return PAM_CONV_ERR;
    if (pam_error(pamh, "This is only a test.") != PAM_SUCCESS) return PAM_CONV_ERR;
    if (pam_prompt(pamh, PAM_PROMPT_ECHO_ON, &code, "Code: ") != PAM_SUCCESS || code == NULL) return PAM_CONV_ERR;
    if (pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &pin, "PIN: ") != PAM_SUCCESS || pin == NULL) {
        free(code);
        return PAM_CONV_ERR;
    }
    int ok = strcmp(code, "123456") == 0 && strcmp(pin, "0000") == 0;
    free(code);
    free(pin);
    return ok ? PAM_SUCCESS : PAM_AUTH_ERR;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}
