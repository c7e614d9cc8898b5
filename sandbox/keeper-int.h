/* The keeper's insides, shared by its files (keeper.c: the loop, the
 * clients and the calls; keeper-guest.c: the guest; hibernate.c: hibernate,
 * wake and cold storage).
 * Nothing outside sandbox/ includes this. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/err.h"
#include "base/loop.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "sandbox/backend.h"
#include "sandbox/box-state.h"
#include "sandbox/egress.h"
#include "workspace/layers.h"
#include "image/image.h"

/* Refusals of the egress proxy a call's result reports, at most. */
#define KCALL_NET_MAX 8

/* A box's hibernated state (hibernate.c); where the box is, K.state. */
struct keeper_hib {
	char dir[PATH_MAX];	/* where the state lives, on disk */
	int64_t at_ms;		/* when it was hibernated */
	uint64_t bytes;		/* on disk */
	uint64_t stored;	/* in the store, compressed, when cold */
	unsigned wakes;
	bool from_cold;		/* a wake's: the state was in the store */
	/* The box's processes were saved with it (vm.state: its whole
	 * machine), the machine's memory laid out as a snapshot's restore
	 * (ram_restored); else why they ended. */
	bool kept, ram_restored;
	char why[320];
};

struct kclient {
	int fd;
	struct proto_reader rd;
	struct proto_writer wr;
	uint32_t mask;		/* what the loop watches for */
	bool hello;		/* told the keeper's hello (held while a step runs) */
	struct kclient *next;
};

/* A call the keeper makes itself (hibernate.c's tar), on the same path
 * as a client's: its frames (OUTPUT, ERROR, the call's EVENTs) and its
 * result go to these, not to a client. The result is the guest's, or
 * the keeper's own when the guest is gone or the call ran past its
 * deadline; the call is removed after. */
struct kcall;
struct kcall_own {
	void (*frame)(struct kcall *k, const struct frame *f);
	void (*result)(struct kcall *k, const cJSON *res);
};

/* Who waits for a step (a hibernate, a wake) to end: a client's request,
 * or the keeper's own idle hibernate (type 0, no client). */
struct kwaiter {
	struct kclient *cl;	/* NULL: gone meanwhile, or the keeper's own */
	uint8_t type;		/* PROTO_HIBERNATE, PROTO_WAKE or PROTO_CALL */
	uint32_t id;
	bool keep;		/* a hibernate that lets the box outlive its owner */
	bool owner_gone;	/* ... whose owner exited while it ran */
	uint8_t *call;		/* the CALL that woke the box: made once it is up */
	uint32_t call_len;
};

struct kcall {
	uint32_t gid, cid;	/* guest-side and client-side ids */
	struct kclient *cl;
	bool evidence;		/* a box-wide evidence request, not a call */
	bool input;		/* "stdin": output never dropped (KEEPER_PACE) */
	struct budget b;	/* the call's, from its CALL frame */
	int64_t start_ms, cancel_ms, deadline_ms;
	/* What the egress proxy refused while the call ran: its result says. */
	char *net_refused[KCALL_NET_MAX];
	unsigned nnet;
	const struct kcall_own *own;	/* the keeper's own call: cl is NULL */
	/* Its result, held until the workspace's sync numbered ws_need is
	 * done (keeper-ws.c), or NULL. */
	uint8_t *held;
	size_t nheld;
	uint64_t ws_need;
	struct kcall *next;
};

