/* The keeper's side of the box's guest: bringing it up (its cgroup, its
 * hello, its egress proxy) and down, the frames to it, and the frames from
 * it, each handed to the client whose call it belongs to. A guest that
 * ends, or breaks the protocol, fails every call in flight. */
#include "sandbox/backend.h"
#include "sandbox/box.h"
#include "sandbox/egress.h"
#include "sandbox/keeper-int.h"
#include "workspace/layers.h"
#include "proto/proto.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "base/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What of the guest's stderr reaches the keeper's log, per box. */
#define KEEPER_GUEST_LOG_MAX (1u << 20)

static void guest_flush(void)
{
	if (!K.up)
		return;
	proto_flush(&K.gwr, K.inst.chan_fd);
	keeper_pace();
}

void keeper_guest_send(uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n)
{
	if (proto_queue(&K.gwr, type, flags, id, p, n) == 0)
		guest_flush();
}

static struct kcall *kcall_by_gid(uint32_t gid)
{
	for (struct kcall *k = K.calls; k; k = k->next)
		if (k->gid == gid)
			return k;
	return NULL;
}

/* One connection the egress proxy carried or refused: every client hears
 * of it (ward run journals it), and a refusal goes into the result of each
 * call running, so the model is told why its download failed. */
static void keeper_net_event(void *ud, cJSON *ev)
{
	_cleanup_free_ char *s = cJSON_PrintUnformatted(ev);
	for (struct kclient *c = K.clients; c && s; c = c->next)
		if (c->hello)
			kclient_send(c, PROTO_EVENT, 0, 0, s, strlen(s));
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "why"));
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev, "allowed")) && why && *why) {
		for (struct kcall *k = K.calls; k; k = k->next)
			if (!k->evidence && k->nnet < KCALL_NET_MAX)
				k->net_refused[k->nnet++] = strdup(why);
	}
	cJSON_Delete(ev);
}

/* The guest's result, with what the proxy refused during the call added
 * to its text and as "net_refused". */
void keeper_guest_result(struct kcall *k, const struct frame *f)
{
	cJSON *j = k->nnet ? cJSON_ParseWithLength((const char *)f->payload, f->len) : NULL;
	if (!j) {
		kclient_send(k->cl, PROTO_RESULT, 0, k->cid, f->payload, f->len);
		return;
	}
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "text"));
	struct buf t;
	buf_init(&t, 64u << 10);
	if (text)
		buf_append(&t, text, strlen(text));
	if (t.len && t.data[t.len - 1] != '\n')
		buf_append(&t, "\n", 1);
	cJSON *arr = cJSON_AddArrayToObject(j, "net_refused");
	for (unsigned i = 0; i < k->nnet; i++) {
		if (!k->net_refused[i])
			continue;
		buf_printf(&t, "ward: the box's egress proxy refused a connection: %s\n", k->net_refused[i]);
		cJSON_AddItemToArray(arr, cJSON_CreateString(k->net_refused[i]));
	}
	if (buf_cstr(&t) == 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(j, "text");
		cJSON_AddStringToObject(j, "text", t.data);
	}
	buf_free(&t);
	kclient_send_json(k->cl, PROTO_RESULT, k->cid, j);
	cJSON_Delete(j);
}

/* Answer every call in flight on a box that is gone. The call whose
 * deadline passed (late) gets its own outcome: cancelled if it was, else
 * timed out. */
void keeper_guest_fail_calls(const char *outcome, const char *text, struct kcall *late)
{
	while (K.calls) {
		struct kcall *k = K.calls;
		cJSON *j = cJSON_CreateObject();
		bool mine = k == late;
		char msg[512];
		if (mine && k->cancel_ms)
			snprintf(msg, sizeof(msg),
				 "cancelled; the box did not stop the call within its grace (%.1f s) and was "
				 "destroyed; a new box will be created; files under /workspace are kept\n",
				 k->b.grace_ms / 1000.0);
		else if (mine)
			snprintf(msg, sizeof(msg),
				 "timed out after %lld s; the box did not stop the call in time and was "
				 "destroyed; a new box will be created; files under /workspace are kept\n",
				 (long long)((k->b.limit_ms + 999) / 1000));
		cJSON_AddStringToObject(j, "outcome", mine ? (k->cancel_ms ? "cancelled" : "timed_out") : outcome);
		cJSON_AddStringToObject(j, "text", mine ? msg : text);
		cJSON_AddStringToObject(j, "environment", "the box was destroyed");
		cJSON_AddBoolToObject(j, "box_destroyed", 1);
		if (k->own)
			k->own->result(k, j);
		else
			kclient_send_json(k->cl, PROTO_RESULT, k->cid, j);
		cJSON_Delete(j);
		kcall_remove(k);
	}
}

