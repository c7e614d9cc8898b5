/* A box's cgroups: v2 where the system delegates a writable subtree (with
 * whatever controllers it enables there), v1 memory and pids where those are
 * mounted and writable. Best effort, and every gap is reported. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

struct limits {
	uint64_t memory;	/* bytes, 0 = none */
	uint64_t pids;		/* 0 = none */
	uint32_t cpus_milli;	/* 1000 = one CPU, 0 = none */
	uint64_t disk;		/* bytes for the workspace layer (and /tmp), 0 = none */
};

struct cgroup_set {
	char v2[PATH_MAX];	/* empty when unavailable */
	char mem1[PATH_MAX];
	char pids1[PATH_MAX];
	bool v2_memory, v2_pids, v2_cpu, v2_kill;
};

/* What this machine can enforce for the current user. */
struct cgroup_caps {
	char v2_base[PATH_MAX];
	char mem1_base[PATH_MAX];
	char pids1_base[PATH_MAX];
	bool v2_writable, v2_kill, v2_freeze;
	char v2_controllers[256];
	bool mem1_writable, pids1_writable;
};
void cgroup_probe(struct cgroup_caps *ret);

/* Create the box's groups under the caller's own. Never fails for lack of
 * cgroups: what could not be made is left empty in ret. */
int cgroup_create(const char *name, const struct limits *lim, struct cgroup_set *ret, struct err *e);
/* Move pid into the v1 groups (v2 placement is clone3's CLONE_INTO_CGROUP). */
int cgroup_attach_v1(const struct cgroup_set *cg, pid_t pid);
void cgroup_kill(const struct cgroup_set *cg);
/* Freeze (or thaw) the v2 group, waiting up to ms for it to be frozen:
 * true once it is. False where there is no v2 group or no cgroup.freeze. */
bool cgroup_freeze(const struct cgroup_set *cg, bool on, int ms);
/* Remove the groups; they must be empty, so call after the box is dead. */
void cgroup_remove(const struct cgroup_set *cg);
/* Enforcement summary, e.g. "memory: v1 memory.limit_in_bytes". */
bool cgroup_memory_enforced(const struct cgroup_set *cg);
bool cgroup_pids_enforced(const struct cgroup_set *cg);
uint64_t cgroup_memory_current(const struct cgroup_set *cg);
uint64_t cgroup_pids_current(const struct cgroup_set *cg);