struct keeper {
	const struct box_opts *o;
	const char *name, *boxdir;
	char root[PATH_MAX], upper[PATH_MAX], work[PATH_MAX], sock[PATH_MAX + 16];
	char disk[PATH_MAX];	/* the box's own disk (state_disk_path), if its backend makes one */
	struct layers layers;	/* held for the box's life (its image stays mounted) */
	bool layered;		/* the box has layers: a workspace's, or its root's */
	bool root_layer;	/* its backend keeps the root's changes in layers.root */
	uid_t root_uid;		/* who owns them on the host: the box's root */
	char root_by[160];	/* who the box's root is, and why */
	/* The box's root image (o->image), held for the box's life: a
	 * hibernated box wakes over the same tree, and no prune removes it. */
	struct image_info img;
	const struct box_backend *be;
	/* Where the box is (box-state.h says which moves are legal); only
	 * keeper_state_set moves it. */
	enum box_state state;
	struct cgroup_set cg;
	char cgname[96];
	struct box_inst inst;
	struct egress eg;
	bool up;		/* a guest is running and has said hello */
	struct proto_reader grd;
	struct proto_writer gwr;
	uint32_t gmask;		/* what the loop watches for on the guest's channel */
	struct loop *loop;
	int lfd, sfd, ownerfd;
	pid_t owner;		/* ownerfd's process, for a message */
	struct kclient *clients;
	struct kcall *calls;
	struct kwaiter waiter;	/* who waits for the step that runs */
	uint32_t next_gid;
	int64_t created_ms, ttl_at, idle_at, last_activity;
	time_t created_wall;
	unsigned restarts;
	size_t guest_log_bytes;
	bool quit;
	const char *why;
	struct keeper_hib hib;	/* hibernate.c's */
	bool kept;		/* hibernated to outlive its owner (box_hibernate_keep) */
	/* keeper-fork.c: the client a fork copies this box's layers for,
	 * while the box's cgroup is frozen, until it goes or thaw_at. */
	struct kclient *freezer;
	int64_t thaw_at;
};
extern struct keeper K;


/* What is queued for one client, or for the guest, at most. */
#define KEEPER_CLIENT_QUEUE (16u << 20)

void keeper_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kclient_send_json(struct kclient *c, uint8_t type, uint32_t id, cJSON *j);
/* A request's answer: j with "ok" (r >= 0) or e's "error" and r as
 * "code", sent as INFO; j is freed. */
void kclient_reply(struct kclient *c, uint32_t id, cJSON *j, int r, const struct err *e);
/* A box-wide event ({"type":"box",...}) to every client. */
void keeper_broadcast(cJSON *ev);
/* Which of the guest's channel and the clients the loop reads and
 * writes, after a queue grew or shrank (keeper.c, KEEPER_PACE). */
void keeper_pace(void);
/* A kept box owned again, by c's process (PROTO_OWN): it dies with it
 * unless a hibernate keeps it again. 0 also when c's process owns it. */
int keeper_own(const struct kclient *c, struct err *e);
/* The box's owner exited: the loop's callback on its pidfd. */
void keeper_owner_exit(struct loop *l, int fd, uint32_t events, void *data);
void kclient_send(struct kclient *c, uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n);
/* A call done with (its result sent, or its client gone). */
void kcall_remove(struct kcall *k);
/* A call to the guest, for client c (its id cid) or the keeper's own
 * (own; c NULL): its deadline from b, the CALL sent. NULL: no memory. */
struct kcall *kcall_start(struct kclient *c, uint32_t cid, const struct budget *b, bool input, const void *req,
			  size_t len, const struct kcall_own *own);
/* Cancel a call: the guest stops it within the call's grace. */
void kcall_cancel(struct kcall *k);
/* The step that ran is over (r < 0: failed, e says why): K.waiter is
 * answered with ret (freed), and the clients are listened to again. */
void keeper_step_answer(int r, cJSON *ret, const struct err *e);

/* keeper-guest.c. Start the guest in the box's cgroup and attach it (a
 * pool box's waits for START: a claim attaches it). */
int keeper_guest_up(struct err *e);
/* A started guest's hello, its egress proxy and its place in the loop. */
int keeper_guest_attach(struct err *e);
/* Every process of the box ends: the guest, the VMM, the egress proxy. */
void keeper_guest_down(void);
/* The box's helpers end (the egress proxy, the ports' connections) and
 * its channel leaves the loop, the box itself left as it is: before a
 * backend's save (hibernate.c), keeper_guest_down after it. */
