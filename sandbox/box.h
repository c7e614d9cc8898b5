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
#include "base/state.h"

/* Defaults, pinned in tests/unit/test-defaults.c. */
#define BOX_DEFAULT_BACKEND "ns"
#define BOX_DEFAULT_MEMORY (1ULL << 30)
#define BOX_DEFAULT_PIDS 512
#define BOX_DEFAULT_DISK (10ULL << 30)
#define BOX_DEFAULT_TTL_MS (8LL * 3600 * 1000)
#define BOX_DEFAULT_IDLE_MS (30LL * 60 * 1000)
#define BOX_CREATE_TIMEOUT_MS 10000

/* A box's network: none (loopback only), the host's own (ns only), or
 * egress through a proxy on the host to the hosts an allow-list names. */
enum box_net {
	BOX_NET_NONE,
	BOX_NET_HOST,
	BOX_NET_ALLOW,
};
#define BOX_ALLOW_MAX 256
/* What a box's egress proxy carries, up and down, before it ends its
 * tunnels and refuses new ones. */
#define BOX_NET_MAX_BYTES_DEFAULT (10ULL << 30)

/* What an idle box's keeper does: destroy it, or hibernate it (a call
 * wakes it). */
enum box_on_idle {
	BOX_IDLE_DESTROY,
	BOX_IDLE_HIBERNATE,
};

/* The least --memory and --disk a box may be given. */
#define BOX_SIZE_MIN (16u << 20)

struct box_opts {
	const char *name;	/* NULL: generated */
	const char *backend;	/* "ns" */
	int64_t ttl_ms, idle_ms;	/* 0: none */
	enum box_on_idle on_idle;
	/* Hibernated this long, the saved state is compressed and moved to
	 * the store (0: never). */
	int64_t cold_after_ms;
	const char *store;	/* "DIR" or "s3://BUCKET/PREFIX"; NULL: the state dir's cold/ */
	bool persistent;	/* survives the ward that made it */
	bool keep_layers;	/* keep the workspace's changes after the box (ward run) */
	bool no_snapshot;	/* vm: cold boot, never from a snapshot */
	struct limits lim;
	/* lim.disk was asked for (--disk, or the config key), not the
	 * default: without root, only then are the root's changes on the
	 * layers image too (each of its overlays a fuse-overlayfs; reads of
	 * the root through FUSE cost that much more). */
	bool disk_given;
	enum box_net net;
	const char *const *allow;	/* --allow-host patterns (BOX_NET_ALLOW), valid ones */
	size_t nallow;
	uint64_t net_max_bytes;	/* 0: BOX_NET_MAX_BYTES_DEFAULT */
	/* Secrets (BOX_NET_ALLOW; net/secret.h): "NAME@HOST[,HOST...]" each,
	 * and each one's value beside it. The box gets NAME=<a placeholder of
	 * its own>; the values go to the keeper and its egress proxy only
	 * (never to a fork, a pool, a file, or box_info). */
	const char *const *secrets;
	size_t nsecrets;
	const char *const *secret_values;
	size_t nsecret_values;
	/* PEM certificates the proxy trusts, beside the host's CAs, for the
	 * secrets' hosts it terminates TLS for (--secret-ca); or NULL. */
	const char *secret_ca;
	/* A credential of another to a secret's host carried, not refused
	 * (--secret-other-ok; net_proxy_cfg's secret_other_ok). */
	bool secret_other_ok;
	const char *workspace;	/* host directory; NULL: an empty one */
	/* The box's root: an image by its manifest digest ("sha256:<64
	 * hex>", image/image.h), or NULL for the host's own view. */
	const char *image;
	bool rw;		/* live read-write instead of copy-on-write */
	bool git_rw;		/* its git directories writable (--allow-git-changes); else read-only */
	int64_t grace_ms;
	const char *guest_path;
	/* The ward-keeper program: the box's keeper, exec'd (box_create). */
	const char *keeper_path;
	pid_t owner;		/* a non-persistent box dies with this process */
	const char *const *labels;	/* "key=value" each (box_label_check), BOX_LABELS_MAX at most */
	size_t nlabels;
	/* A pool box (box_pool): made as far as a guest waiting for START,
	 * then taken by a box_create of the same kind. vm only. */
	bool pool;
	/* Ports of the box opened to the host as it is made (--publish):
	 * "[[ADDR:]HOSTPORT:]PORT" each (box_port_parse), BOX_PORTS_MAX at
	 * most. */
	const char *const *publish;
	size_t npublish;
	/* A fork: the box whose layers (its workspace's and its root's
	 * changes) this one starts from (box_fork). */
	const char *fork_of;
};

