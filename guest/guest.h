/* ward-guest: PID 1 of a box. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/capture.h"
#include "proto/budget.h"
#include "tools/tool.h"

/* Defaults, pinned in tests/unit/test-defaults.c. A call's time limits come
 * with it (proto/budget.h). */
/* A VM's uids a call's user namespace maps one to one: its tool commands
 * run as the VM's root (or the image's User) with a container's
 * capabilities, which reach nothing outside the VM. */
#define GUEST_VM_UIDS 65536
/* The image's Env entries the guest takes, at most, and their size. */
#define GUEST_ENV_MAX 256
#define GUEST_ENV_ENTRY_MAX 32768
#define BASH_TAIL_EVIDENCE 2000
#define GUEST_STREAM_QUEUE (8u << 20)	/* output waiting for the host before chunks are dropped
					 * (a stdin call's pipes are paused instead) */
/* INPUT a stdin call's command has not read yet. The channel carries every
 * call, so the guest cannot stop reading it for one: past this the host is
 * writing faster than the command reads, which is an error frame and the
 * stdin closed, not an ever-growing buffer. */
#define GUEST_STDIN_PENDING (16u << 20)

struct guest_cfg {
	int chan_fd;
	int cgroup_fd;		/* a VM's own v2 cgroup for per-call groups, or -1 (ns: the
				 * call's PID namespace is what ends it) */
	const char *workspace;
	uint64_t rlimit_as;	/* per-command address-space cap, 0 = none */
	/* The box's uid a call's user namespace maps its one uid to (the tool
	 * user's): 0 in the ns backend with one uid (the box's root is an
	 * unprivileged host user). Unused with uids. */
	int tool_outer_uid;
	/* A range of uids (an ns box with one, and every VM: GUEST_VM_UIDS):
	 * how many, from 0; a call's user namespace maps them all, one to
	 * one. 0: one uid. */
	unsigned uids;
	/* ns: the box's root, to change to at once (the guest is exec'd
	 * elsewhere: sandbox/nsroot.c); -1: it is there. */
	int root_fd;
	/* The image's User (NULL: the default, the box's root) and Env ("K=V"
	 * each). */
	const char *user;
	/* vm: /etc/ward-ca.pem's content (the host's CAs and the box's own,
	 * with secrets: sandbox/backend.h's BOX_CA_FILE), from START; or NULL. */
	const char *ca_bundle;
	const char *env[GUEST_ENV_MAX];
	size_t nenv;
	/* Who tool commands (and the in-process tools) are, in the call's user
	 * namespace: cfg->user found in the box's /etc/passwd at start
	 * (base/account.h; the backends have found it already and pass
	 * numbers); user_err, when it cannot be, is every call's result. */
	uid_t tool_uid;
	gid_t tool_gid;
	char tool_name[64];
	char user_err[256];
	/* With egress: the proxy's port on the box's loopback (HTTP_PROXY of
	 * every command), or 0. */
	int proxy_port;
	/* A VM's own disk (its root's changes), synced before every result;
	 * or -1. */
	int root_sync_fd;
	/* vm: the box's boot id, bound over each call's
	 * /proc/sys/kernel/random/boot_id (vm_identity); or NULL. */
	const char *boot_id;
};

struct job;

struct call {
	uint32_t id;
	const struct tool *tool;
	cJSON *req;
	const cJSON *args;
	char key[80];
	bool stream;
	struct budget b;	/* from the CALL frame */
	int64_t start_ms, deadline_ms, last_out_ms;
	bool stopping;		/* SIGTERM sent (or token fired); waiting */
	int64_t kill_at_ms;
	enum outcome end;	/* OUTCOME_OK until a limit or cancel fires */
	bool idle_fired;
	cJSON *evidence;

	/* bash */
	pid_t init_pid;
	bool init_reaped, out_eof, have_status, stream_dropped;
	int out_fd, status_fd, cg_fd;
	int wstatus;
	ino_t pidns;
	struct capture cap;

	/* bash with "stdin": true. The command's stdin is a pipe whose write
	 * end (in_fd, -1 once closed) ward-guest feeds from INPUT frames
	 * through in_pend (from in_off on); in_eof: close it once drained.
	 * stderr has a pipe of its own (err_fd). Output is never dropped:
	 * paused, the call's pipes are out of the loop until the channel's
	 * queue drains. */
	bool input, in_eof, err_eof, paused;
	int in_fd, err_fd;
	struct buf in_pend;
	size_t in_off;

	/* in-process */
	struct job *job;

	/* job_output with a wait, or job_kill: answered when job job_id ends
	 * (or at wait_until; 0: only then), bgjob.c */
	bool jobwait;
	unsigned job_id;
	int64_t wait_until;

	struct call *next;
};

/* main.c: a call's one result (extra: more fields, taken), and frames to
 * the host. */
void guest_result(struct call *c, enum outcome o, const struct buf *text, cJSON *extra);
void guest_result_simple(struct call *c, enum outcome o, const char *msg);
void guest_send_json(uint8_t type, uint32_t id, cJSON *j);

/* bgjob.c: background jobs (tools/job.h). bgjob_start answers c, the bash
 * call that starts one; bgjob_call answers a job tool's call now, or keeps
 * it waiting (c->jobwait) until its job ends; bgjob_call_stop answers a
 * waiting call that was cancelled or timed out. bgjob_reaped: whether pid
 * was a job's init (then reaped). bgjob_tick: the jobs' limits; the next
 * time it must run, or -1. */
struct loop;
void bgjob_init(struct loop *l, const struct guest_cfg *cfg);
void bgjob_start(struct call *c, const char *command);
void bgjob_call(struct call *c);
void bgjob_call_stop(struct call *c, enum outcome why);
bool bgjob_reaped(pid_t pid);
int64_t bgjob_tick(int64_t now);
void bgjob_kill_all(void);

/* vm.c: PID 1 of a microVM. */
int vm_setup(struct guest_cfg *cfg);
/* The box protocol's port, and the egress proxy's streams'. */
#define VM_PORT_BOX "ward"
#define VM_PORT_NET "ward-net"
/* Open a port once the host has connected to it (waits). */
int vm_open_port(const char *name);
/* The VM's own devtmpfs, held once the box's root (with a /dev of its own)
 * is built: where ports are opened from then on; -1 before. */
extern int vm_dev_fd;
int vm_wait_start(struct guest_cfg *cfg);
/* START's entropy and clock, applied (a later START, a wake's, carries
 * only these: guest_frame). */
void vm_fresh(const cJSON *start);
/* A vm box's own identity: the boot id every call sees at
 * /proc/sys/kernel/random/boot_id (VM_BOOT_ID, bound over the kernel's,
 * which a machine restored from a snapshot or a fork's saved state
 * shares), and the image's /etc/machine-id where it has one. Made at the
 * box's first start (fresh or not: where none is yet) and again for a
 * fork (fresh), never at a hibernate's wake. */
#define VM_BOOT_ID "/run/ward-guest/boot_id"
void vm_identity(bool fresh);
void vm_poweroff(const char *why) __attribute__((noreturn));
void vm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Load the modules a list in the initramfs names, in its order. */
void vm_modules(const char *list);
/* Mount a 9p share (its device appears a moment after its module loads). */
int vm_share(const char *tag, const char *dst, unsigned long flags, const char *cache);
/* vm-root.c: the box's root at its first START (image: over the image's
 * erofs; else the host view; ws_share: the workspace's 9p share at
 * /workspace, else the root's own directory), switched to. 0, or -errno
 * with *ret_what the step that failed. */
/* The workspace: none (the root's own /workspace), the 9p share "ws"
 * (--rw, a box on the host view), or a block image with its changes on
 * the box's disk. */
enum vm_ws { VM_WS_NONE, VM_WS_SHARE, VM_WS_BLOCK };
/* seed: a block workspace's upper is first taken from the host
 * (changeset_guest_seed). */
int vm_root_build(bool image, enum vm_ws ws, bool seed, struct guest_cfg *cfg, const char **ret_what);

/* netfwd.c: in a VM, the VM_PORT_NET port's streams, on a thread of its
 * own: a listener on 127.0.0.1:port (0: none) whose connections go to the
 * host's proxy, and the host's streams for the box's published ports. */
int netfwd_start(int port);
/* proc.c: one process tree per bash call. proc_title_init: where
 * ward-guest's command line lies, so that a call's init can overwrite its
 * copy (a call's /proc/1/cmdline is its own init, not ward-guest). */
void proc_title_init(int argc, char **argv);
int proc_start(struct call *c, const struct guest_cfg *cfg, const char *command);
void proc_signal(struct call *c, int sig);
/* evidence.c */
cJSON *evidence_collect(const struct call *c, int64_t budget_ms);
/* worker.c: in-process tools on threads, as this uid and gid when not 0. */
extern int worker_uid, worker_gid;
/* proc.c: the shell a bash call runs: /bin/bash, else /bin/sh (busybox's
 * on an image without bash), else NULL (an image with no shell). */
const char *proc_shell(void);
/* Once the box's root is in place: open it for the tools; cwd is where
 * their relative paths start. */
int worker_setup(const char *cwd);
int worker_start(struct call *c, int done_efd);
/* Jobs completed since the last take, linked through worker_next. */
struct job *worker_take_done(void);
struct job *worker_next(struct job *j);
struct call *worker_call(struct job *j);
struct tool_result *worker_result(struct job *j);
void worker_cancel(struct job *j);
void worker_free(struct job *j);

/* main.c: a frame to the host (queued; the loop writes what does not go
 * now), and how many bytes wait in that queue. */
void guest_send_frame(uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n);
size_t guest_queued(void);
/* changeset.c: a vm box's workspace changes to the host (a CHANGES
 * request). init: the workspace's overlay upper (guest/vm-root.c), once;
 * without it a request is refused. request: walk it and start the
 * stream; pump: more of it, as the queue to the host drains (main.c
 * calls it whenever the queue shrinks); abort: the host went away. */
void changeset_guest_init(int upper_fd);
void changeset_guest_request(uint32_t id, const uint8_t *payload, size_t len);
void changeset_guest_pump(void);
void changeset_guest_abort(void);
/* A fresh box's workspace upper (the path, made anew) from the host's
 * kept changes, asked for on chan at START. 0 or -errno. */
int changeset_guest_seed(int chan, const char *upper);
