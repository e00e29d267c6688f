/*
 * pam_gatekeeper.so: a thin client of gatekeeperd. Every PAM call of the calling program (sudo, su, sshd)
 * is sent to the daemon on its Unix socket; every question and message the daemon sends is put to the
 * person through the program's own PAM conversation; the daemon's answer is the call's return code.
 * The module decides nothing itself, and loads no Swift runtime into the program.
 *
 * Options: socket=PATH (/run/gatekeeper/socket), timeout=SECONDS (how long the daemon may work after the
 * request and after each answer the person gives, keepalives or not, 15), use_first_pass, try_first_pass,
 * rename_user (a login may go on as the account's own spelling: PAM_USER is set to it), debug.
 *
 * Only a daemon that is truly absent (no socket, or nobody listening on it) is PAM_AUTHINFO_UNAVAIL, so that
 * [authinfo_unavail=ignore] falls to the next module, as with pam_sss. A daemon that is there and does not
 * serve the login -- busy, over the caller's share, stopping, silent past timeout=, gone mid-login, served by
 * another user, out of reach for this caller -- is a refusal: the next module (pam_unix) never judges a login
 * the stack was asked for. The wire format is docs/pam-module.md's ("The protocol") and
 * Sources/Daemon/GatekeeperDaemon/DaemonMessage.swift's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#define PAM_SM_ACCOUNT
#define PAM_SM_PASSWORD
#define PAM_SM_SESSION
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "gatekeeper_wire.h"

/* The module's six entry points are all it exports (built with -fvisibility=hidden). */
#define EXPORTED __attribute__((visibility("default")))

/* The daemon's bounds on a request's texts: a longer name is no account's; a longer origin is left out. */
enum { MAX_NAME = 1024, MAX_SERVICE = 256 };
/* After a message the person reads (a device login's address and code), the daemon may wait this long for them
   to act elsewhere (a browser): the daemon's own --answer-timeout. */
enum { MESSAGE_WAIT_MS = 300 * 1000 };

struct options {
    const char *socket;
    int timeout_ms;
    int use_first_pass, try_first_pass, rename_user, debug;
};

static void parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *options) {
    options->socket = "/run/gatekeeper/socket";
    options->timeout_ms = 15000;
    options->use_first_pass = options->try_first_pass = options->rename_user = options->debug = 0;
    for (int i = 0; i < argc; i++) {
        const char *word = argv[i];
        if (strncmp(word, "socket=", 7) == 0 && word[7] == '/') {
            options->socket = word + 7;
        } else if (strncmp(word, "timeout=", 8) == 0) {
            char *end = NULL;
            errno = 0;
            long seconds = strtol(word + 8, &end, 10);
            if (errno == 0 && end != word + 8 && *end == '\0' && seconds >= 1 && seconds <= 600)
                options->timeout_ms = (int)seconds * 1000;
            else
                pam_syslog(pamh, LOG_ERR, "timeout= takes 1 to 600 seconds; 15 used");
        } else if (strcmp(word, "use_first_pass") == 0) {
            options->use_first_pass = 1;
        } else if (strcmp(word, "try_first_pass") == 0) {
            options->try_first_pass = 1;
        } else if (strcmp(word, "rename_user") == 0) {
            options->rename_user = 1;
        } else if (strcmp(word, "debug") == 0) {
            options->debug = 1;
        } else {
            pam_syslog(pamh, LOG_ERR, "unknown option ignored: %s", word);
        }
    }
}

/* A frame being written: its length is filled in by send_frame. */
struct frame {
    unsigned char bytes[4 + GK_WIRE_MAX_FRAME];
    size_t length; /* of the payload */
    int overflow;
};

static void frame_start(struct frame *frame, int type) {
    frame->length = 2;
    frame->overflow = 0;
    frame->bytes[4] = GK_WIRE_VERSION;
    frame->bytes[5] = (unsigned char)type;
}

