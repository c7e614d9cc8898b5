/* Between the ns backend's halves: ns.c (the namespaces, the maps, the
 * guest's exec) and nsroot.c (the box's file system). */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

#include "base/account.h"
#include "sandbox/ns.h"

/* A host directory the box's file system is made over: the root's lower
 * (an image's tree or the host view's skeleton), each of the host view's
 * own overlays, and the workspace. */
struct ns_lower {
	const char *host;
	const char *box;	/* where in the box: "" (the root), "usr", ..., "workspace" */
	const char *layer;	/* its overlay's directory in the root layer; NULL: the workspace */
	int fd;			/* an idmapped clone of host (the uid range), or -1: bound by path */
};
#define NS_LOWERS_MAX 10

struct ns_child {
	const struct ns_spec *s;
	int sync_fd;		/* child end: setup errors go here */
	int chan_fd;		/* guest end of the channel */
	int guest_fd;		/* O_PATH of the guest binary, exec'd by fd */
	int log_fd;		/* write end of the guest's stderr pipe */
	int net_fd;		/* child end: the proxy's listener goes here */
	bool range;		/* the box maps NS_UIDS uids (else one) */
	struct account user;	/* the image's User, in the box (root without one) */
	struct ns_lower lower[NS_LOWERS_MAX];
	size_t nlower;
	/* Where the root's overlays are mounted already, each at
	 * root_views/LAYER (fuse-overlayfs: ns_spec's root_fuse), or NULL. */
	const char *root_views;
	/* Set by nsroot_build: the box's root (once it is "/"), and the
	 * directory the guest is exec'd in (its loader and libraries, the
	 * host's, and nothing of the box's). */
	int root_fd, guestroot_fd;
};

__attribute__((noreturn, format(printf, 2, 3))) void ns_fail(struct ns_child *c, const char *fmt, ...);
/* The box's file system, from the stage at s->root_dir to the pivot into
 * the box's root and every mount in place: run as the box's first process,
 * before it becomes the box's root (setresuid); returns as the box's root. */
void nsroot_build(struct ns_child *c);
/* The lowers of s's box, into c (fd -1 each). */
void nsroot_lowers(const struct ns_spec *s, struct ns_child *c);
