/* The hooks' guard: a small process of ward's that kills the process
 * group of every program hook_exec is running when ward dies, SIGKILL
 * included, and then exits. One for ward's whole life, forked at the first
 * hook (so a hook pays two writes to a pipe, not a fork); it dies with
 * ward, and has nothing else to do. */
#pragma once
#include <sys/types.h>

/* The guard kills group pgid, and the hook's cgroup number cgroup_seq (0:
 * none; task/hook-cgroup.h), if ward dies before hook_guard_forget(pgid).
 * Started here the first time (and again if it is gone). 0, or -errno
 * when there is no guard: the caller kills the group and gives up. */
int hook_guard_watch(pid_t pgid, int cgroup_seq);
/* The group is killed and its leader not yet reaped (so its id is not
 * someone else's): the guard lets it go. */
void hook_guard_forget(pid_t pgid);