static void frame_field(struct frame *frame, int tag, const void *value, size_t length) {
    if (length > 0xffff || frame->length + 3 + length > GK_WIRE_MAX_FRAME) {
        frame->overflow = 1;
        return;
    }
    unsigned char *at = frame->bytes + 4 + frame->length;
    at[0] = (unsigned char)tag;
    at[1] = (unsigned char)(length >> 8);
    at[2] = (unsigned char)(length & 0xff);
    if (length > 0) memcpy(at + 3, value, length);
    frame->length += 3 + length;
}

static void frame_text(struct frame *frame, int tag, const char *text) {
    if (text != NULL) frame_field(frame, tag, text, strlen(text));
}

static void frame_wipe(struct frame *frame) {
    explicit_bzero(frame->bytes, sizeof frame->bytes);
    frame->length = 0;
}

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Waits until fd is ready for `events` or the deadline passes: 1 ready, 0 timed out, -1 error. */
static int wait_for(int fd, short events, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd poller = {.fd = fd, .events = events};
        int ready = poll(&poller, 1, left > 60000 ? 60000 : (int)left);
        if (ready > 0) return 1;
        if (ready < 0 && errno != EINTR) return -1;
    }
}

static int send_frame(int fd, struct frame *frame, int timeout_ms) {
    if (frame->overflow) return -1;
    size_t length = frame->length;
    frame->bytes[0] = (unsigned char)(length >> 24);
    frame->bytes[1] = (unsigned char)(length >> 16);
    frame->bytes[2] = (unsigned char)(length >> 8);
    frame->bytes[3] = (unsigned char)length;
    size_t total = 4 + length, written = 0;
    long long deadline = now_ms() + timeout_ms;
    while (written < total) {
        if (wait_for(fd, POLLOUT, deadline) != 1) return -1;
        ssize_t count = send(fd, frame->bytes + written, total - written, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (count > 0)
            written += (size_t)count;
        else if (count < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
    }
    return 0;
}

/* What a read from the daemon came to. */
enum { READ_OK = 0, READ_GONE = -1, READ_TIMED_OUT = -2, READ_MALFORMED = -3 };

/* Reads `length` bytes before the deadline: READ_OK, READ_GONE (closed, an error) or READ_TIMED_OUT. */
static int read_exactly(int fd, unsigned char *buffer, size_t length, long long deadline) {
    size_t filled = 0;
    while (filled < length) {
        int ready = wait_for(fd, POLLIN, deadline);
        if (ready == 0) return READ_TIMED_OUT;
        if (ready < 0) return READ_GONE;
        ssize_t count = recv(fd, buffer + filled, length - filled, 0);
        if (count > 0)
            filled += (size_t)count;
        else if (count == 0 || (errno != EINTR && errno != EAGAIN))
            return READ_GONE;
    }
    return READ_OK;
}

/* A message from the daemon, its fields pointing into the frame's buffer. */
struct message {
    int type;
    const unsigned char *text;
    size_t text_length;
    int hidden; /* -1 when absent */
    int code;   /* -1 when absent */
    const unsigned char *user;
    size_t user_length;
};

/* Reads one frame: READ_OK, or READ_GONE, READ_TIMED_OUT or READ_MALFORMED. */
static int read_message(int fd, unsigned char *buffer, int timeout_ms, struct message *message) {
    long long deadline = now_ms() + timeout_ms;
    unsigned char header[4];
    int status = read_exactly(fd, header, 4, deadline);
    if (status != READ_OK) return status;
    size_t length = (size_t)header[0] << 24 | (size_t)header[1] << 16 | (size_t)header[2] << 8 | header[3];
    if (length < 2 || length > GK_WIRE_MAX_FRAME) return READ_MALFORMED;
    status = read_exactly(fd, buffer, length, deadline);
    if (status != READ_OK) return status;
    if (buffer[0] != GK_WIRE_VERSION) return READ_MALFORMED;
    memset(message, 0, sizeof *message);
    message->type = buffer[1];
    message->hidden = message->code = -1;
    size_t index = 2;
    unsigned int seen = 0;
    while (index < length) {
        if (length - index < 3) return READ_MALFORMED;
        int tag = buffer[index];
        size_t field = (size_t)buffer[index + 1] << 8 | buffer[index + 2];
        index += 3;
        if (length - index < field) return READ_MALFORMED;
        const unsigned char *value = buffer + index;
        index += field;
        if (tag < 16 || tag > 19 || (seen & (1u << (tag - 16)))) return READ_MALFORMED;
        seen |= 1u << (tag - 16);
        switch (tag) {
        case GK_TAG_TEXT:
            if (memchr(value, 0, field) != NULL) return READ_MALFORMED;
            message->text = value;
            message->text_length = field;
            break;
        case GK_TAG_HIDDEN:
            if (field != 1 || value[0] > 1) return READ_MALFORMED;
            message->hidden = value[0];
            break;
        case GK_TAG_CODE:
            if (field != 1) return READ_MALFORMED;
            message->code = value[0];
            break;
        case GK_TAG_CANONICAL_USER:
            if (field == 0 || memchr(value, 0, field) != NULL) return READ_MALFORMED;
            message->user = value;
            message->user_length = field;
            break;
        }
    }
    switch (message->type) {
    case GK_KIND_QUESTION:
    case GK_KIND_MESSAGE:
        return message->text != NULL && message->hidden >= 0 && message->code < 0 && message->user == NULL ? READ_OK : READ_MALFORMED;
    case GK_KIND_RESULT:
        return message->code >= 0 && message->text == NULL && message->hidden < 0 ? READ_OK : READ_MALFORMED;
    case GK_KIND_KEEPALIVE:
        return seen == 0 ? READ_OK : READ_MALFORMED;
    default:
        return READ_MALFORMED;
    }
}

/* The codes the daemon may answer with; anything else is the daemon's fault, and fails. */
static int known_result(int code) {
    switch (code) {
    case PAM_SUCCESS: case PAM_AUTH_ERR: case PAM_USER_UNKNOWN: case PAM_AUTHINFO_UNAVAIL: case PAM_MAXTRIES:
    case PAM_NEW_AUTHTOK_REQD: case PAM_ACCT_EXPIRED: case PAM_PERM_DENIED: case PAM_CRED_EXPIRED:
    case PAM_AUTHTOK_ERR: case PAM_AUTHTOK_RECOVERY_ERR: case PAM_TRY_AGAIN: case PAM_IGNORE: case PAM_CONV_ERR:
    case PAM_SERVICE_ERR: case PAM_SYSTEM_ERR: case PAM_CRED_INSUFFICIENT:
        return 1;
    default:
        return 0;
    }
}

/* Why the daemon was not reached: absent (no socket, or nobody listens on it) or there and refusing. */
enum { DAEMON_ABSENT = -1, DAEMON_REFUSED = -2 };

/* Connects to the daemon: a descriptor, DAEMON_ABSENT or DAEMON_REFUSED (said to the person and to syslog). */
static int connect_daemon(pam_handle_t *pamh, const struct options *options) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(options->socket) >= sizeof address.sun_path) {
        pam_syslog(pamh, LOG_ERR, "socket= names a path too long for a socket");
        pam_error(pamh, "The login service (gatekeeperd) is not set up right: see the system log.");
        return DAEMON_REFUSED;
    }
    strcpy(address.sun_path, options->socket);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        pam_syslog(pamh, LOG_ERR, "socket: %m");
        pam_error(pamh, "The login service (gatekeeperd) cannot be reached.");
        return DAEMON_REFUSED;
    }
    /* connect() on a Unix socket waits at most this long for a full backlog. */
    struct timeval limit = {.tv_sec = options->timeout_ms / 1000, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        /* No socket, or a socket nobody listens on: the daemon is not running. */
        if (error == ENOENT || error == ECONNREFUSED) {
            pam_syslog(pamh, LOG_ERR, "gatekeeperd is not running (%s: %s)", options->socket, strerror(error));
            pam_error(pamh, "The login service (gatekeeperd) is not running.");
            return DAEMON_ABSENT;
        }
        /* Anything else -- a full backlog, a directory this caller may not enter -- is a daemon there that this
           login cannot reach: refused, never taken for one that is not running. */
        pam_syslog(pamh, LOG_ERR, "cannot reach gatekeeperd at %s: %s; refused", options->socket, strerror(error));
        pam_error(pamh, "The login service (gatekeeperd) cannot be reached (%s).", strerror(error));
        return DAEMON_REFUSED;
    }
    /* Only root's daemon (or one of the caller's own user) is believed: nobody else can answer for it. */
    struct ucred peer;
    socklen_t size = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof peer ||
        (peer.uid != 0 && peer.uid != geteuid())) {
        pam_syslog(pamh, LOG_ERR, "the socket %s is served by uid %u, not root; refused", options->socket,
                   (unsigned)peer.uid);
        pam_error(pamh, "The login service's socket is served by another user, not root: refused.");
        close(fd);
        return DAEMON_REFUSED;
    }
    return fd;
}

