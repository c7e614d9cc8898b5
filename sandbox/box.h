/* The box: create, call, cancel, destroy. A box is owned by a keeper
 * process, detached from ward, which enforces its lifetime; ward talks to
 * the keeper over a unix socket with the box protocol. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "sandbox/cgroup.h"
#include "sandbox/state.h"

/* Defaults, pinned in tests/unit/test-defaults.c. */
#define BOX_DEFAULT_MEMORY (1ULL << 30)
#define BOX_DEFAULT_PIDS 512
#define BOX_DEFAULT_DISK (10ULL << 30)
#define BOX_DEFAULT_TTL_MS (8LL * 3600 * 1000)
#define BOX_DEFAULT_IDLE_MS (30LL * 60 * 1000)
/* The host's clock runs at limit + guest grace + this before it destroys. */
#define BOX_HOST_MARGIN_MS 1000
#define BOX_CREATE_TIMEOUT_MS 10000

struct box_opts {
	const char *name;	/* NULL: generated */
	const char *backend;	/* "ns" */
	int64_t ttl_ms, idle_ms;	/* 0: none */
	bool persistent;	/* survives the ward that made it */
	bool keep_layers;	/* keep the workspace's changes after the box (ward run) */
	bool no_snapshot;	/* vm: cold boot, never from a snapshot */
	struct limits lim;
	bool net;
	const char *workspace;	/* host directory; NULL: an empty one */
	bool rw;		/* live read-write instead of copy-on-write */
	int64_t grace_ms;
	const char *guest_path;
	pid_t owner;		/* a non-persistent box dies with this process */
};

void box_opts_default(struct box_opts *o);

/* The backends behind the keeper. */
struct box_inst {
	pid_t pid;
	int pidfd;
	int chan_fd;
	int log_fd;		/* the guest's stderr, or -1 (the keeper copies it to its log) */
	bool rlimit_pids, rlimit_memory;
	bool hello_done;	/* the backend already had the guest's HELLO */
	bool restored;		/* from a snapshot */
};
struct box_spec {
	const struct box_opts *opts;
	const char *root_dir, *upper_dir, *work_dir;
	const struct cgroup_set *cg;
};
struct box_backend {
	const char *name;
	int (*start)(const struct box_spec *s, struct box_inst *ret, struct err *e);
	void (*kill)(struct box_inst *b);
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
/* The two go-aheads a backend's child waits for: "m" (the maps are
 * written), then the v1 cgroup attach, then "g" (the cgroups hold). */
int box_go_ahead(int sync_fd, const struct cgroup_set *cg, pid_t pid);
/* The copy-on-write workspace at target: lower, with the box's changes
 * going to upper (work: overlayfs's scratch dir). 0, or -1 with errno. */
int box_mount_overlay(const char *lower, const char *upper, const char *work, const char *target);
/* SIGKILL a backend's process and reap it (bounded: 2 s); close its fds. */
void box_kill_reap(pid_t pid, int pidfd, int chan_fd);
/* vm.c: whether the vm backend can run here, and KVM. */
int vm_available(struct err *e);
bool vm_kvm_usable(void);

/* Spawn a keeper that builds the box; returns when the guest answered. */
int box_create(const struct box_opts *o, char *ret_name, size_t n, struct err *e);
int box_destroy(const char *name, struct err *e);
/* JSON array of {name, alive, keeper_pid, ...}. */
int box_list(cJSON **ret, struct err *e);
/* Remove the state of boxes whose keeper is gone. Returns how many. */
int box_reap(unsigned *ret_n, struct err *e);

struct box_conn;
int box_connect(const char *name, struct box_conn **ret, struct err *e);
void box_disconnect(struct box_conn *c);
typedef void box_output_cb(const char *p, size_t n, void *ud);
/* One call, blocking until its result. cancel_fd (or -1) becoming readable
 * sends a cancel. The result JSON has at least "outcome" and "text". A box
 * that stops answering past the host's deadline is destroyed here too. */
int box_call(struct box_conn *c, const char *tool, const cJSON *args, bool stream,
	     box_output_cb *cb, void *ud, int cancel_fd, cJSON **ret_result, struct err *e);
int box_info(struct box_conn *c, cJSON **ret, struct err *e);

/* Async calls, for a caller with its own event loop: watch box_conn_fd for
 * input and call box_conn_read; call box_conn_tick at box_conn_deadline.
 * Every started call gets exactly one result callback (the result is the
 * callee's to free); a lost connection gives "unknown", a keeper that does
 * not answer past the host's deadline is killed and gives "timed_out". */
struct box_call_cbs {
	void (*output)(void *ud, uint32_t id, const char *p, size_t n);
	void (*result)(void *ud, uint32_t id, cJSON *result);
};
int box_conn_fd(const struct box_conn *c);
/* key: passed to the command as WARD_CALL_ID (NULL: made up). limit_ms 0:
 * the tool's default. */
int box_call_start(struct box_conn *c, const char *tool, const cJSON *args, const char *key, int64_t limit_ms,
		   bool stream, const struct box_call_cbs *cbs, void *ud, uint32_t *ret_id, struct err *e);
int box_call_cancel(struct box_conn *c, uint32_t id);
/* <0: the connection is gone (pending calls were given "unknown"). */
int box_conn_read(struct box_conn *c);
int64_t box_conn_deadline(const struct box_conn *c);
void box_conn_tick(struct box_conn *c);
int box_evidence(struct box_conn *c, uint32_t id, cJSON **ret, struct err *e);

/* keeper.c: the keeper's entry point after fork (never returns). */
void keeper_main(const struct box_opts *o, const char *name, const char *boxdir, int ready_fd)
	__attribute__((noreturn));
