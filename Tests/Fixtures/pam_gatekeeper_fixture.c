/*
 * A PAM module for tests: a conversation with several prompts and messages, as one-time-code modules
 * have. It shows an info and an error message, asks "Code: " (echo on) and "PIN: " (echo off), and
 * succeeds when the code is 123456 and the PIN 0000. As a session module with `log=PATH`, it appends
 * "open USER" and "close USER" lines to PATH.
 */
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <stdlib.h>
#include <stdio.h>
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

static int log_session(pam_handle_t *pamh, int argc, const char **argv, const char *event) {
    const char *user = NULL;
    if (pam_get_item(pamh, PAM_USER, (const void **)&user) != PAM_SUCCESS || user == NULL) return PAM_SESSION_ERR;
    for (int index = 0; index < argc; index++) {
        if (strncmp(argv[index], "log=", 4) == 0) {
            FILE *file = fopen(argv[index] + 4, "a");
            if (file == NULL) return PAM_SESSION_ERR;
            fprintf(file, "%s %s\n", event, user);
            fclose(file);
        }
    }
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    return log_session(pamh, argc, argv, "open");
}

PAM_EXTERN int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    return log_session(pamh, argc, argv, "close");
}