static void on_guest(struct loop *l, int fd, uint32_t events, void *data);

void keeper_guest_detach(void)
{
	if (K.eg.ev_fd >= 0)
		loop_del(K.loop, K.eg.ev_fd);
	egress_stop(&K.eg, keeper_net_event, NULL);
	keeper_port_down();
	/* The VM's network port closes with its streams, so the VMM sees it
	 * close before a save (a wake serves the new one's). */
	keeper_mux_down();
	if (K.inst.chan_fd >= 0)
		loop_del(K.loop, K.inst.chan_fd);
}

void keeper_guest_down(void)
{
	if (K.eg.ev_fd >= 0)
		loop_del(K.loop, K.eg.ev_fd);
	egress_stop(&K.eg, keeper_net_event, NULL);
	/* The box's network namespace goes with its guest: so do the
	 * connections into it. */
	keeper_port_down();
	keeper_mux_down();
	if (K.inst.pid > 0) {
		loop_del(K.loop, K.inst.chan_fd);
		loop_del(K.loop, K.inst.pidfd);
		if (K.inst.log_fd >= 0)
			loop_del(K.loop, K.inst.log_fd);
		cgroup_kill(&K.cg);
		K.be->kill(&K.inst);
	}
	layers_view_end(&K.layers);
	keeper_ws_reset();
	K.up = false;
	/* Lost: made again at the next call (a step that ended it says
	 * where the box is at its own end). */
	if (K.state == BOX_ST_RUNNING)
		keeper_state_set(BOX_ST_LOST);
	/* A machine saved whole keeps its jobs: a wake goes on with them. */
	if (!K.hib.kept)
		keeper_jobs_forget();
	K.gmask = 0;
	proto_reader_free(&K.grd);
	proto_writer_free(&K.gwr);
}

static void on_guest_exit(struct loop *l, int fd, uint32_t events, void *data)
{
	keeper_log("keeper: the box's guest exited");
	keeper_guest_down();
	keeper_guest_fail_calls("unknown",
			  "the box was lost while this call ran (its guest process ended); the call's outcome "
			  "is unknown; a new box will be created; files under /workspace are kept\n", NULL);
}

/* The guest's stderr (sanitizer reports, a failed start): copied into the
 * keeper's log up to a cap, then read and dropped, so the guest never
 * blocks on it. */
static void on_guest_log(struct loop *l, int fd, uint32_t events, void *data)
{
	char b[16384];
	ssize_t n = fdio_read_some(fd, b, sizeof(b));
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		loop_del(l, fd);
		return;
	}
	size_t room = KEEPER_GUEST_LOG_MAX - MIN(K.guest_log_bytes, KEEPER_GUEST_LOG_MAX);
	if (room && fdio_write_full(STDERR_FILENO, b, MIN((size_t)n, room)) < 0)
		room = 0;
	if (K.guest_log_bytes < KEEPER_GUEST_LOG_MAX && (size_t)n >= room)
		keeper_log("\nkeeper: the guest's stderr is over %u bytes; the rest is dropped", KEEPER_GUEST_LOG_MAX);
	K.guest_log_bytes += (size_t)n;
}

static void on_egress(struct loop *l, int fd, uint32_t events, void *data)
{
	if (egress_read(&K.eg, keeper_net_event, NULL) == -EPIPE) {
		loop_del(l, fd);
		keeper_log("keeper: the box's egress proxy exited; its connections are refused until the box is "
			   "made again");
		egress_stop(&K.eg, keeper_net_event, NULL);
	}
}

