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

/* The leaf in a delegated v2 group that ward's own processes move to, so
 * that the group may enable controllers for its boxes (cgroup_leave). */
#define CGROUP_LEAF "ward-keepers"

/* What this machine can enforce for the current user. */
struct cgroup_caps {
	char v2_base[PATH_MAX];
	char mem1_base[PATH_MAX];
	char pids1_base[PATH_MAX];
	bool v2_writable, v2_kill, v2_freeze;
	bool v2_is_root;	/* v2_base is the hierarchy's root (exempt from the no-internal-process rule) */
	unsigned v2_others;	/* processes in v2_base not ward's own (this one and its parent) */
	char v2_controllers[256];
	char v2_subtree[256];	/* v2_base's cgroup.subtree_control */
	bool mem1_writable, pids1_writable;
};
void cgroup_probe(struct cgroup_caps *ret);
/* Why no group of this user's holds a box to controller's ceiling
 * ("memory", "pids", "cpu", "kill"), in one line: the group each
 * hierarchy puts this process in and what it lacks. Empty when one does. */
void cgroup_gap(const struct cgroup_caps *c, const char *controller, char *out, size_t n);
/* Whether a group of this user's can hold a box to controller's ceiling. */
bool cgroup_can(const struct cgroup_caps *c, const char *controller);
/* The same, through cgroup v2 (which cgroup_create tries first). */
bool cgroup_can_v2(const struct cgroup_caps *c, const char *controller);
/* What the user can do when nothing is delegated (one line). */
#define CGROUP_DELEGATE_HINT                                                                                     \
	"delegate a cgroup v2 subtree: run ward under systemd with Delegate=yes, e.g. `systemd-run --user "    \
	"--scope -p Delegate=yes ward ...`"

/* Where the caller is alone in a delegated v2 group (not the root) whose
 * controllers a box would want and its subtree does not have yet (as in
 * `systemd-run --user --scope -p Delegate=yes ward ...`): move the caller
 * into the group's CGROUP_LEAF, out of the way of the no-internal-process
 * rule. Best effort; 1 when it moved. */
int cgroup_leave(void);
/* Create the box's groups under the caller's own. Never fails for lack of
 * cgroups: what could not be made is left empty in ret. */
int cgroup_create(const char *name, const struct limits *lim, struct cgroup_set *ret, struct err *e);
/* Move pid into the v1 groups (v2 placement is clone3's CLONE_INTO_CGROUP). */
int cgroup_attach_v1(const struct cgroup_set *cg, pid_t pid);
/* Move pid into every group of cg, v2 too (a helper started outside it). */
int cgroup_attach(const struct cgroup_set *cg, pid_t pid);
/* Which of cg's ceilings hold pid: each one made AND whose group pid is in
 * (read from /proc/PID/cgroup), so that nothing is reported that the
 * box's processes escape (a refused clone3 placement or v1 attach). */
struct cgroup_held {
	bool memory, pids, cpu, kill;
};
void cgroup_held_by(const struct cgroup_set *cg, pid_t pid, struct cgroup_held *ret);
void cgroup_kill(const struct cgroup_set *cg);
/* Remove the groups; they must be empty, so call after the box is dead. */
void cgroup_remove(const struct cgroup_set *cg);
uint64_t cgroup_memory_current(const struct cgroup_set *cg);
uint64_t cgroup_pids_current(const struct cgroup_set *cg);
