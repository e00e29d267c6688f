#define _GNU_SOURCE
#include <spawn.h>
#include "process_spawn.h"

int gk_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

#include <sys/prctl.h>
#include <sys/xattr.h>

int gk_set_child_subreaper(int on) {
    return prctl(PR_SET_CHILD_SUBREAPER, (unsigned long)on, 0UL, 0UL, 0UL);
}

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

int gk_signal_fd(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The write end of the pipe the forwarding handler writes to; -1 when none is installed. */
static volatile int gk_forward_fd = -1;

static void gk_forward_signal(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    int fd = gk_forward_fd;
    if (fd >= 0) (void)!write(fd, &byte, 1);
    errno = saved;
}

int gk_signal_forward(int write_fd, const int *signals, int count) {
    gk_forward_fd = write_fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = gk_forward_signal;
    action.sa_flags = SA_RESTART;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

void gk_signal_forward_end(void) {
    gk_forward_fd = -1;
}

int gk_signal_fd_wait(int signal_fd, int forward_fd, int stop_fd) {
    for (;;) {
        struct signalfd_siginfo info;
        ssize_t got = read(signal_fd, &info, sizeof info);
        if (got == (ssize_t)sizeof info) return (int)info.ssi_signo;
        if (got < 0 && errno != EINTR && errno != EAGAIN) return -1;
        unsigned char byte;
        got = read(forward_fd, &byte, 1);
        if (got == 1) return byte;
        if (got < 0 && errno != EINTR && errno != EAGAIN) return -1;
        if (stop_fd < 0) return 0;
        struct pollfd fds[3] = {
            {.fd = signal_fd, .events = POLLIN}, {.fd = forward_fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
        if (poll(fds, 3, -1) < 0 && errno != EINTR) return -1;
        if (fds[2].revents && !(fds[0].revents & POLLIN) && !(fds[1].revents & POLLIN)) return 0;
    }
}

int gk_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

int gk_set_dumpable(int on) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)(on ? 1 : 0), 0UL, 0UL, 0UL);
}

#include <sys/random.h>

int gk_random_bytes(void *buffer, size_t count) {
    unsigned char *bytes = buffer;
    while (count > 0) {
        ssize_t got = getrandom(bytes, count, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        bytes += got;
        count -= (size_t)got;
    }
    return 0;
}

#include <sys/socket.h>

int gk_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid) {
    struct ucred credentials;
    socklen_t size = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0 || size != sizeof credentials) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int gk_accept_cloexec(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int gk_has_access_acl(int fd) {
    return fgetxattr(fd, "system.posix_acl_access", NULL, 0) >= 0;
}