/* Labels: metadata a box carries for whoever made it (a task, a team, a
 * cost centre), shown by ls and info and kept in the journals of the
 * sessions that use the box. key: 1 to 63 of [a-z0-9._/-], starting with
 * a letter or digit; value: 0 to 255 printable ASCII characters. */
#define BOX_LABELS_MAX 32
int box_label_check(const char *kv, struct err *e);
/* Whether a box's info (box_info, box_list) carries label kv ("key=value"). */
bool box_has_label(const cJSON *info, const char *kv);

void box_opts_default(struct box_opts *o);
/* The options as the keeper receives them (sandbox/box-opts.c): every
 * field, as JSON. from_json allocates each string and list of ret, which
 * box_opts_release frees. */
cJSON *box_opts_to_json(const struct box_opts *o);
int box_opts_from_json(const cJSON *j, struct box_opts *ret, struct err *e);
void box_opts_release(struct box_opts *o);

/* "ns", "vm" or "auto": a backend this build has. */
bool box_backend_known(const char *name);
/* Whether vm boxes can run here (0, or why not in e), and with KVM. */
int box_vm_available(bool *ret_kvm, struct err *e);

/* Start a keeper that builds the box (the program o->keeper_path, exec'd
 * with an environment built for it: SECURITY.md, "Helper processes");
 * returns when the guest answered. A
 * vm box without a name is taken from a warm pool (box_pool) when one
 * holds a box of the same kind: backend, limits, workspace, network, guest,
 * image (what the VM was started with); its lifetime, owner and labels are this
 * create's. */
int box_create(const struct box_opts *o, char *ret_name, size_t n, struct err *e);
/* A warm pool: keep size boxes of o's kind restored and waiting for START
 * (each a keeper of its own, owned by this process), making a new one as
 * one is taken, until stop_fd is readable; then the boxes not taken are
 * destroyed (and die with this process if it is killed). say(msg) tells
 * of each box made or taken. 0, or <0 when no box could be made. */
int box_pool(const struct box_opts *o, unsigned size, int stop_fd, void (*say)(const char *msg), struct err *e);
int box_destroy(const char *name, struct err *e);
/* The same for n boxes at once (their ends side by side): fail (if not
 * NULL) gets each one that is not a box; the number of those. */
int box_destroy_each(const char *const *names, size_t n, void (*fail)(void *ud, const struct err *e), void *ud);
/* JSON array of {name, alive, keeper_pid, ...}. */
int box_list(cJSON **ret, struct err *e);
/* Remove the state of boxes whose keeper is gone. Returns how many. */
int box_reap(unsigned *ret_n, struct err *e);

struct box_conn;
/* Connect to a box's keeper: it answers within BOX_CONNECT_TIMEOUT_MS,
 * or, while its box is hibernating, waking or moving to the store (the
 * keeper busy with it), once that is done (bounded by
 * BOX_HIBERNATE_TIMEOUT_MS). */
#define BOX_CONNECT_TIMEOUT_MS 2000
int box_connect(const char *name, struct box_conn **ret, struct err *e);
/* The same, but a busy keeper is -EBUSY at once (for asking every box, as
 * ls does, or ending one). */
int box_connect_quick(const char *name, struct box_conn **ret, struct err *e);
/* Close the connection. Calls still pending are dropped without a result
 * callback: disconnect after the results that matter have come. */
void box_disconnect(struct box_conn *c);
/* The box's cancel grace, as its keeper's hello said (its --grace). */
int64_t box_conn_grace(const struct box_conn *c);
/* Box-wide events as they come while the connection is driven: each
 * connection the box's egress proxy carried or refused,
 * {"type":"net","host","port","method","allowed","why","addr","up","down",
 * "ms"} (net/proxy.h). The JSON is the callee's; cb NULL: dropped. */
void box_conn_on_event(struct box_conn *c, void (*cb)(void *ud, cJSON *ev), void *ud);
/* A connection to the box's egress proxy from the host, for ward's own
 * requests on the box's behalf (an MCP server over HTTP): the proxy speaks
 * HTTP proxy (CONNECT, or a proxied request) and applies the box's
 * allow-list and byte budget, as to the box's own connections. A blocking
 * stream socket, or -errno with why in msg (-ENETUNREACH: the box has no
 * egress: its network is off or open). */
