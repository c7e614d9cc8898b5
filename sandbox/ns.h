/* The ns backend: a box is a set of fresh Linux namespaces whose PID 1 is
 * ward-guest. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/cgroup.h"

struct ns_spec {
	const char *root_dir;	/* empty dir where the box's root is assembled */
	const char *guest_path;	/* the ward-guest binary */
	const char *workspace;	/* host directory, or NULL for an empty one */
	const char *upper_dir, *work_dir; /* overlay layers (copy-on-write mode) */
	bool workspace_rw;	/* live read-write bind instead of the overlay */
	bool git_rw;		/* the workspace's git directories writable (else read-only: base/gitdir.h) */
	bool net_host;		/* share the host's network */
	bool proxy;		/* a listener for the egress proxy at 127.0.0.1:NET_PROXY_PORT */
	struct limits lim;
	const struct cgroup_set *cg;
};

struct ns_box {
	pid_t pid;		/* the guest, PID 1 of the box */
	int pidfd;
	int chan_fd;		/* the host end of the box protocol stream */
	int log_fd;		/* the guest's stderr, to read (non-blocking) */
	int net_fd;		/* the proxy's listener, in the box's network namespace, or -1 */
	bool rlimit_pids, rlimit_memory; /* rlimits stood in for cgroups */
};

int ns_start(const struct ns_spec *s, struct ns_box *ret, struct err *e);
/* SIGKILL the box's PID 1 (the kernel then kills every process in the box)
 * and reap it. Bounded: returns after the guest is reaped or 2 s. */
void ns_kill(struct ns_box *b);