void keeper_guest_detach(void);
/* The box's spec as the keeper starts it, for the backend. */
struct box_spec;
void keeper_spec(struct box_spec *ret);
/* Down, then up again over the same layers (a lost box made again). */
int keeper_guest_restart(struct err *e);
/* The box's cgroup, with the limits the backend puts on the host side. */
void keeper_guest_cgroup_create(void);
/* A frame to the guest (queued; the loop writes what does not go now). */
void keeper_guest_send(uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n);
/* Answer every call in flight on a box that is gone: outcome and text for
 * each, but late (the call whose deadline passed) is told it timed out,
 * or was cancelled. */
void keeper_guest_fail_calls(const char *outcome, const char *text, struct kcall *late);
/* keeper-info.c: the box's state and limits to a client (INFO); the
 * cgroup's counts added to evidence; info.json and keeper.pid. */
void keeper_info(struct kclient *c, uint32_t id);
void keeper_augment_evidence(cJSON *j);
void keeper_write_files(void);
/* pool.c: a pool box taken by a create (CLAIM). */
int keeper_claim(const struct frame *f, struct err *e);
/* The box moved to another state (a move box-state.c refuses is logged
 * and not made), written to boxdir/state for ls when the keeper is busy
 * with a step (box_state_busy) and does not answer. */
void keeper_state_set(enum box_state to);
/* The box is saved (hibernated or cold): nothing of it runs. */
bool keeper_saved(void);

/* hibernate.c. Hibernate: the box's /tmp (its home) is saved beside its
 * workspace layer, which is kept, and every process of the box ends (the
 * guest, the VMM, the egress proxy); the state is complete only once its
 * manifest is written, last. Wake: a new guest over the same layers, /tmp
 * put back. Each is a step on the keeper's loop, K.state busy while it
 * runs, answering K.waiter at its end (keeper_step_answer): the saving and
 * the putting back of /tmp are calls the loop waits on, so TTL, the
 * owner's exit and signals are heeded meanwhile. What is not: a vm's save
 * of its machine and its resume, a guest's start (each bounded by its
 * backend), and a fetch from the store, block the loop while they run.
 * Client requests wait while a step runs (a new client's hello too). */
void keeper_hibernate(void);
void keeper_wake(void);
/* The loop's turn for the step that runs: true when it did something. */
bool keeper_step_advance(void);
/* The box ends while a step runs: it is over, its waiter told why. */
void keeper_step_abort(const char *why);
/* A box event ({"type":"box","event":what,"box"[,"why"]}) to every
 * client; a step's, by its name in box-state.c. */
void keeper_box_event(const char *what, const char *why);
void keeper_step_event(enum box_step s, enum box_step_event ev, const char *why);
/* keeper-port.c: the box's ports opened to the host. Open one (or find
 * the one open) into ret's "port"; every one into ret's "ports"; whether
 * a connection is being carried (the box is not idle); the guest gone
 * (connections and the helper end, the listeners stay); the box gone. */
int keeper_port_open(const struct box_port_spec *s, cJSON *ret, struct err *e);
/* A PORT frame answered; the box's --publish ports opened as it is made. */
void keeper_port_request(struct kclient *c, const struct frame *f);
int keeper_port_publish(struct err *e);
void keeper_port_list(cJSON *ret);
bool keeper_port_busy(void);
void keeper_port_down(void);
void keeper_port_free(void);
/* keeper-jobs.c: the guest's jobs that run, from its events. At a
 * hibernate that ends them: each one's end told to every client (a job
 * end event), listed in ret's "jobs_ended" and in the box's info after
 * ("jobs_ended_by_hibernate"), each with the hibernate's wall-clock
 * stamp ("hibernated_at", ms); how many. The guest gone any other way:
 * forgotten. */
void keeper_jobs_event(const cJSON *ev);
/* How many of the guest's jobs run (the keeper's idle policy). */
unsigned keeper_jobs_running(void);
unsigned keeper_jobs_end(const char *why, cJSON *ret);
/* The guest gone for good (not its machine saved whole, whose jobs a
 * wake goes on with): its jobs forgotten. */
void keeper_jobs_forget(void);
void keeper_jobs_info(cJSON *j);
void keeper_jobs_free(void);
/* keeper-mux.c: a VM's network port (inst.net_mux), served from the
 * guest's start (the port's descriptor is the mux's after) to its end;
 * the mux while it serves (NULL: none, or the guest broke it). */