/* A started guest's hello, its egress proxy and its place in the loop. */
int keeper_guest_attach(struct err *e)
{
	int r;
	proto_reader_init(&K.grd);
	proto_writer_init(&K.gwr, KEEPER_CLIENT_QUEUE);
	K.guest_log_bytes = 0;	/* a new guest's stderr gets the whole cap */
	/* The guest says hello first. */
	fdio_set_nonblock(K.inst.chan_fd, false);
	struct frame f;
	uint8_t *payload = NULL;
	r = K.inst.hello_done ? 0 : proto_recv(K.inst.chan_fd, now_ms() + BOX_CREATE_TIMEOUT_MS, &f, &payload);
	if (r == 0 && !K.inst.hello_done)
		r = proto_hello_check(&f);
	free(payload);
	if (r < 0) {
		K.be->kill(&K.inst);
		return err_set(e, r, "the box's guest did not say hello (%s)", strerror(-r));
	}
	uint8_t hello[8];
	proto_hello_payload(hello);
	proto_send(K.inst.chan_fd, PROTO_HELLO, 0, 0, hello, sizeof(hello));
	fdio_set_nonblock(K.inst.chan_fd, true);
	r = keeper_mux_up(e);
	if (r < 0) {
		K.be->kill(&K.inst);
		return r;
	}
	if (K.o->net == BOX_NET_ALLOW) {
		r = egress_start(&K.eg, K.name, K.o, &K.inst, e);
		if (r < 0) {
			keeper_mux_down();
			K.be->kill(&K.inst);
			return r;
		}
		/* The proxy is the box's helper (the process a box might take
		 * over): in the box's groups, or the box's ceilings are not
		 * the groups' alone. */
		struct cgroup_held ph;
		cgroup_attach(&K.cg, K.eg.pid);
		cgroup_held_by(&K.cg, K.eg.pid, &ph);
		K.inst.held.memory &= ph.memory;
		K.inst.held.pids &= ph.pids;
		loop_add(K.loop, K.eg.ev_fd, EPOLLIN, on_egress, NULL);
	}
	loop_add(K.loop, K.inst.chan_fd, EPOLLIN, on_guest, NULL);
	K.gmask = EPOLLIN;
	loop_add(K.loop, K.inst.pidfd, EPOLLIN, on_guest_exit, NULL);
	if (K.inst.log_fd >= 0)
		loop_add(K.loop, K.inst.log_fd, EPOLLIN, on_guest_log, NULL);
	K.up = true;
	/* A step that brings the guest up (a wake) says when it is done; an
	 * ns pool box is POOLED until its claim. */
	if (!box_state_busy(K.state) && !K.inst.pooled)
		keeper_state_set(BOX_ST_RUNNING);
	return 0;
}

void keeper_spec(struct box_spec *ret)
{
	*ret = (struct box_spec){ .opts = K.o, .name = K.name, .root_dir = K.root, .upper_dir = K.upper, .work_dir = K.work,
				  .root_layer = K.root_layer ? K.layers.root : NULL, .cg = &K.cg,
				  .image_root = K.o->image ? K.img.root : NULL, .image = K.o->image ? &K.img : NULL,
				  .disk_path = K.disk, .env = K.eg.env, .nenv = K.eg.nenv,
				  .ca_bundle = K.eg.ca_bundle, .ws_view = K.layers.view[0] ? K.layers.view : NULL,
				  .root_fuse = K.root_layer && K.layers.fuse && K.layers.root_image ? &K.layers : NULL };
}

int keeper_guest_up(struct err *e)
{
	/* On fuse2fs, the workspace's copy-on-write is fuse-overlayfs, this
	 * keeper's child (outside the box's PID namespace), which the box
	 * binds. */
	char view[PATH_MAX + 8];
	snprintf(view, sizeof(view), "%s.ws", K.root);
	int r = K.layers.fuse && K.upper[0] && !K.layers.view[0] ? layers_view(&K.layers, K.o->workspace, view, e) : 0;
	if (r < 0)
		return r;
	struct box_spec spec;
	keeper_spec(&spec);
	r = K.be->start(&spec, &K.inst, e);
	if (r < 0) {
		layers_view_end(&K.layers);
		return r;
	}
	/* A pool VM's guest waits for START: a claim attaches it (the backend's
	 * go). A backend with no go (ns) makes its pool box whole now. */
	if (K.inst.pooled && K.be->go)
		return 0;
	return keeper_guest_attach(e);
}

void keeper_guest_cgroup_create(void)
{
	struct limits hl = K.o->lim;
	if (K.be->host_limits)
		K.be->host_limits(&K.o->lim, &hl);
	cgroup_create(K.cgname, &hl, &K.cg, NULL);
}