static const char *item(pam_handle_t *pamh, int type) {
    const void *value = NULL;
    if (pam_get_item(pamh, type, &value) != PAM_SUCCESS) return NULL;
    return value;
}

/* Said to syslog and to the person even under PAM_SILENT (sudo's default): without it, a login service
   that failed reads as a wrong password. */
static void failed(pam_handle_t *pamh, const char *why) {
    pam_syslog(pamh, LOG_ERR, "gatekeeperd %s; refused", why);
    pam_error(pamh, "The login service (gatekeeperd) %s.", why);
}

/* A login the daemon did not serve, though it is there: refused, in the words of the call. */
static int refusal(int operation) {
    switch (operation) {
    case GK_OP_AUTHENTICATE: return PAM_AUTH_ERR;
    case GK_OP_ACCOUNT: return PAM_PERM_DENIED;
    default: return PAM_AUTHTOK_ERR;
    }
}

/* Whether the password typed here may be left in PAM_AUTHTOK for the modules after this one: after a login
   the stack admitted, or one it did not judge (no stack for the service, a name none of its backends has, a
   directory that cannot be reached), as pam_unix and pam_sss leave it. A password the stack refused is never
   handed on: pam_unix's try_first_pass would judge it again. */
static int hands_on_password(int result) {
    return result == PAM_SUCCESS || result == PAM_IGNORE || result == PAM_USER_UNKNOWN ||
           result == PAM_AUTHINFO_UNAVAIL;
}

