/* What the backends share to start a box and end it (box-start.c): their
 * process in fresh namespaces (clone3, the uid and gid maps, the
 * go-aheads its child waits for), the copy-on-write workspace, where the
 * box's calls start, and the kill and reap. The ns backend (ns.c) and the
 * vm backend's VMM (vm.c) both use these; neither reaches into the other,
 * nor into backend.c. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/backend.h"
#include "sandbox/cgroup.h"

/* clone3 with CLONE_PIDFD (and into *cgfd's cgroup; a refused placement
 * falls back without it and closes *cgfd). */
pid_t box_clone3(uint64_t flags, int *cgfd, int *pidfd);
/* Map inside (uid and gid) in pid's new user namespace to the caller's
 * uid and gid; setgroups denied. */
int box_userns_map(pid_t pid, unsigned inside, uid_t uid, gid_t gid);
/* Map count uids and gids from 0 in pid's new user namespace to the
 * host's from base (root only); setgroups allowed. */
int box_userns_map_range(pid_t pid, unsigned base, unsigned count);
/* Where a box's tool calls start: /workspace, or the image's WorkingDir
 * where the box has no workspace of the task's (an absolute path; the
 * model's relative paths and ward diff then agree wherever there is a
 * workspace to diff). */
const char *box_tool_cwd(const struct box_spec *s);
/* The two go-aheads a backend's child waits for: "m" (the maps are
 * written), then the v1 cgroup attach, then BOX_GO with a bit for each
 * ceiling a cgroup holds the child to (as /proc/PID/cgroup shows it, in
 * ret_held too): where a bit is missing, the child's rlimits stand in. */
#define BOX_GO 0x40
#define BOX_GO_MEMORY 0x01
#define BOX_GO_PIDS 0x02
int box_go_ahead(int sync_fd, const struct cgroup_set *cg, pid_t pid, struct cgroup_held *ret_held);
/* The copy-on-write workspace at target: lower, with the box's changes
 * going to upper (work: overlayfs's scratch dir). 0, or -1 with errno. */
int box_mount_overlay(const char *lower, const char *upper, const char *work, const char *target);
/* SIGKILL a backend's process and reap it (bounded: 2 s); close its fds. */
void box_kill_reap(pid_t pid, int pidfd, int chan_fd);
