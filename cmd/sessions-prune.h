/* ward sessions prune: the sessions a machine no longer needs, removed
 * whole (the journal, the kept workspace changes and their checkpoints). */
#pragma once

/* argv[0] is "prune". An exit code. */
int sessions_prune(int argc, char **argv);