/* Whether the name service says it has no account `user`: nothing found, with no error or one of those
   getpwnam_r(3) lists for "not found" (glibc answers ENOENT when a source such as sss is not running). A
   look-up that failed otherwise (out of descriptors or memory) is no answer, and the login goes on as any
   other; the daemon looks the name up itself as well, so a program's starved look-up alone frees no guess. */
static int unknown_to_host(const char *user) {
    size_t size = 16384;
    for (;;) {
        char *buffer = malloc(size);
        if (buffer == NULL) return 0;
        struct passwd entry, *found = NULL;
        int error = getpwnam_r(user, &entry, buffer, size, &found);
        free(buffer);
        if (error == ERANGE && size < 1024 * 1024) {
            size *= 2;
            continue;
        }
        return found == NULL &&
               (error == 0 || error == ENOENT || error == ESRCH || error == EBADF || error == EPERM);
    }
}

/* What one PAM call sends: the PAM items read, the password already typed (use_first_pass, try_first_pass) and
   the request's flags; PAM_SUCCESS, or the PAM error the call answers before the daemon is asked. */
struct request {
    const char *user;
    const char *service;
    const char *authtok;
    unsigned int flags;
};

static int read_request(pam_handle_t *pamh, int operation, int flags, const struct options *options,
                        struct request *request) {
    memset(request, 0, sizeof *request);
    int status = pam_get_user(pamh, &request->user, NULL);
    if (status != PAM_SUCCESS) return status == PAM_CONV_AGAIN ? PAM_INCOMPLETE : status;
    if (request->user == NULL || *request->user == '\0' || strlen(request->user) > MAX_NAME) return PAM_USER_UNKNOWN;
    request->service = item(pamh, PAM_SERVICE);
    if (request->service == NULL || strlen(request->service) > MAX_SERVICE) return PAM_SERVICE_ERR;
    if (operation == GK_OP_AUTHENTICATE && (options->use_first_pass || options->try_first_pass)) {
        request->authtok = item(pamh, PAM_AUTHTOK);
        if (options->use_first_pass) {
            if (request->authtok == NULL) return PAM_AUTHTOK_RECOVERY_ERR;
            request->flags |= GK_FLAG_USE_FIRST_PASS;
        } else {
            request->flags |= GK_FLAG_TRY_FIRST_PASS;
        }
        if (request->authtok != NULL && strlen(request->authtok) > GK_WIRE_MAX_ANSWER) return PAM_AUTH_ERR;
    }
    if (flags & PAM_CHANGE_EXPIRED_AUTHTOK) request->flags |= GK_FLAG_EXPIRED_ONLY;
    if (options->rename_user) request->flags |= GK_FLAG_RENAME_USER;
    /* A name the host's name service does not know (sshd runs PAM for one with a stand-in password): the daemon
       asks as for any name and counts nothing, as pam_faillock counts nothing for it. */
    if (operation == GK_OP_AUTHENTICATE && unknown_to_host(request->user)) request->flags |= GK_FLAG_UNKNOWN_TO_HOST;
    return PAM_SUCCESS;
}

