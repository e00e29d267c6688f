/*
 * pam-load: logins through a PAM service, as a login program makes them, for gatekeeper-bench's side-by-side
 * figures (pam_gatekeeper.so and gatekeeperd against pam_sss and SSSD).
 *
 *   pam-load SERVICE USER PASSWORD COUNT
 *
 * Makes COUNT logins of USER, each pam_start, pam_authenticate, pam_acct_mgmt and pam_end (sshd's order),
 * the conversation answering every hidden question with PASSWORD and showing nothing. Writes one line per
 * login to standard output: its latency in microseconds. Exits 1 at the first login that fails (saying
 * which call and why on standard error), 64 for a usage error.
 */
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int answer(int count, const struct pam_message **messages, struct pam_response **responses, void *data) {
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *replies = calloc((size_t)count, sizeof *replies);
    if (replies == NULL) return PAM_BUF_ERR;
    for (int index = 0; index < count; index++) {
        if (messages[index]->msg_style != PAM_PROMPT_ECHO_OFF) continue;
        replies[index].resp = strdup((const char *)data);
        if (replies[index].resp == NULL) {
            for (int done = 0; done < index; done++) free(replies[done].resp);
            free(replies);
            return PAM_BUF_ERR;
        }
    }
    *responses = replies;
    return PAM_SUCCESS;
}

static long long microseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int main(int argc, char **argv) {
    if (argc != 5 || atoi(argv[4]) <= 0) {
        fprintf(stderr, "usage: pam-load SERVICE USER PASSWORD COUNT\n");
        return 64;
    }
    const char *service = argv[1], *user = argv[2];
    int count = atoi(argv[4]);
    struct pam_conv conversation = {answer, argv[3]};
    for (int login = 0; login < count; login++) {
        long long begun = microseconds();
        pam_handle_t *handle = NULL;
        int status = pam_start(service, user, &conversation, &handle);
        const char *step = "pam_start";
        if (status == PAM_SUCCESS) {
            step = "pam_authenticate";
            status = pam_authenticate(handle, PAM_SILENT);
        }
        if (status == PAM_SUCCESS) {
            step = "pam_acct_mgmt";
            status = pam_acct_mgmt(handle, PAM_SILENT);
        }
        if (status != PAM_SUCCESS) {
            fprintf(stderr, "pam-load: login %d of %s: %s: %s\n", login + 1, user, step, pam_strerror(handle, status));
            if (handle != NULL) pam_end(handle, status);
            return 1;
        }
        pam_end(handle, PAM_SUCCESS);
        printf("%lld\n", microseconds() - begun);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
