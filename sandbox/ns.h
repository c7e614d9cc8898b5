/* The ns backend: a box is a set of fresh Linux namespaces whose PID 1 is
 * ward-guest.
 *
 * Its root is copy-on-write: an overlay over an image's tree, or over the
 * host view (a skeleton ward builds, sandbox/hostview.h, with the host's
 * /usr, /var/lib/dpkg and unmerged top directories each an overlay of its
 * own), whose changes go to the box's root layer. Who the box's root is:
 * where ward runs as root and the kernel can shift a mount's owners
 * (idmapped mounts under overlayfs), the box maps NS_UIDS uids from
 * NS_UID_BASE on, none of them a user of the host, and what the host owns
 * (the image, /usr, the workspace) is shifted into that range for the box
 * alone; elsewhere the box has one uid, ward's own, as its root
 * (SECURITY.md, "Who a box's root is"). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/cgroup.h"

/* Pinned in tests/unit/test-defaults.c: the start of systemd's unused
 * block above the container ranges (UIDS-GIDS.md), 65536 of them. */
#define NS_UID_BASE 1879048192u
#define NS_UIDS 65536u

struct box_backend;
struct layers;
/* Its operations (backend.h): the box_spec the keeper hands it, made an
 * ns_spec for ns_start. */
extern const struct box_backend ns_backend;

struct ns_spec {
	const char *root_dir;	/* empty dir where the box is assembled */
	const char *guest_path;	/* the ward-guest binary */
	const char *workspace;	/* host directory, or NULL for an empty one */
	const char *upper_dir, *work_dir; /* overlay layers (copy-on-write mode) */
	const char *ws_view;	/* or the copy-on-write view, mounted already: bound */
	const char *root_layer;	/* the root's changes: a directory owned by the box's root */
	/* Or, where root_layer is on fuse2fs, the layers that serve it: each
	 * of the root's overlays is fuse-overlayfs, their child (layers_root_view),
	 * bound as it is. */
	struct layers *root_fuse;
	const char *image_root;	/* the root's lower: an image's tree; NULL: the host view */
	const char *hostview;	/* the host view's skeleton (image_root NULL) */
	const char *const *env;	/* the image's Env, "K=V" each */
	const char *ca_bundle;	/* /etc/BOX_CA_FILE's content (with secrets), or NULL */
	size_t nenv;
	const char *user;	/* the image's User, or NULL: the box's root */
	const char *cwd;	/* where calls start (box_tool_cwd) */
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
	struct cgroup_held held;	/* the ceilings a cgroup holds the box to */
	bool uid_range;		/* the box has NS_UIDS uids (else one) */
	char uid_why[160];	/* why not, when it has one */
};

int ns_start(const struct ns_spec *s, struct ns_box *ret, struct err *e);
/* SIGKILL the box's PID 1 (the kernel then kills every process in the box)
 * and reap it. Bounded: returns after the guest is reaped or 2 s. */
void ns_kill(struct ns_box *b);
/* Who owns a box's root layer on the host: the box's root, NS_UID_BASE
 * where ward is root and the kernel shifts owners for it, else ward's own
 * uid; why (for ward doctor and box info). */
bool ns_uid_range(uid_t *ret_uid, char *why, size_t n);