/* One call's conversation with the daemon: its connection and deadline, its buffers, and the password typed
   at the first hidden question (for PAM_AUTHTOK). */
struct call {
    pam_handle_t *pamh;
    const struct options *options;
    int operation;
    int fd;
    long long deadline;
    struct frame *frame;
    unsigned char *buffer;
    char *first_answer;
};

/* Writes the request into the call's frame: 0, or -1 when it is too long to send. */
static int write_request(struct call *call, const struct request *request) {
    struct frame *frame = call->frame;
    frame_start(frame, GK_KIND_REQUEST);
    unsigned char op = (unsigned char)call->operation;
    frame_field(frame, GK_TAG_OPERATION, &op, 1);
    frame_text(frame, GK_TAG_SERVICE, request->service);
    frame_text(frame, GK_TAG_USER, request->user);
    const int origins[] = {PAM_RHOST, PAM_TTY, PAM_RUSER};
    const int tags[] = {GK_TAG_RHOST, GK_TAG_TTY, GK_TAG_RUSER};
    for (int i = 0; i < 3; i++) {
        const char *origin = item(call->pamh, origins[i]);
        if (origin != NULL && strlen(origin) <= MAX_NAME) frame_text(frame, tags[i], origin);
    }
    frame_text(frame, GK_TAG_AUTHTOK, request->authtok);
    unsigned char flag_bytes[4] = {0, 0, 0, (unsigned char)request->flags};
    frame_field(frame, GK_TAG_FLAGS, flag_bytes, 4);
    return frame->overflow ? -1 : 0;
}

/* The daemon's result, taken: the code (one the daemon may answer with), the account's own spelling when
   rename_user lets the daemon give one, and the password typed, handed on where the stack lets it be. */
