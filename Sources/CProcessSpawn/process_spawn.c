#define _GNU_SOURCE
#include <spawn.h>
#include "process_spawn.h"

int gk_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

#include <sys/prctl.h>

int gk_set_child_subreaper(int on) {
    return prctl(PR_SET_CHILD_SUBREAPER, (unsigned long)on, 0UL, 0UL, 0UL);
}

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

int gk_signal_fd(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int gk_signal_fd_wait(int signal_fd, int stop_fd) {
    for (;;) {
        struct signalfd_siginfo info;
        ssize_t got = read(signal_fd, &info, sizeof info);
        if (got == (ssize_t)sizeof info) return (int)info.ssi_signo;
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno != EAGAIN) return -1;
        if (stop_fd < 0) return 0;
        struct pollfd fds[2] = {{.fd = signal_fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return -1;
        if (fds[1].revents && !(fds[0].revents & POLLIN)) return 0;
    }
}

int gk_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
