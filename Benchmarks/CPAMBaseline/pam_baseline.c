#include "pam_baseline.h"

#include <security/pam_appl.h>
#include <stdlib.h>
#include <string.h>

static int answer(int count, const struct pam_message **messages, struct pam_response **responses,
                  void *context) {
    const char *password = context;
    struct pam_response *replies = calloc((size_t)count, sizeof(struct pam_response));
    if (replies == NULL) return PAM_BUF_ERR;
    for (int index = 0; index < count; index++) {
        if (messages[index]->msg_style == PAM_PROMPT_ECHO_OFF || messages[index]->msg_style == PAM_PROMPT_ECHO_ON) {
            replies[index].resp = strdup(password);
        }
    }
    *responses = replies;
    return PAM_SUCCESS;
}

int gatekeeper_pam_baseline_login(const char *service, const char *user, const char *password,
                                  const char *confdir) {
    struct pam_conv conversation = {answer, (void *)password};
    pam_handle_t *handle = NULL;
    int status = pam_start_confdir(service, user, &conversation, confdir, &handle);
    if (status != PAM_SUCCESS) return status;
    status = pam_authenticate(handle, 0);
    if (status == PAM_SUCCESS) status = pam_acct_mgmt(handle, 0);
    pam_end(handle, status);
    return status;
}

#include <grp.h>
#include <pwd.h>

int gatekeeper_identity_baseline(const char *user) {
    static char buffer[16384];
    struct passwd entry, *found = NULL;
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) != 0 || found == NULL) return -1;
    gid_t groups[256];
    int count = 256;
    if (getgrouplist(user, entry.pw_gid, groups, &count) < 0) return -1;
    for (int index = 0; index < count; index++) {
        static char groupBuffer[16384];
        struct group group, *result = NULL;
        if (getgrgid_r(groups[index], &group, groupBuffer, sizeof groupBuffer, &result) != 0) return -1;
    }
    return count;
}