int box_egress_dial(const struct box_conn *c, char *msg, size_t cap);
/* The box's state and limits (bounded: BOX_CONNECT_TIMEOUT_MS). */
int box_info(struct box_conn *c, cJSON **ret, struct err *e);
/* Hibernate the box: its workspace layer and /tmp (its home) are kept on
 * disk, every process of it ends (they do not survive: see SECURITY.md).
 * Refused while calls run. A call to a hibernated box wakes it first (a
 * box event {"type":"box","event":"woken","ms"} says how long it took).
 * ret (the callee's to free): {"ms","state_bytes"} or {"already":true}.
 * Bounded: BOX_HIBERNATE_TIMEOUT_MS, the one owner of a step's time: the
 * keeper's saving or putting back of /tmp may take all of it but
 * BOX_HIBERNATE_REST_MS, which is the rest's (the manifest, a guest's
 * start, the answer). */
#define BOX_HIBERNATE_TIMEOUT_MS (11LL * 60 * 1000)
#define BOX_HIBERNATE_REST_MS (60LL * 1000)
int box_hibernate(struct box_conn *c, cJSON **ret, struct err *e);
/* The same, and the box outlives the ward that made it (a session's box
 * when the session ends: `ward --resume` wakes it); its TTL still holds. */
int box_hibernate_keep(struct box_conn *c, cJSON **ret, struct err *e);
/* A box so kept, owned again by this process (a resumed session's): it
 * dies with it, as the box its session first made did, unless another
 * box_hibernate_keep keeps it. -EBUSY: another ward owns it; -EINVAL: it
 * is persistent. Bounded: BOX_CONNECT_TIMEOUT_MS. */
int box_own(struct box_conn *c, struct err *e);
/* A port of the box opened to the host (ns): the box's keeper listens at
 * ADDR:HOSTPORT (127.0.0.1 unless an address is asked for; a port the
 * kernel picks unless one is asked for) and carries each connection to
 * PORT on the box's loopback. Closed with the box; connections and bytes
 * are counted (box_info's "ports"). */
#define BOX_PORTS_MAX 16
struct box_port_spec {
	char addr[16];		/* an IPv4 address; "": 127.0.0.1 */
	uint16_t host_port;	/* 0: the kernel picks one */
	uint16_t port;		/* in the box */
};
/* "[[ADDR:]HOSTPORT:]PORT", e.g. 8000, 8080:8000, 0.0.0.0:8080:8000. */
int box_port_parse(const char *s, struct box_port_spec *ret, struct err *e);
/* Open it, or find the one open for PORT: ret (the callee's to free)
 * {"port":{"port","address","connections","refused","open","bytes_in","bytes_out"}}
 * (open: held now, connecting or carried). */
int box_port_open(struct box_conn *c, const struct box_port_spec *s, cJSON **ret, struct err *e);
/* Every port open: {"ports":[...]} as above. */
int box_ports(struct box_conn *c, cJSON **ret, struct err *e);
/* Fork box parent (ns): a new box (named name, or a generated one into
 * ret_name) with the parent's options, owned by owner, whose workspace
 * and root layers start as copies of the parent's (made as checkpoints
 * are: file by file, FICLONE where the file system shares extents; the
 * parent's cgroup frozen meanwhile where it can be). Processes are not
 * carried: the new box starts with none. ret (the callee's to free):
 * {"name","ms","bytes","files","frozen"}. */
int box_fork(const char *parent, const char *name, pid_t owner, char *ret_name, size_t n, cJSON **ret,
	     struct err *e);
/* Whether box name is alive and hibernated (or cold): nothing of it runs
 * and its keeper has let go of its workspace layer. */
bool box_is_hibernated(const char *name);
/* Whether NAME has a keeper running (a box, in whatever state). */
bool box_has_keeper(const char *name);
/* Wake it now: {"ms"} or {"already":true}; a torn saved state is refused
 * (-EBADMSG) and kept as it is. */
int box_wake(struct box_conn *c, cJSON **ret, struct err *e);

/* The box's background jobs (tools/job.h), as job_list gives them: a JSON
 * array of {id, command, state: running|ended, elapsed_ms, exit_code |
 * signal, why?, output_bytes, dropped_bytes, ports: [{port, addr}]}, the
 * callee's to free. A call: it wakes a hibernated box (ask
 * box_is_hibernated first). Bounded: BOX_JOBS_TIMEOUT_MS. */
#define BOX_JOBS_TIMEOUT_MS 3000
int box_jobs(struct box_conn *c, cJSON **ret, struct err *e);

