/* The environments of a box's helper processes, built, never inherited:
 * ward's own environment holds the API keys (and whatever else its user
 * exported), and a process's environment is readable in /proc for as long
 * as it runs. The one table of what passes is in spawn-env.c. */
#pragma once
#include "sandbox/box.h"

/* The keeper's (box_create): what of ward's environment the keeper of a
 * box with options o needs. NULL-terminated, one allocation (free it), or
 * NULL without memory. */
char **spawn_env_keeper(const struct box_opts *o);
/* The egress proxy's (egress.c), from the keeper's own. */
char **spawn_env_proxy(void);
/* The VMM's (vm.c): nothing of ward's or the keeper's. */
extern char *const spawn_env_vmm[];
