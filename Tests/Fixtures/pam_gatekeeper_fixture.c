/*
 * A PAM module for tests: a conversation with several prompts and messages, as one-time-code modules
 * have. It shows an info and an error message, asks "Code: " (echo on) and "PIN: " (echo off), and
 * succeeds when the code is 123456 and the PIN 0000. As a session module with `log=PATH`, it appends
 * "open USER" and "close USER" lines to PATH, and "end" when the transaction ends (pam_end).
 *
 * Other arguments:
 *   auth casefold        lower-cases PAM_USER and succeeds (a case-insensitive account database);
 *                        the next module decides
 *   auth quiet           asks nothing and is ignored (for its setcred and log= in the auth stack)
 *   auth mark=PATH       (with quiet) appends "authenticate" to PATH: placed last, it says that libpam
 *                        is about to apply its fail delay
 *   log=PATH             (any type) also appends "establish-cred" / "delete-cred" from setcred
 *   account items=PATH   appends "tty=PAM_TTY ruser=PAM_RUSER" to PATH and succeeds
 *   account notice       shows "Checking the account." and succeeds
 */
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char *argument(int argc, const char **argv, const char *prefix) {
    size_t length = strlen(prefix);
    for (int index = 0; index < argc; index++) {
        if (strncmp(argv[index], prefix, length) == 0) return argv[index] + length;
    }
    return NULL;
}

static void append(const char *path, const char *line) {
    FILE *file = fopen(path, "a");
    if (file == NULL) return;
    fprintf(file, "%s\n", line);
    fclose(file);
}

static void log_end(pam_handle_t *pamh, void *data, int status) {
    (void)pamh;
    if (!(status & PAM_DATA_REPLACE)) append((const char *)data, "end");
    free(data);
}

/* With log=PATH, arranges for "end" to be appended to PATH when pam_end runs. */
static void watch_end(pam_handle_t *pamh, int argc, const char **argv) {
    const char *path = argument(argc, argv, "log=");
    const void *existing = NULL;
    if (path == NULL || pam_get_data(pamh, "gatekeeper-fixture-end", &existing) == PAM_SUCCESS) return;
    char *copy = strdup(path);
    if (copy == NULL || pam_set_data(pamh, "gatekeeper-fixture-end", copy, log_end) != PAM_SUCCESS) free(copy);
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    watch_end(pamh, argc, argv);
    const char *mark = argument(argc, argv, "mark=");
    if (mark != NULL) append(mark, "authenticate");
    if (argument(argc, argv, "quiet") != NULL) return PAM_IGNORE;
    if (argument(argc, argv, "casefold") != NULL) {
        const char *user = NULL;
        if (pam_get_item(pamh, PAM_USER, (const void **)&user) != PAM_SUCCESS || user == NULL) return PAM_AUTH_ERR;
        char *lower = strdup(user);
        if (lower == NULL) return PAM_BUF_ERR;
        for (char *c = lower; *c; c++) *c = (char)tolower((unsigned char)*c);
        int status = pam_set_item(pamh, PAM_USER, lower);
        free(lower);
        return status;
    }
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
    (void)flags;
    watch_end(pamh, argc, argv);
    const char *path = argument(argc, argv, "log=");
    if (path != NULL) append(path, (flags & PAM_DELETE_CRED) ? "delete-cred" : "establish-cred");
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    watch_end(pamh, argc, argv);
    const char *items = argument(argc, argv, "items=");
    if (items != NULL) {
        const char *tty = NULL, *ruser = NULL;
        pam_get_item(pamh, PAM_TTY, (const void **)&tty);
        pam_get_item(pamh, PAM_RUSER, (const void **)&ruser);
        char line[1024];
        snprintf(line, sizeof line, "tty=%s ruser=%s", tty ? tty : "(none)", ruser ? ruser : "(none)");
        append(items, line);
    }
    if (argument(argc, argv, "notice") != NULL && pam_info(pamh, "Checking the account.") != PAM_SUCCESS) {
        return PAM_CONV_ERR;
    }
    return PAM_SUCCESS;
}

static int log_session(pam_handle_t *pamh, int argc, const char **argv, const char *event) {
    const char *user = NULL;
    if (pam_get_item(pamh, PAM_USER, (const void **)&user) != PAM_SUCCESS || user == NULL) return PAM_SESSION_ERR;
    watch_end(pamh, argc, argv);
    const char *path = argument(argc, argv, "log=");
    if (path == NULL) return PAM_SUCCESS;
    char line[1024];
    snprintf(line, sizeof line, "%s %s", event, user);
    append(path, line);
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
