/* A hook's own cgroup (v2), where ward can make one under its own: the
 * hook starts inside it (clone3 CLONE_INTO_CGROUP, so nothing it forks is
 * ever outside), and cgroup.kill ends everything in it, a child that left
 * the process group (setsid, a daemon's double fork) included. Where none
 * can be made (no cgroup v2, no cgroup.kill, a cgroup ward may not write),
 * hooks run as before, in a process group of their own only, and
 * hook_cgroup_none says why. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct hook_cgroup {
	char path[PATH_MAX];
	int fd;		/* the directory, for clone3; -1: none */
	int seq;	/* its number among ward's (ward-hook-PID-SEQ) */
};

/* A new one under ward's cgroup: 0, or -errno (then cg->fd is -1). */
int hook_cgroup_new(struct hook_cgroup *cg);
/* sh -c cmd in it, the leader of a process group of its own, fds[0..2] as
 * its descriptors 0-2 and no other, every signal at its default and none
 * blocked: 0, or -errno (nothing started). */
int hook_cgroup_spawn(const struct hook_cgroup *cg, char *const argv[], const int fds[3], pid_t *ret_pid);
/* Kill everything in it and remove it (waits up to 1 s for it to empty). */
void hook_cgroup_end(struct hook_cgroup *cg);
/* ward's cgroup directory, into out (the guard's, which is a fork of
 * ward's, is the same): 0, or -errno. */
int hook_cgroup_base(char *out, size_t n);
/* Why hooks run without one here ("" when they do not). */
const char *hook_cgroup_none(void);
