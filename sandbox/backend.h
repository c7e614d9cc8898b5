/* The backends behind the keeper, and what they share: the box's host side
 * that ward's front ends never see. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/box.h"
#include "sandbox/cgroup.h"

struct box_inst {
	pid_t pid;
	int pidfd;
	int chan_fd;
	int log_fd;		/* the guest's stderr, or -1 (the keeper copies it to its log) */
	int net_fd;		/* egress: the box's listener (ns) or the VM's mux port (vm), or -1;
				 * the keeper hands it to the proxy */
	bool net_mux;		/* net_fd is a mux port (proto/netmux.h), not a listener */
	bool rlimit_pids, rlimit_memory;
	struct cgroup_held held;	/* the ceilings a cgroup holds the box's first process to */
	bool hello_done;	/* the backend already had the guest's HELLO */
	bool restored;		/* from a snapshot */
	bool pooled;		/* waiting for START (a pool box): the backend's go starts it */
	/* The box's /tmp is on its own disk, which the backend keeps between
	 * starts (a vm's): a hibernate has nothing of it to save. */
	bool tmp_on_disk;
	char uid_why[160];	/* who the box's root is (ns) */
};
struct image_info;
struct box_spec {
	const struct box_opts *opts;
	const char *root_dir, *upper_dir, *work_dir;
	/* The root's changes (layers.h's root/, made by the keeper and owned
	 * by the backend's root_owner uid), or NULL: the backend keeps none. */
	const char *root_layer;
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
};
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
	/* The host cgroup's limits for a box's limits (NULL: the same). */
	void (*host_limits)(const struct limits *box, struct limits *host);
};
extern const struct box_backend box_backend_ns, box_backend_vm;
/* "ns", "vm", or "auto" (vm where KVM works, else ns); NULL if unknown. */
const struct box_backend *box_backend_find(const char *name);
/* What the backends share to start their process in fresh namespaces.
 * clone3 with CLONE_PIDFD (and into *cgfd's cgroup; a refused placement
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
/* vm.c: whether the vm backend can run here, and KVM. */
int vm_available(struct err *e);
bool vm_kvm_usable(void);

/* box-conn.c: a pool box taken for a create (CLAIM, with what the create
 * asks: json); bounded by BOX_CREATE_TIMEOUT_MS. */
int box_claim(struct box_conn *c, const char *json, struct err *e);
/* cold.c: delete from its store what a cold saved state in hibdir names
 * (its cold.json says where); nothing when it is not cold. Best effort. */
void box_cold_drop(const char *hibdir);
/* box-conn.c: destroy a pool box only if it still waits in the pool (a
 * create may have taken it a moment ago). */
int box_destroy_if_pooled(const char *name);
/* pool.c: the kind of box o asks for, what a pool box must match: its
 * backend, limits, workspace, network, guest and image, hashed, in hex. */
void box_pool_key(const struct box_opts *o, char *out, size_t n);
/* pool.c: a box of o's kind from a pool, into ret_name: 0, or -ENOENT
 * when no pool holds one. */
int box_pool_take(const struct box_opts *o, char *ret_name, size_t n, struct err *e);
/* The ward-keeper program (keeper-main.c), as box_create starts it:
 * `ward-keeper NAME`, the box's options as JSON ({"boxdir","opts"}, the
 * latter box_opts_to_json's) on KEEPER_OPTS_FD, and the pipe on which it
 * answers "ok\n" or one line saying why not on KEEPER_READY_FD. */
#define KEEPER_ARGV0 "ward-keeper"
#define KEEPER_OPTS_FD 3
#define KEEPER_READY_FD 4
/* keeper.c: the keeper, once its options are read (never returns). */
void keeper_main(const struct box_opts *o, const char *name, const char *boxdir, int ready_fd)
	__attribute__((noreturn));
