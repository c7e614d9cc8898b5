/* The one interface every backend is behind (its operations, struct
 * box_backend), and what the keeper hands a backend and gets back: the
 * box's host side that ward's front ends never see. backend.c chooses a
 * backend; each is in files of its own (ns.c and nsroot.c; vm.c and
 * vm-*.c), and what they share to start a box is box-start.h. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/box.h"
#include "sandbox/cgroup.h"

/* A vm box's workspace image is beside its disk (box_spec's disk_path):
 * DISK plus this suffix, removed with it. */
#define BOX_DISK_WS_SUFFIX ".ws"

struct box_inst {
	pid_t pid;
	int pidfd;
	int chan_fd;
	int log_fd;		/* the guest's stderr, or -1 (the keeper copies it to its log) */
	int net_fd;		/* the box's egress listener (ns: the keeper hands it to the
				 * proxy) or the VM's mux port (vm: the keeper serves it,
				 * keeper-mux.c), or -1 */
	bool net_mux;		/* net_fd is a mux port (proto/netmux.h), not a listener */
	bool rlimit_pids, rlimit_memory;
	struct cgroup_held held;	/* the ceilings a cgroup holds the box's first process to */
	bool hello_done;	/* the backend already had the guest's HELLO */
	bool restored;		/* from a snapshot */
	bool pooled;		/* waiting for START (a pool box): the backend's go starts it */
	/* The box's /tmp is on its own disk, which the backend keeps between
	 * starts (a vm's): a hibernate has nothing of it to save. */
	bool tmp_on_disk;
	/* A hibernate can keep the box's processes (the backend's save and
	 * resume); else ram_why says why not, for the person and the model. */
	bool keeps_ram;
	const char *ram_why;
	/* The workspace's changes are on the box's own disk, and the host's
	 * upper is a copy the guest sends (sandbox/keeper-ws.c): after each
	 * call, before a hibernate and before the box ends. */
	bool ws_sync;
	char uid_why[160];	/* who the box's root is (ns) */
};
struct image_info;
struct layers;
struct box_spec {
	const struct box_opts *opts;
	const char *name;	/* the box's (a fork's VM takes it as its hostname) */
	const char *root_dir, *upper_dir, *work_dir;
	/* The workspace's copy-on-write view, mounted already (fuse-overlayfs
	 * over a fuse2fs upper, without root: workspace/layers.h), to bind as
	 * it is; NULL: the backend makes its own over upper_dir. */
	const char *ws_view;
	/* The root's changes (layers.h's root/, made by the keeper and owned
	 * by the backend's root_owner uid), or NULL: the backend keeps none. */
	const char *root_layer;
	/* Where root_layer is on fuse2fs (without root: workspace/layers.h),
	 * the layers that serve it: the backend has each of the root's
	 * overlays made by layers_root_view and binds them; else NULL. */
	struct layers *root_fuse;
	const struct cgroup_set *cg;
	/* The image's unpacked tree (read-only, shared by every box of it),
	 * or NULL: the host's view. image: the rest of what image_find found
	 * (its digest, and the OCI config's Env, WorkingDir and User), held
	 * by the keeper for the box's life. */
	const char *image_root;
	const struct image_info *image;
	/* The box's own disk (state_disk_path): the vm backend makes it at
	 * the first start and keeps it between starts; the keeper removes it
	 * with the box. */
	const char *disk_path;
	/* "NAME=VALUE" each, for every command's environment after the
	 * image's: a secret's placeholder (sandbox/egress.h). */
	const char *const *env;
	size_t nenv;
	/* With secrets: the box's trust bundle (the host's CAs and the box's
	 * own), for /etc/BOX_CA_FILE in the box; or NULL. */
	const char *ca_bundle;
};
#define BOX_CA_FILE "ward-ca.pem"
struct box_backend {
	const char *name;
	/* The host uid that owns the box's root layer (the box's root), and
	 * why (NULL: the backend keeps no root layer of the keeper's). */
	bool (*root_owner)(uid_t *ret_uid, char *why, size_t n);
	int (*start)(const struct box_spec *s, struct box_inst *ret, struct err *e);
	void (*kill)(struct box_inst *b);
	/* Start a guest that start left waiting for START (a pool box), and
	 * take its hello (NULL: the backend has no pool). */
	int (*go)(struct box_inst *b, const struct box_opts *o, struct err *e);
	/* A hibernate that keeps the box's processes (b->keeps_ram): close
	 * the box's channels (the caller no longer watches them) and write its
	 * whole machine, memory and devices, to the file state; the VMM is
	 * left stopped for the caller to kill. Failed, the box runs on without
	 * its channels (the caller ends it). NULL: no backend can. */
	int (*save)(const struct box_spec *s, struct box_inst *b, const char *state, struct err *e);
	/* Start the box again from what save wrote; restored is what
	 * b->restored was at the save (how its memory was laid out). The
	 * guest's hello is the caller's to take. */
	int (*resume)(const struct box_spec *s, const char *state, bool restored, struct box_inst *ret,
		      struct err *e);
	/* A fork of a running box (b->keeps_ram; sandbox/vm-fork.c): its
	 * channels closed (the caller no longer watches them), its whole
	 * machine written to the file state and its own disk copied to disk
	 * while it stands still; then it goes on, its channels connected
	 * again and its hello taken (b->chan_fd >= 0; else it is lost and the
	 * caller ends it). A fork is its resume of state. NULL: no backend
	 * can. */
	int (*fork)(const struct box_spec *s, struct box_inst *b, const char *state, const char *disk, struct err *e);
	/* The host cgroup's limits for a box's limits (NULL: the same). */
	void (*host_limits)(const struct limits *box, struct limits *host);
};
/* The backend a box runs on: "ns" (ns.c), "vm" (vm.c), or "auto" (vm
 * where KVM works, else ns); NULL if unknown. */
const struct box_backend *backend_find(const char *name);