static int take_result(struct call *call, const struct message *message) {
    pam_handle_t *pamh = call->pamh;
    int result = known_result(message->code) ? message->code : PAM_SYSTEM_ERR;
    /* A new spelling is taken only with rename_user (the daemon sends none otherwise). */
    if (message->user != NULL && !call->options->rename_user) {
        pam_syslog(pamh, LOG_ERR, "gatekeeperd renamed the user without rename_user; refused");
        return PAM_SYSTEM_ERR;
    }
    if (result == PAM_SUCCESS && message->user != NULL) {
        /* The account's own spelling, as the backend has it: the name the program goes on with. */
        char canonical[1025];
        if (message->user_length >= sizeof canonical) return PAM_SYSTEM_ERR;
        memcpy(canonical, message->user, message->user_length);
        canonical[message->user_length] = '\0';
        if (pam_set_item(pamh, PAM_USER, canonical) != PAM_SUCCESS) result = PAM_SYSTEM_ERR;
    }
    /* The password typed, for the modules after this one (try_first_pass, use_first_pass), where the stack
       admitted it or did not judge it. */
    if (call->operation == GK_OP_AUTHENTICATE && call->first_answer != NULL && item(pamh, PAM_AUTHTOK) == NULL &&
        hands_on_password(result))
        pam_set_item(pamh, PAM_AUTHTOK, call->first_answer);
    if (call->options->debug) pam_syslog(pamh, LOG_DEBUG, "gatekeeperd answered %s", pam_strerror(pamh, result));
    return result;
}

/* Whether the conversation goes on after a message or a question, or ends with `*result`. */
enum { GO_ON = 0, ENDED = 1 };

/* A message shown, or a question asked through the program's conversation and its answer sent. */
static int relay(struct call *call, const struct message *message, int *result) {
    pam_handle_t *pamh = call->pamh;
    const struct options *options = call->options;
    /* Text to show or ask: copied out of the frame as a C string. */
    char *text = strndup((const char *)message->text, message->text_length);
    if (text == NULL) {
        *result = PAM_BUF_ERR;
        return ENDED;
    }
    /* Shown even under PAM_SILENT: the daemon says only what the login needs (a device login's address and
       code, why a password must change). */
    if (message->type == GK_KIND_MESSAGE) {
        pam_prompt(pamh, message->hidden == 1 ? PAM_ERROR_MSG : PAM_TEXT_INFO, NULL, "%s", text);
        free(text);
        long long after = now_ms() + (options->timeout_ms > MESSAGE_WAIT_MS ? options->timeout_ms : MESSAGE_WAIT_MS);
        if (after > call->deadline) call->deadline = after;
        return GO_ON;
    }
    /* A question: the program's conversation asks it; its failure (Ctrl-C) cancels the login. */
    char *response = NULL;
    int status = pam_prompt(pamh, message->hidden ? PAM_PROMPT_ECHO_OFF : PAM_PROMPT_ECHO_ON, &response, "%s", text);
    free(text);
    if (status != PAM_SUCCESS || response == NULL || strlen(response) > GK_WIRE_MAX_ANSWER) {
        if (response != NULL) {
            explicit_bzero(response, strlen(response));
            free(response);
        }
        frame_start(call->frame, GK_KIND_CANCEL);
        send_frame(call->fd, call->frame, options->timeout_ms);
        *result = status == PAM_SUCCESS ? refusal(call->operation) : PAM_CONV_ERR;
        return ENDED;
    }
    frame_start(call->frame, GK_KIND_ANSWER);
    frame_text(call->frame, GK_TAG_TEXT, response);
    int sent = send_frame(call->fd, call->frame, options->timeout_ms);
    frame_wipe(call->frame);
    if (message->hidden && call->first_answer == NULL && call->operation == GK_OP_AUTHENTICATE)
        call->first_answer = response;
    else {
        explicit_bzero(response, strlen(response));
        free(response);
    }
    if (sent != 0) {
        failed(pamh, "stopped before it answered");
        *result = refusal(call->operation);
        return ENDED;
    }
    call->deadline = now_ms() + options->timeout_ms;
    return GO_ON;
}

