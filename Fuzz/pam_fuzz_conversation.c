/* The PAM module the conversation fuzz target logs in through. Its one argument names a file of bytes
   that say which messages to send, in one call of the application's conversation function:

     byte 0        the count, as a signed byte (so 0, negative and more than PAM_MAX_NUM_MSG occur)
     per message   a style byte (any value: 1-4 are PAM's), a 16-bit little-endian length, that many
                   bytes of text (NULs included: C cuts the text at the first); style 0xFE sends a NULL
                   text, 0xFF a NULL message pointer. Missing bytes read as zero.

   It returns PAM_SUCCESS only when the conversation answered every prompt with "answer" and returned
   PAM_SUCCESS; PAM_CONV_ERR when it refused; PAM_AUTH_ERR when it claimed success with wrong answers. */
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char input[1 << 20];

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    if (argc != 1) return PAM_SERVICE_ERR;
    FILE *file = fopen(argv[0], "rb");
    if (!file) return PAM_SERVICE_ERR;
    size_t size = fread(input, 1, sizeof input, file);
    fclose(file);
    const struct pam_conv *conv = NULL;
    if (pam_get_item(pamh, PAM_CONV, (const void **)&conv) != PAM_SUCCESS || !conv || !conv->conv)
        return PAM_SERVICE_ERR;

    size_t at = 0;
#define NEXT() (at < size ? input[at++] : 0)
    int count = (signed char)NEXT();
    int slots = count > 0 ? count : 1;
    struct pam_message *messages = calloc((size_t)slots, sizeof *messages);
    const struct pam_message **pointers = calloc((size_t)slots, sizeof *pointers);
    char **texts = calloc((size_t)slots, sizeof *texts);
    if (!messages || !pointers || !texts) return PAM_BUF_ERR;
    for (int i = 0; i < slots; i++) {
        unsigned style = NEXT();
        size_t length = NEXT();
        length |= (size_t)NEXT() << 8;
        texts[i] = calloc(length + 1, 1);
        if (!texts[i]) return PAM_BUF_ERR;
        for (size_t j = 0; j < length; j++) texts[i][j] = (char)NEXT();
        messages[i].msg_style = (int)style;
        messages[i].msg = style == 0xFE ? NULL : texts[i];
        pointers[i] = style == 0xFF ? NULL : &messages[i];
    }
#undef NEXT

    struct pam_response *responses = NULL;
    int status = conv->conv(count, pointers, &responses, conv->appdata_ptr);
    int result = status == PAM_SUCCESS ? PAM_SUCCESS : PAM_CONV_ERR;
    if (status == PAM_SUCCESS) {
        if (!responses) result = PAM_AUTH_ERR;
        for (int i = 0; responses && i < count; i++) {
            int prompt = messages[i].msg_style == PAM_PROMPT_ECHO_OFF || messages[i].msg_style == PAM_PROMPT_ECHO_ON;
            if (prompt && (!responses[i].resp || strcmp(responses[i].resp, "answer") != 0)) result = PAM_AUTH_ERR;
            free(responses[i].resp);
        }
        free(responses);
    } else if (responses) {
        /* A conversation that fails must not hand back responses. */
        result = PAM_AUTH_ERR;
    }
    for (int i = 0; i < slots; i++) free(texts[i]);
    free(texts);
    free(pointers);
    free(messages);
    return result;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}
