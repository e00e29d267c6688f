#ifndef GATEKEEPER_PROCESS_SPAWN_H
#define GATEKEEPER_PROCESS_SPAWN_H

#include <spawn.h>
#include <stddef.h>

/* Adds "close every descriptor from `lowest` up" to `actions` (glibc's posix_spawn_file_actions_addclosefrom_np,
   which Swift's Glibc module does not show). Returns 0, or an errno value. */
int gk_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest);

/* Makes the calling process the reaper of its descendants (`on` = 1) or not (0): prctl's
   PR_SET_CHILD_SUBREAPER, which Swift cannot call (prctl is variadic). Returns 0, or -1 with errno. */
int gk_set_child_subreaper(int on);

/* A signalfd for `signals` (close-on-exec, non-blocking): they must be blocked in every thread. Returns the
   descriptor, or -1 with errno. */
int gk_signal_fd(const int *signals, int count);

/* Has `signals` handled, in any thread that does not block them, by writing their number to `write_fd`
   (a non-blocking pipe): a thread started before they were blocked hands them on too. Returns 0, or -1
   with errno. */
int gk_signal_forward(int write_fd, const int *signals, int count);

/* Stops handing signals on (call once their dispositions no longer name the handler). */
void gk_signal_forward_end(void);

/* The number of the next signal read from `signal_fd` or handed on through `forward_fd` (the read end of
   gk_signal_forward's pipe, non-blocking), waiting for one until `stop_fd` becomes readable; 0 once it has
   (or at once, with `stop_fd` -1, when none is pending); -1 on error. */
int gk_signal_fd_wait(int signal_fd, int forward_fd, int stop_fd);

/* Names the calling thread (at most 15 bytes are kept), as ps and /proc/self/task/TID/comm show it: prctl's
   PR_SET_NAME. Returns 0, or -1 with errno. */
int gk_name_thread(const char *name);

/* Whether the calling process may be dumped (core files) or attached to by processes of its own uid that
   lack CAP_SYS_PTRACE: prctl's PR_SET_DUMPABLE. Returns 0, or -1 with errno. */
int gk_set_dumpable(int on);

/* Fills `count` bytes at `buffer` from the kernel's generator (getrandom, blocking until it is seeded),
   straight into the buffer. Returns 0, or -1 with errno. */
int gk_random_bytes(void *buffer, size_t count);


/* Who is at the other end of a connected Unix socket, as the kernel saw them connect (SO_PEERCRED); 0 or -1. */
int gk_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid);

/* accept4 with SOCK_CLOEXEC: a connection no child inherits. */
int gk_accept_cloexec(int fd);

/* Whether the file open on `fd` has an access ACL beyond its mode bits (the system.posix_acl_access
   attribute, which the kernel keeps only for ACLs its mode cannot express): 1, 0, or 0 where the file system
   has no ACLs. */
int gk_has_access_acl(int fd);
#endif