int keeper_layers_own(struct err *e)
{
	/* The overlay's upper and work directories are written by the box's
	 * root (a uid of the box's range where it has one; the backend gives
	 * the upper to the tool user). What is in them is the box's already. */
	if (!K.root_layer || !K.upper[0])
		return 0;
	const char *d[] = { K.upper, K.work };
	for (size_t i = 0; i < ARRAY_SIZE(d); i++) {
		struct stat st;
		if (lstat(d[i], &st) < 0 || !S_ISDIR(st.st_mode))
			return err_setc(e, -ENOTDIR, "the workspace layer %s is not a directory", d[i]);
		if (st.st_uid < K.root_uid && lchown(d[i], K.root_uid, K.root_uid) < 0)
			return err_setc(e, -errno, "cannot give the workspace layer %s to the box's root", d[i]);
	}
	return 0;
}

int keeper_layers_take(struct err *e)
{
	if (!K.layered || K.layers.lock_fd >= 0)
		return 0;
	int r = layers_open(K.name, K.o->lim.disk, &K.layers, e);
	if (r >= 0 && K.root_layer && K.o->disk_given)
		layers_root_on_image(&K.layers);
	if (r >= 0 && K.root_layer && (r = layers_root_make(&K.layers, false, K.root_uid, K.root_uid, e)) < 0)
		layers_release(&K.layers);
	if (r >= 0 && (r = keeper_layers_own(e)) < 0)
		layers_release(&K.layers);
	return r;
}

int keeper_guest_restart(struct err *e)
{
	keeper_guest_down();
	cgroup_remove(&K.cg);
	int r = keeper_layers_take(e);
	if (r < 0)
		return r;
	keeper_guest_cgroup_create();
	K.restarts++;
	return keeper_guest_up(e);
}

/* The guest's own events: a background job started or ended. Every
 * client is told; the keeper keeps which run (keeper-jobs.c: its idle
 * policy, what a hibernate ends). */
static void keeper_guest_event(const struct frame *f)
{
	cJSON *j = cJSON_ParseWithLength((const char *)f->payload, f->len);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
	if (cJSON_IsString(type) && !strcmp(type->valuestring, "job")) {
		keeper_jobs_event(j);
		keeper_broadcast(j);
	}
	cJSON_Delete(j);
}

static void on_guest(struct loop *l, int fd, uint32_t events, void *data)
{
	if (events & EPOLLOUT)
		guest_flush();
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	int r = proto_reader_fill(&K.grd, fd);
	if (r == -EAGAIN)
		return;
	if (r <= 0) {
		on_guest_exit(l, fd, events, data);
		return;
	}
	struct frame f;
	while ((r = proto_reader_next(&K.grd, &f)) == 0) {
		K.last_activity = now_ms();
		if (keeper_ws_frame(&f))
			continue;
		struct kcall *k = f.id ? kcall_by_gid(f.id) : NULL;
		switch (f.type) {
		case PROTO_EVENT:
			if (!f.id) {
				keeper_guest_event(&f);
				break;
			}
			/* fall through */
		case PROTO_OUTPUT:
		case PROTO_ERROR:
		case PROTO_PONG:
			if (k && k->own)
				k->own->frame(k, &f);
			else if (k)
				kclient_send(k->cl, f.type, f.flags, k->cid, f.payload, f.len);
			break;
		case PROTO_EVIDENCE:
			if (k) {
				cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
				if (j) {
					keeper_augment_evidence(j);
					kclient_send_json(k->cl, PROTO_EVIDENCE, k->cid, j);
					cJSON_Delete(j);
				}
				/* Evidence-only requests have their own map entry. */
				if (k->evidence)
					kcall_remove(k);
			}
			break;
		case PROTO_RESULT:
			if (k && k->own) {
				/* The keeper's own: its next part is the loop's
				 * (keeper_step_advance), not made from here. */
				cJSON *j = cJSON_ParseWithLength((const char *)f.payload, f.len);
				k->own->result(k, j);
				cJSON_Delete(j);
				kcall_remove(k);
			} else if (k) {
				/* What the proxy said up to now counts for this call. */
				egress_read(&K.eg, keeper_net_event, NULL);
				/* A block workspace's changes reach the host's
				 * upper before the client hears the call ended. */
				if (keeper_ws_active() && !k->evidence && keeper_ws_hold(k, &f) == 0)
					break;
				keeper_guest_result(k, &f);
				kcall_remove(k);
			}
			break;
		default:
			break;
		}
	}
	if (r != -EAGAIN) {
		keeper_log("keeper: protocol error from the guest; destroying the box");
		on_guest_exit(l, fd, events, data);
	}
}