/* Calls. There is one way to make a call: start it, then drive the
 * connection from an event loop (watch box_conn_fd for box_conn_events,
 * call box_conn_io with what it got and box_conn_tick at
 * box_conn_deadline). Writes never block: frames wait in a bounded queue.
 * Every started call gets at most one result callback, and exactly one
 * unless box_disconnect comes first (it drops pending calls without one).
 * The result JSON is the callee's to free, with at least "outcome" and
 * "text": a lost connection gives "unknown"; a keeper that
 * does not answer past the call's budget (proto/budget.h), or that stops
 * taking frames after a cancel, is killed, the box with it, and gives
 * "timed_out" or "cancelled". */
struct box_call_cbs {
	void (*output)(void *ud, uint32_t id, const char *p, size_t n);
	void (*result)(void *ud, uint32_t id, cJSON *result);
	/* An input call's stderr, and what the box says about its stdin
	 * ("[ward: ...]" lines); NULL: they go to output. */
	void (*output_err)(void *ud, uint32_t id, const char *p, size_t n);
};
struct box_call_req {
	const char *tool;
	const cJSON *args;
	const char *key;	/* the command's WARD_CALL_ID; NULL: made up */
	int64_t left_ms;	/* what the task has left, which clamps the limit; <0: no clamp */
	/* The call's wall-clock limit, up to BUDGET_LIMIT_MAX_MS (a
	 * long-lived call: days); 0: the tool's own (bash: its timeout
	 * argument, at most BASH_TIMEOUT_MAX_S). */
	int64_t limit_ms;
	bool stream;		/* output frames as they come */
	/* bash only: the command's stdin comes from box_call_input (without
	 * it, /dev/null), its stdout and stderr come apart (output and
	 * output_err), and its output is streamed and never dropped: a
	 * caller that reads slowly slows the command down. A call for a
	 * server speaking over its stdin and stdout (MCP). */
	bool input;
};
int box_call_start(struct box_conn *c, const struct box_call_req *rq, const struct box_call_cbs *cbs, void *ud,
		   uint32_t *ret_id, struct err *e);
int box_call_cancel(struct box_conn *c, uint32_t id);
/* Its caller no longer waits for call id: its output and result, when
 * they come, are dropped without a callback (its limits still hold). For
 * a caller that leaves while the connection lives on (a turn stopped at
 * once, after which the connection is still used). */
void box_call_forget(struct box_conn *c, uint32_t id);
/* Bytes for an input call's stdin, queued whole (in frames of at most
 * PROTO_MAX_PAYLOAD) and written as the connection is driven, in order.
 * -ENOENT: no such call is pending (it ended: its result came), or it has
 * no stdin; -EPIPE: its stdin was closed (box_call_input_close);
 * -EMSGSIZE: over BOX_INPUT_MAX at once; -ENOBUFS: the connection's queue
 * has no room now (drive it, and try again). The box holds at most
 * GUEST_STDIN_PENDING bytes the command has not read: past that it closes
 * the stdin and says so on output_err. */
#define BOX_INPUT_MAX (4u << 20)
int box_call_input(struct box_conn *c, uint32_t id, const void *p, size_t n);
/* The stdin ends (EOF) after what was queued. -ENOENT as above; -ENOBUFS
 * when the queue has no room now. Closing twice is 0. */
int box_call_input_close(struct box_conn *c, uint32_t id);
int box_conn_fd(const struct box_conn *c);
/* EPOLLIN, and EPOLLOUT while frames wait to be written. */
uint32_t box_conn_events(const struct box_conn *c);
/* <0: the connection is gone (pending calls were given "unknown"). */
int box_conn_io(struct box_conn *c, uint32_t events);
int64_t box_conn_deadline(const struct box_conn *c);
void box_conn_tick(struct box_conn *c);
/* Drive the connection, blocking, until done(ud) is true (0), until
 * (monotonic ms; <0: none) passes (-ETIMEDOUT), or the connection is gone
 * (-ECONNRESET). For a caller with no loop of its own. */
int box_conn_wait(struct box_conn *c, bool (*done)(void *ud), void *ud, int64_t until);
/* The same, also watching fd for input (on_fd(fd_ud) then; fd -1: none). */
int box_conn_wait_fd(struct box_conn *c, bool (*done)(void *ud), void *ud, int64_t until, int fd,
		     void (*on_fd)(void *ud), void *fd_ud);

typedef void box_output_cb(const char *p, size_t n, void *ud);
/* The same, blocking until the result: a loop over the calls above.
 * cancel_fd (or -1) becoming readable cancels the call. */
int box_call(struct box_conn *c, const struct box_call_req *rq, box_output_cb *cb, void *ud, int cancel_fd,
	     cJSON **ret_result, struct err *e);