/* The daemon's frames, read until its result: keepalives skipped, messages shown, questions answered. */
static int converse(struct call *call) {
    for (;;) {
        struct message message = {0};
        long long left = call->deadline - now_ms();
        int status = left > 0 ? read_message(call->fd, call->buffer, (int)left, &message) : READ_TIMED_OUT;
        switch (status) {
        case READ_TIMED_OUT:
            failed(call->pamh, "did not answer in time");
            return refusal(call->operation);
        case READ_GONE:
            failed(call->pamh, "stopped before it answered");
            return refusal(call->operation);
        case READ_MALFORMED:
            pam_syslog(call->pamh, LOG_ERR, "gatekeeperd sent a malformed message");
            return PAM_SYSTEM_ERR;
        }
        if (message.type == GK_KIND_KEEPALIVE) continue;
        if (message.type == GK_KIND_RESULT) return take_result(call, &message);
        int result = PAM_SYSTEM_ERR;
        if (relay(call, &message, &result) == ENDED) return result;
    }
}

/* One PAM call through the daemon: the request read from PAM, sent, and the daemon's conversation relayed
   until its result. */
static int run(pam_handle_t *pamh, int operation, int flags, int argc, const char **argv) {
    struct options options;
    parse_options(pamh, argc, argv, &options);
    struct request request;
    int status = read_request(pamh, operation, flags, &options, &request);
    if (status != PAM_SUCCESS) return status;

    /* The whole login is bounded: the daemon has timeout= from here (the connection included) and after each
       answer, and the daemon's answer time after a message the person reads; a keepalive renews nothing. */
    struct call call = {.pamh = pamh, .options = &options, .operation = operation};
    call.deadline = now_ms() + options.timeout_ms;
    call.fd = connect_daemon(pamh, &options);
    if (call.fd == DAEMON_ABSENT) return PAM_AUTHINFO_UNAVAIL;
    if (call.fd < 0) return refusal(operation);

    int result;
    call.frame = malloc(sizeof *call.frame);
    call.buffer = malloc(GK_WIRE_MAX_FRAME);
    if (call.frame == NULL || call.buffer == NULL) {
        result = PAM_BUF_ERR;
    } else if (write_request(&call, &request) != 0) {
        pam_syslog(pamh, LOG_ERR, "the request is too long to send to gatekeeperd");
        result = refusal(operation);
    } else {
        /* Sent or not, what the daemon has to say is read: a daemon that refuses a connection at once (too many
           at once) writes why and closes before the request is read. */
        send_frame(call.fd, call.frame, options.timeout_ms);
        frame_wipe(call.frame);
        result = converse(&call);
    }

    close(call.fd);
    if (call.first_answer != NULL) {
        explicit_bzero(call.first_answer, strlen(call.first_answer));
        free(call.first_answer);
    }
    if (call.frame != NULL) {
        frame_wipe(call.frame);
        free(call.frame);
    }
    if (call.buffer != NULL) {
        explicit_bzero(call.buffer, GK_WIRE_MAX_FRAME);
        free(call.buffer);
    }
    return result;
}

EXPORTED int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    return run(pamh, GK_OP_AUTHENTICATE, flags, argc, argv);
}

EXPORTED int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}

EXPORTED int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    return run(pamh, GK_OP_ACCOUNT, flags, argc, argv);
}

EXPORTED int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    if (flags & PAM_PRELIM_CHECK) return run(pamh, GK_OP_CHAUTHTOK_PRELIM, flags, argc, argv);
    if (flags & PAM_UPDATE_AUTHTOK) return run(pamh, GK_OP_CHAUTHTOK_UPDATE, flags, argc, argv);
    return PAM_SERVICE_ERR;
}

EXPORTED int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}

EXPORTED int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}
