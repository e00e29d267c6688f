#ifndef GATEKEEPER_PROCESS_SPAWN_H
#define GATEKEEPER_PROCESS_SPAWN_H

#include <spawn.h>

/* Adds "close every descriptor from `lowest` up" to `actions` (glibc's posix_spawn_file_actions_addclosefrom_np,
   which Swift's Glibc module does not show). Returns 0, or an errno value. */
int gk_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest);

/* Makes the calling process the reaper of its descendants (`on` = 1) or not (0): prctl's
   PR_SET_CHILD_SUBREAPER, which Swift cannot call (prctl is variadic). Returns 0, or -1 with errno. */
int gk_set_child_subreaper(int on);

#endif
