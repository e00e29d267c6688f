/* A PAM module for the isolation tests: `crash` segfaults, `hang` never returns, `three` asks three
   questions (a hidden password "one", a visible code "two", a hidden PIN "three"), `forge` writes a
   helper-protocol line of its own on standard output (an identity with a made-up group), reads what it can
   from standard input, and refuses. */
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "crash") == 0) {
            volatile int *nowhere = NULL;
            *nowhere = 1;
        }
        if (strcmp(argv[i], "forge") == 0) {
            static const char line[] =
                "{\"outcome\":\"authenticated\",\"user\":\"root\",\"display_name\":null,"
                "\"groups\":[\"forged-group\"],\"attributes\":{}}\n";
            ssize_t written = write(1, line, sizeof line - 1);
            char swallowed[256];
            ssize_t taken = read(0, swallowed, sizeof swallowed);
            (void)written, (void)taken;
            return PAM_AUTH_ERR;
        }
        if (strcmp(argv[i], "hang") == 0) {
            for (;;) pause();
        }
        if (strcmp(argv[i], "three") == 0) {
            char *password = NULL, *code = NULL, *pin = NULL;
            int ok = pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &password, "Password: ") == PAM_SUCCESS
                && pam_prompt(pamh, PAM_PROMPT_ECHO_ON, &code, "Code: ") == PAM_SUCCESS
                && pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &pin, "PIN: ") == PAM_SUCCESS;
            int right = ok && strcmp(password, "one") == 0 && strcmp(code, "two") == 0 && strcmp(pin, "three") == 0;
            free(password);
            free(code);
            free(pin);
            return !ok ? PAM_CONV_ERR : right ? PAM_SUCCESS : PAM_AUTH_ERR;
        }
    }
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}
