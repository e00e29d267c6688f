#ifndef GATEKEEPER_PROCESS_SPAWN_H
#define GATEKEEPER_PROCESS_SPAWN_H

#include <spawn.h>

/* Adds "close every descriptor from `lowest` up" to `actions` (glibc's posix_spawn_file_actions_addclosefrom_np,
   which Swift's Glibc module does not show). Returns 0, or an errno value. */
int gk_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif
