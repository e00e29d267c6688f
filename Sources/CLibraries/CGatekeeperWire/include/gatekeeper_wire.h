/* gatekeeperd's wire format, shared by the daemon (Sources/Daemon/GatekeeperDaemon/DaemonMessage.swift) and
 * pam_gatekeeper.so (Sources/Daemon/PAMModule/pam_gatekeeper.c): every number either side writes or reads, in
 * one place, as SSSD's sss_cli.h is for its clients (docs/pam-module.md, "The protocol").
 *
 * A frame is a 4-byte big-endian length, then the version, the kind, and fields: a tag byte, a 2-byte
 * big-endian length and that many bytes each. */
#ifndef GATEKEEPER_WIRE_H
#define GATEKEEPER_WIRE_H

/* The version every frame starts with; the longest frame (after its length), room for a QR code drawn in
 * text; the longest answer the module sends (a password or a code). */
enum { GK_WIRE_VERSION = 1, GK_WIRE_MAX_FRAME = 32 * 1024, GK_WIRE_MAX_ANSWER = 4096 };

/* What a frame is: the module's request, answer and cancel; the daemon's question, message, result and
 * keepalive (sent while a login works without a question, so the module knows the daemon is alive). */
enum {
    GK_KIND_REQUEST = 1, GK_KIND_ANSWER = 2, GK_KIND_CANCEL = 3,
    GK_KIND_QUESTION = 16, GK_KIND_MESSAGE = 17, GK_KIND_RESULT = 18, GK_KIND_KEEPALIVE = 19
};

/* A field's tag: the request's (1-8), the daemon's (16-19). */
enum {
    GK_TAG_OPERATION = 1, GK_TAG_SERVICE = 2, GK_TAG_USER = 3, GK_TAG_RHOST = 4, GK_TAG_TTY = 5, GK_TAG_RUSER = 6,
    GK_TAG_AUTHTOK = 7, GK_TAG_FLAGS = 8,
    GK_TAG_TEXT = 16, GK_TAG_HIDDEN = 17, GK_TAG_CODE = 18, GK_TAG_CANONICAL_USER = 19
};

/* The PAM call a request is: pam_sm_authenticate, pam_sm_acct_mgmt, pam_sm_chauthtok's two passes. */
enum {
    GK_OP_AUTHENTICATE = 1, GK_OP_ACCOUNT = 2, GK_OP_CHAUTHTOK_PRELIM = 3, GK_OP_CHAUTHTOK_UPDATE = 4
};

/* The request's flags, a bit each: use_first_pass, try_first_pass, PAM_CHANGE_EXPIRED_AUTHTOK, the module's
 * rename_user, and a name the host's name service does not know (sshd's stand-in password). */
enum {
    GK_FLAG_USE_FIRST_PASS = 1 << 0, GK_FLAG_TRY_FIRST_PASS = 1 << 1, GK_FLAG_EXPIRED_ONLY = 1 << 2,
    GK_FLAG_RENAME_USER = 1 << 3, GK_FLAG_UNKNOWN_TO_HOST = 1 << 4
};

#endif