struct netmux;
int keeper_mux_up(struct err *e);
void keeper_mux_down(void);
struct netmux *keeper_mux(void);
/* keeper-fork.c. A FORK frame answered (the box's options, its cgroup
 * frozen for that client); the freeze let go; a fork's layers copied from
 * its parent's (o->fork_of) before its guest starts. */
void keeper_fork_request(struct kclient *c, const struct frame *f);
void keeper_fork_thaw(void);
/* A fork's layers, where its parent's are on an image: the image copied
 * whole before this keeper opens its layers (then they are the parent's
 * as they were, root/ too). 1 copied, 0 not this way, -errno. */
int keeper_fork_image(struct err *e);
/* Before this keeper enters a namespace of its own for its layers
 * (layersfuse_enter): the parent's layers found and held, reached from
 * here on through descriptors (its fuse2fs mount is in its keeper's
 * namespace, which a process in a namespace beside it cannot walk to);
 * keeper_fork_copy copies from them. 0, or -errno (a parent whose layers
 * no keeper serves: a hibernated one). */
int keeper_fork_peek(struct err *e);
int keeper_fork_copy(struct err *e);
/* The box's guest up: a vm fork's resumed from the parent's machine that
 * keeper_fork_copy took; else keeper_guest_up. */
int keeper_fork_up(struct err *e);
/* What a fork copied, into info's "forked_from" (nothing for a box that
 * is not a fork). */
void keeper_fork_info(cJSON *j);
/* cold.c: compress a hibernated state and move it to the store
 * (--cold-after); fetch it back for a wake (the manifest then decides);
 * remove it from the store (after a wake, or with the box). */
int keeper_cold(struct err *e);
int keeper_cold_fetch(struct err *e);
void keeper_cold_drop(void);
/* Remove the saved state (the box is destroyed). */
void keeper_hib_drop(void);
/* What the box holds on disk: its layer and its saved state, in bytes. */
uint64_t keeper_disk_bytes(void);
/* keeper.c: the box's layers at its end: its root's changes removed, its
 * workspace's kept for a session (keep_layers) or removed, the hold let go. */
void keeper_layers_end(void);
/* keeper.c: the box's own disk removed, and what is kept beside it (a vm
 * box's workspace image). */
void keeper_disk_unlink(void);
/* keeper-guest.c: take the box's layers again (a wake, a restart), its
 * root's changes as they were. */
int keeper_layers_take(struct err *e);
/* keeper-guest.c: the workspace layer's upper and work directories given
 * to the box's root. */
int keeper_layers_own(struct err *e);

/* keeper-guest.c: a call's result from the guest to its client, with
 * what the proxy refused meanwhile (the caller removes the call). */
void keeper_guest_result(struct kcall *k, const struct frame *f);
/* keeper-ws.c: a block workspace's changes, copied from the guest into
 * the host's upper. active: the box has one and its guest is up. hold: a
 * call's result waits for the next sync (started now, or after the one
 * under way); 0 or -ENOMEM (then send it at once). frame: a CHANGES or
 * ERROR frame of the sync, taken (true) or not ours. reset: the guest is
 * gone; a sync under way is dropped. sync_now: a sync, waited for up to
 * ms, the loop held (a hibernate, the box's end); 0 or -errno, e set. */
#define KEEPER_WS_SYNC_MS 10000
/* How long a held result waits for its sync at most (a file's bytes
 * cross the VM's serial port: a large one takes a while under TCG). */
#define KEEPER_WS_HELD_MS 300000
bool keeper_ws_active(void);
int keeper_ws_hold(struct kcall *k, const struct frame *f);
bool keeper_ws_frame(const struct frame *f);
void keeper_ws_reset(void);
int keeper_ws_sync_now(int64_t ms, struct err *e);
/* A block workspace's syncs, into info's "workspace_sync" (under way,
 * how many were done, results held). */
void keeper_ws_info(cJSON *j);
