/* The keeper: one detached process per box. It builds the box, serves
 * clients on a unix socket, enforces every call's limit again from outside
 * the box (destroying a box whose guest does not answer in time), and the
 * box's TTL, idle timeout and owner. It outlives a ward that is SIGKILLed;
 * the box dies with the keeper (PR_SET_PDEATHSIG on the guest). */
#include "sandbox/backend.h"
#include "sandbox/box-int.h"
#include "sandbox/box.h"
#include "sandbox/egress.h"
#include "sandbox/keeper-int.h"
#include "workspace/layers.h"
#include "workspace/layersfuse.h"
#include "base/memtrim.h"
#include "base/state.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A stdin call's output is never dropped: past this much queued for the
 * client of one, the keeper stops reading the guest, whose own queue then
 * fills and which then pauses that call's pipes. The price: while that
 * client reads slowly, every call's frames wait (its own calls are what it
 * waits for; another client's calls still end at their deadlines). Past
 * this much queued for the guest, no client is read: INPUT waits in the
 * clients' queues rather than being dropped here. */
#define KEEPER_PACE (4u << 20)
/* A client with more than this queued and unread is not listened to: its
 * requests wait in its socket (and what was read of them, in its reader)
 * until it reads, so asking without reading the answers makes no work. */
#define KEEPER_BACKLOG (1u << 20)
/* How long a destroyed box's keeper goes on giving its clients what they
 * were sent (the last frames, "destroyed") before it removes the box: a
 * client that stopped reading (SIGSTOP, a full socket) is left behind
 * after this, never waited for. */
#define KEEPER_DRAIN_MS 1000
/* How long a box-wide evidence request waits for the guest's answer. */
#define KEEPER_EVIDENCE_MS 5000

struct keeper K;

void keeper_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* What the loop watches on the guest's channel and on each client: their
 * reads paused as KEEPER_PACE says, their writes while frames wait. */
void keeper_pace(void)
{
	bool read_guest = true;
	for (struct kcall *k = K.calls; k; k = k->next)
		if (k->input && k->cl && proto_queued(&k->cl->wr) > KEEPER_PACE)
			read_guest = false;
	if (K.up) {
		uint32_t m = (read_guest ? EPOLLIN : 0) | (proto_pending(&K.gwr) ? EPOLLOUT : 0);
		if (m != K.gmask) {
			loop_mod(K.loop, K.inst.chan_fd, m);
			K.gmask = m;
		}
	}
	/* While a step runs (a hibernate, a wake) requests wait: a step's
	 * end listens again. */
	bool read_clients = proto_queued(&K.gwr) <= KEEPER_PACE && !box_state_busy(K.state);
	for (struct kclient *c = K.clients; c; c = c->next) {
		bool read = read_clients && proto_queued(&c->wr) <= KEEPER_BACKLOG;
		/* A whole request read but held back while the backlog was full
		 * is taken at the next EPOLLOUT (on_client), which a writable
		 * socket gives at once: however the backlog drained. */
		struct frame f;
		size_t used;
		bool held = read && c->rd.in.len > c->rd.off &&
			    proto_decode((const uint8_t *)c->rd.in.data + c->rd.off, c->rd.in.len - c->rd.off, &f,
					 &used) == 0;
		uint32_t m = (read ? EPOLLIN : 0) | (proto_pending(&c->wr) || held ? EPOLLOUT : 0);
		if (m != c->mask) {
			loop_mod(K.loop, c->fd, m);
			c->mask = m;
		}
	}
}

static void kclient_flush(struct kclient *c)
{
	proto_flush(&c->wr, c->fd);
	keeper_pace();
}

void kclient_send(struct kclient *c, uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n)
{
	if (!c)
		return;
	if (proto_queue(&c->wr, type, flags, id, p, n) < 0)
		return;	/* a client that stopped reading loses frames, not the box */
	kclient_flush(c);
}

void kclient_send_json(struct kclient *c, uint8_t type, uint32_t id, cJSON *j)
{
	_cleanup_free_ char *s = cJSON_PrintUnformatted(j);
	if (s)
		kclient_send(c, type, 0, id, s, strlen(s));
}

void kclient_reply(struct kclient *c, uint32_t id, cJSON *j, int r, const struct err *e)
{
	if (r < 0) {
		cJSON_AddStringToObject(j, "error", e->msg);
		cJSON_AddNumberToObject(j, "code", r);
	} else {
		cJSON_AddBoolToObject(j, "ok", 1);
	}
	kclient_send_json(c, PROTO_INFO, id, j);
	cJSON_Delete(j);
}

/* The keeper's hello: it tells the client the box's cancel grace, which
 * goes into every call's budget. */
static void kclient_hello(struct kclient *c)
{
	uint8_t hello[64];
	proto_hello_payload(hello);
	int n = snprintf((char *)hello + 8, sizeof(hello) - 8, "{\"grace_ms\":%lld}", (long long)K.o->grace_ms);
	c->hello = true;
	kclient_send(c, PROTO_HELLO, 0, 0, hello, 8 + (size_t)n);
}

/* Tell every client the box is destroyed and give each what it was sent,
 * until `until` at the latest: the sockets stay non-blocking, and a
 * client that reads nothing holds the teardown for no longer than that. */
static void keeper_drain_clients(int64_t until)
{
	size_t n = 0;
	for (struct kclient *c = K.clients; c; c = c->next) {
		const char m[] = "{\"destroyed\":true}";
		if (!c->hello)	/* it came during a step: its requests are told */
			kclient_hello(c);
		proto_queue(&c->wr, PROTO_INFO, 0, 0, m, sizeof(m) - 1);
		n++;
	}
	_cleanup_free_ struct pollfd *p = calloc(n ? n : 1, sizeof(*p));
	if (!p)
		return;
	for (;;) {
		size_t k = 0;
		for (struct kclient *c = K.clients; c; c = c->next) {
			if (!proto_pending(&c->wr))
				continue;
			int r = proto_flush(&c->wr, c->fd);
			if (r == -EAGAIN) {
				p[k++] = (struct pollfd){ .fd = c->fd, .events = POLLOUT };
			}
		}
		int64_t left = until - now_ms();
		if (!k || left <= 0)
			return;
		if (poll(p, k, (int)left) < 0 && errno != EINTR)
			return;
	}
}

void keeper_broadcast(cJSON *ev)
{
	for (struct kclient *c = K.clients; c; c = c->next)
		if (c->hello)	/* one that waits for its hello hears nothing before it */
			kclient_send_json(c, PROTO_EVENT, 0, ev);
}


void keeper_state_set(enum box_state to)
{
	enum box_state from = K.state;
	struct err e = { 0 };
	if (box_state_move(&K.state, to, &e) < 0) {
		keeper_log("keeper: box %s: %s", K.name, e.msg);
		return;
	}
	if (from == to)
		return;
	const char *name = box_state_name(to);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/state", K.boxdir);
	fdio_write_atomic(p, name, strlen(name), 0600);
}

bool keeper_saved(void)
{
	return box_state_saved(K.state);
}

void kcall_remove(struct kcall *k)
{
	for (struct kcall **p = &K.calls; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			for (unsigned i = 0; i < k->nnet; i++)
				free(k->net_refused[i]);
			free(k->held);
			free(k);
			keeper_pace();
			return;
		}
}

static void kclient_close(struct kclient *c)
{
	if (K.freezer == c)
		keeper_fork_thaw();
	if (K.waiter.cl == c)
		K.waiter.cl = NULL;	/* the step goes on; nobody is told */
	for (struct kcall *k = K.calls, *n; k; k = n) {
		n = k->next;
		if (k->cl != c)
			continue;
		/* Nobody waits for this call any more: stop it. */
		if (K.up && !k->evidence)
			keeper_guest_send(PROTO_CANCEL, 0, k->gid, NULL, 0);
		k->cl = NULL;
	}
	loop_del(K.loop, c->fd);
	close(c->fd);
	proto_reader_free(&c->rd);
	proto_writer_free(&c->wr);
	for (struct kclient **p = &K.clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	free(c);
	keeper_pace();
}

/* A call that cannot run: its result says why. */
static void kclient_call_failed(struct kclient *c, uint32_t id, const char *why)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "outcome", "failed");
	char msg[700];
	snprintf(msg, sizeof(msg), "%s\n", why);
	cJSON_AddStringToObject(j, "text", msg);
	kclient_send_json(c, PROTO_RESULT, id, j);
	cJSON_Delete(j);
}

/* The box up again for K.waiter: a hibernated one woken (a step), a lost
 * one (its guest ended) made again; a running one is "already". The
 * answer gets {ms} or {already}. */
static void keeper_up_again(void)
{
	if (keeper_saved() || K.up || K.inst.pooled) {
		keeper_wake();
		return;
	}
	struct err e = { 0 };
	cJSON *ret = cJSON_CreateObject();
	int64_t t0 = now_ms();
	int r = keeper_guest_restart(&e);
	if (r >= 0)
		cJSON_AddNumberToObject(ret, "ms", (double)(now_ms() - t0));
	else
		err_wrap(&e, "the box could not be recreated");
	keeper_step_answer(r, ret, &e);
}

static void kclient_call(struct kclient *c, const struct frame *f);

void keeper_step_answer(int r, cJSON *ret, const struct err *e)
{
	struct kwaiter w = K.waiter;
	K.waiter = (struct kwaiter){ 0 };
	switch (w.type) {
	case PROTO_HIBERNATE:
		if (r >= 0 && w.keep && (K.ownerfd >= 0 || w.owner_gone)) {
			/* Its owner may go now: the box waits, hibernated, for a
			 * wake or its TTL. */
			if (K.ownerfd >= 0) {
				loop_del(K.loop, K.ownerfd);
				close(K.ownerfd);
				K.ownerfd = -1;
			}
			K.kept = true;
			/* Its TTL counts from now: a session's box waits a TTL
			 * for the person's next working day. */
			if (K.ttl_at)
				K.ttl_at = now_ms() + K.o->ttl_ms;
		} else if (w.owner_gone) {
			K.why = "the ward that made it exited";
			K.quit = true;
		}
		/* fall through */
	case PROTO_WAKE:
		kclient_reply(w.cl, w.id, ret, r, e);
		break;
	case PROTO_CALL:
		/* The call that woke the box runs now, or says why not. */
		cJSON_Delete(ret);
		if (r < 0)
			kclient_call_failed(w.cl, w.id, e->msg);
		else if (w.cl && !K.quit)
			kclient_call(w.cl, &(struct frame){ .type = PROTO_CALL, .id = w.id, .len = w.call_len,
							    .payload = w.call });
		free(w.call);
		break;
	default:
		/* The keeper's own idle hibernate. */
		cJSON_Delete(ret);
		if (r < 0) {
			keeper_log("keeper: idle, but could not hibernate: %s", e->msg);
			K.last_activity = now_ms();	/* tried: try again after another idle spell */
		}
		break;
	}
	if (box_state_busy(K.state))
		return;
	/* The clients that came meanwhile get their hello; the requests
	 * that waited are read (keeper_pace). */
	for (struct kclient *c = K.clients; c; c = c->next)
		if (!c->hello)
			kclient_hello(c);
	keeper_pace();
}

struct kcall *kcall_start(struct kclient *c, uint32_t cid, const struct budget *b, bool input, const void *req,
			  size_t len, const struct kcall_own *own)
{
	struct kcall *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	int64_t now = now_ms();
	*k = (struct kcall){
		.gid = ++K.next_gid ? K.next_gid : ++K.next_gid,
		.cid = cid, .cl = c, .b = *b, .start_ms = now, .input = input, .own = own,
		.deadline_ms = budget_deadline(b, BUDGET_KEEPER, now, 0),
		.next = K.calls,
	};
	K.calls = k;
	keeper_guest_send(PROTO_CALL, 0, k->gid, req, len);
	return k;
}

void kcall_cancel(struct kcall *k)
{
	if (k->evidence || k->cancel_ms)
		return;
	k->cancel_ms = now_ms();
	k->deadline_ms = budget_deadline(&k->b, BUDGET_KEEPER, k->start_ms, k->cancel_ms);
	keeper_guest_send(PROTO_CANCEL, 0, k->gid, NULL, 0);
}

/* A call to a box that is down brings it up first: a hibernated one's
 * wake is a step, and the call is made at its end. */
static void kclient_call(struct kclient *c, const struct frame *f)
{
	if (K.inst.pooled) {
		kclient_call_failed(c, f->id, "the box waits in a pool: a create takes it");
		return;
	}
	if (!K.up && keeper_saved()) {
		uint8_t *copy = malloc(f->len ? f->len : 1);
		if (!copy)
			return;
		memcpy(copy, f->payload, f->len);
		K.waiter = (struct kwaiter){ .cl = c, .type = PROTO_CALL, .id = f->id, .call = copy, .call_len = f->len };
		keeper_wake();
		return;
	}
	if (!K.up) {
		struct err e = { 0 };
		if (keeper_guest_restart(&e) < 0) {
			err_wrap(&e, "the box could not be recreated");
			kclient_call_failed(c, f->id, e.msg);
			return;
		}
	}
	cJSON *req = cJSON_ParseWithLength((const char *)f->payload, f->len);
	struct budget b;
	int r = budget_from_json(cJSON_GetObjectItemCaseSensitive(req, "budget"), &b);
	bool input = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stdin"));
	cJSON_Delete(req);
	if (r < 0) {
		const char m[] = "{\"outcome\":\"bad_input\",\"text\":\"the call has no valid time budget\\n\"}";
		kclient_send(c, PROTO_RESULT, 0, f->id, m, sizeof(m) - 1);
		return;
	}
	kcall_start(c, f->id, &b, input, f->payload, f->len, NULL);
}

static void kclient_frame(struct kclient *c, const struct frame *f)
{
	/* Work is activity; a look at the box (hello, info, ping: ward box ls)
	 * is not, so it does not put off the idle timeout. */
	if (f->type != PROTO_HELLO && f->type != PROTO_INFO && f->type != PROTO_PING)
		K.last_activity = now_ms();
	struct kcall *k;
	/* A pool box is no one's until a create takes it: what would change
	 * it for its taker (a port published, an owner) is refused. */
	if (K.inst.pooled && (f->type == PROTO_PORT || f->type == PROTO_OWN)) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "error", "the box waits in a pool: a create takes it");
		cJSON_AddNumberToObject(j, "code", -EBUSY);
		kclient_send_json(c, PROTO_INFO, f->id, j);
		cJSON_Delete(j);
		return;
	}
	switch (f->type) {
	case PROTO_HELLO:
		if (proto_hello_check(f) < 0) {
			const char m[] = "wrong protocol version";
			kclient_send(c, PROTO_ERROR, 0, 0, m, sizeof(m) - 1);
		}
		break;
	case PROTO_CALL:
		kclient_call(c, f);
		break;
	case PROTO_CANCEL:
		for (k = K.calls; k; k = k->next)
			if (k->cl == c && k->cid == f->id)
				kcall_cancel(k);
		break;
	case PROTO_INPUT:
		/* A call that has ended (or never was) drops it: a race with
		 * the call's end, not an error. */
		for (k = K.calls; k; k = k->next)
			if (k->cl == c && k->cid == f->id && k->input && K.up) {
				keeper_guest_send(PROTO_INPUT, f->flags, k->gid, f->payload, f->len);
				break;
			}
		break;
	case PROTO_EVIDENCE: {
		uint32_t gid = 0;
		for (k = K.calls; k; k = k->next)
			if (k->cl == c && k->cid == f->id)
				gid = k->gid;
		if (!K.up) {
			kclient_send(c, PROTO_EVIDENCE, 0, f->id, "{}", 2);
			break;
		}
		if (!gid) {
			/* Box-wide evidence gets a map entry of its own. */
			struct kcall *e = calloc(1, sizeof(*e));
			if (!e)
				break;
			*e = (struct kcall){ .gid = ++K.next_gid, .cid = f->id, .cl = c, .evidence = true,
					     .deadline_ms = now_ms() + KEEPER_EVIDENCE_MS, .next = K.calls };
			K.calls = e;
			gid = e->gid;
		}
		keeper_guest_send(PROTO_EVIDENCE, 0, gid, NULL, 0);
		break;
	}
	case PROTO_PING:
		kclient_send(c, PROTO_PONG, 0, f->id, f->payload, f->len);
		break;
	case PROTO_INFO:
		keeper_info(c, f->id);
		break;
	case PROTO_HIBERNATE: {
		/* {"keep":true}: its owner may go once it is hibernated. */
		cJSON *req = f->len ? cJSON_ParseWithLength((const char *)f->payload, f->len) : NULL;
		K.waiter = (struct kwaiter){ .cl = c, .type = PROTO_HIBERNATE, .id = f->id,
					     .keep = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "keep")) };
		cJSON_Delete(req);
		keeper_hibernate();
		break;
	}
	case PROTO_WAKE:
		K.waiter = (struct kwaiter){ .cl = c, .type = PROTO_WAKE, .id = f->id };
		keeper_up_again();
		break;
	case PROTO_CLAIM: {
		struct err e = { 0 };
		cJSON *j = cJSON_CreateObject();
		if (keeper_claim(f, &e) < 0) {
			cJSON_AddStringToObject(j, "error", e.msg);
			/* A pool box that could not start is of no use to anyone. */
			if (!K.up && !K.inst.pooled) {
				K.why = "a claim could not start it";
				K.quit = true;
			}
		} else {
			cJSON_AddBoolToObject(j, "ok", 1);
		}
		kclient_send_json(c, PROTO_INFO, f->id, j);
		cJSON_Delete(j);
		break;
	}
	case PROTO_PORT:
		keeper_port_request(c, f);
		break;
	case PROTO_FORK:
		keeper_fork_request(c, f);
		break;
	case PROTO_OWN: {
		struct err e = { 0 };
		cJSON *j = cJSON_CreateObject();
		int r = keeper_own(c, &e);
		if (r < 0) {
			cJSON_AddStringToObject(j, "error", e.msg);
			cJSON_AddNumberToObject(j, "code", r);
		} else
			cJSON_AddBoolToObject(j, "ok", 1);
		kclient_send_json(c, PROTO_INFO, f->id, j);
		cJSON_Delete(j);
		break;
	}
	case PROTO_DESTROY:
		if (f->len && !K.inst.pooled)
			break;	/* {"if_pooled":true} from a pool that is ending: taken meanwhile */
		K.why = "destroyed on request";
		K.quit = true;
		break;
	default: {
		char m[64];
		int n = snprintf(m, sizeof(m), "unknown request type %u", f->type);
		kclient_send(c, PROTO_ERROR, 0, f->id, m, (size_t)n);
		break;
	}
	}
}

/* Act on what was read of a client's requests while its backlog allows;
 * false when it sent something that is not a frame. */
static bool kclient_take(struct kclient *c)
{
	struct frame f;
	int r = -EAGAIN;
	while (!box_state_busy(K.state) && proto_queued(&c->wr) <= KEEPER_BACKLOG &&
	       (r = proto_reader_next(&c->rd, &f)) == 0) {
		kclient_frame(c, &f);
		if (K.quit)
			return true;
		r = -EAGAIN;
	}
	/* Stopped by a step that runs, or by the backlog: the rest waits. */
	return r == -EAGAIN || box_state_busy(K.state) || proto_queued(&c->wr) > KEEPER_BACKLOG;
}

static void on_client(struct loop *l, int fd, uint32_t events, void *data)
{
	struct kclient *c = data;
	if (events & EPOLLOUT) {
		kclient_flush(c);
		if (!kclient_take(c)) {
			kclient_close(c);
			return;
		}
		if (K.quit)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	int r = proto_reader_fill(&c->rd, fd);
	if (r == -EAGAIN)
		return;
	if (r <= 0) {
		kclient_close(c);
		return;
	}
	if (!kclient_take(c))
		kclient_close(c);
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *data)
{
	int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return;
	/* The socket lives in a 0700 directory; this is the second wall. */
	if (!fdio_peer_is(cfd, getuid())) {
		close(cfd);
		return;
	}
	struct kclient *c = calloc(1, sizeof(*c));
	if (!c) {
		close(cfd);
		return;
	}
	c->fd = cfd;
	proto_reader_init(&c->rd);
	proto_writer_init(&c->wr, KEEPER_CLIENT_QUEUE);
	c->next = K.clients;
	K.clients = c;
	loop_add(l, cfd, EPOLLIN, on_client, c);
	c->mask = EPOLLIN;
	/* A step that runs answers once it is done (keeper_step_answer),
	 * the hello too: a client waits for it while the state says busy. */
	if (box_state_busy(K.state)) {
		keeper_pace();
		return;
	}
	kclient_hello(c);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue; /* the guest is reaped in ns_kill */
		K.why = "the keeper was asked to stop";
		K.quit = true;
	}
}

void keeper_owner_exit(struct loop *l, int fd, uint32_t events, void *data)
{
	if (box_state_busy(K.state) && K.waiter.type == PROTO_HIBERNATE && K.waiter.keep) {
		/* A hibernate that lets the owner go: its end decides. */
		loop_del(K.loop, K.ownerfd);
		close(K.ownerfd);
		K.ownerfd = -1;
		K.waiter.owner_gone = true;
		return;
	}
	K.why = "the ward that made it exited";
	K.quit = true;
}

int keeper_own(const struct kclient *c, struct err *e)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return err_setc(e, -errno, "box %s: who asks to own it is not known", K.name);
	if (K.ownerfd >= 0 && cr.pid == K.owner)
		return 0;
	if (K.ownerfd >= 0)
		return err_set(e, -EBUSY, "box %s is owned by another ward (pid %d); end it first", K.name, (int)K.owner);
	if (!K.kept)
		return err_set(e, -EINVAL, "box %s is persistent: it has no owner to take over", K.name);
	if (K.waiter.type)
		return err_set(e, -EBUSY, "box %s is busy (%s); ask again when it is done", K.name,
			       box_state_name(K.state));
	/* The pid is the connected client's, which waits for this answer:
	 * it cannot have been reused. */
	int fd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (fd < 0)
		return err_setc(e, -errno, "box %s: the ward that asks to own it is gone", K.name);
	K.ownerfd = fd;
	K.owner = cr.pid;
	K.kept = false;
	loop_add(K.loop, K.ownerfd, EPOLLIN, keeper_owner_exit, NULL);
	return 0;
}

static int64_t keeper_tick(void)
{
	int64_t now = now_ms(), next = -1;
#define NEXT(t) do { if (next < 0 || (t) < next) next = (t); } while (0)
	if (K.ttl_at) {
		if (now >= K.ttl_at) {
			K.why = "its time to live ran out";
			K.quit = true;
			return 0;
		}
		NEXT(K.ttl_at);
	}
	/* A step's next part (a hibernate's, a wake's), once the call it
	 * waited for is over. */
	if (keeper_step_advance())
		return 0;
	/* A hibernated box is not idle: nothing of it runs; TTL still counts.
	 * Nor is one whose step runs. */
	if (K.o->idle_ms && !keeper_saved() && !box_state_busy(K.state)) {
		/* Busy or attached: not idle. A box that hibernates when idle
		 * needs nobody to detach: a call wakes it. */
		bool hib = K.o->on_idle == BOX_IDLE_HIBERNATE;
		/* A running job keeps a box that would hibernate awake only
		 * while someone is attached: alone, it idles out as ever. An
		 * open port connection keeps it awake. */
		bool busy = K.calls || keeper_port_busy() || (K.clients && (!hib || keeper_jobs_running()));
		int64_t idle_at = busy ? now + K.o->idle_ms : K.last_activity + K.o->idle_ms;
		if (!busy && now >= idle_at) {
			if (!hib) {
				K.why = "it was idle too long";
				K.quit = true;
				return 0;
			}
			K.waiter = (struct kwaiter){ 0 };	/* the keeper's own */
			keeper_hibernate();
			return 0;
		}
		NEXT(busy ? now + 1000 : idle_at);
	}
	if (K.state == BOX_ST_HIBERNATED && K.o->cold_after_ms) {
		int64_t cold_at = K.hib.at_ms + K.o->cold_after_ms;
		if (now >= cold_at) {
			struct err e = { 0 };
			if (keeper_cold(&e) < 0) {
				keeper_log("keeper: could not move the saved state to the store: %s", e.msg);
				K.hib.at_ms = now;	/* try again after another spell */
			}
			return 0;
		}
		NEXT(cold_at);
	}
	if (K.freezer) {
		if (now >= K.thaw_at)
			keeper_fork_thaw();
		else
			NEXT(K.thaw_at);
	}
	for (struct kcall *k = K.calls; k; k = k->next) {
		if (now >= k->deadline_ms) {
			if (k->evidence) {	/* an evidence request nobody answered */
				kcall_remove(k);
				return 0;
			}
			keeper_log("keeper: call past the host's deadline; destroying the box");
			keeper_guest_down();
			keeper_guest_fail_calls("unknown",
					  "the box was destroyed because another call did not stop in time; "
					  "this call's outcome is unknown; files under /workspace are kept\n", k);
			struct err e = { 0 };
			if (keeper_guest_restart(&e) < 0)
				keeper_log("keeper: could not recreate the box: %s", e.msg);
			return 0;
		}
		NEXT(k->deadline_ms);
	}
	return next;
#undef NEXT
}

static int keeper_listen(struct err *e)
{
	K.lfd = fdio_unix_listen(K.sock, 16, true);
	if (K.lfd < 0)
		return err_setc(e, K.lfd, "cannot listen on %s", K.sock);
	return loop_add(K.loop, K.lfd, EPOLLIN, on_accept, NULL);
}

static void keeper_ready(int fd, const char *msg)
{
	fdio_write_full(fd, msg, strlen(msg));
	close(fd);
}

void keeper_disk_unlink(void)
{
	char ws[PATH_MAX + 8];
	unlink(K.disk);
	snprintf(ws, sizeof(ws), "%s" BOX_DISK_WS_SUFFIX, K.disk);
	unlink(ws);
}

void keeper_layers_end(void)
{
	if (!K.layered)
		return;
	bool keep = K.o->keep_layers && K.upper[0];
	/* The root's changes are cleared file by file only where the layers
	 * outlive the box; else they go with the image (or directory) whole. */
	if (keep && K.root_layer && K.layers.lock_fd >= 0)
		layers_root_clear(&K.layers);
	layers_release(&K.layers);
	if (keep)
		layers_root_drop(K.name);	/* held no more (a wake that failed) */
	else
		layers_drop(K.name);
}

void keeper_main(const struct box_opts *o, const char *name, const char *boxdir, int ready_fd)
{
	K.o = o;
	K.name = name;
	K.boxdir = boxdir;
	K.lfd = K.sfd = K.ownerfd = -1;
	K.inst = (struct box_inst){ .pidfd = -1, .chan_fd = -1, .log_fd = -1, .net_fd = -1 };
	egress_init(&K.eg);
	K.created_ms = K.last_activity = now_ms();
	K.created_wall = time(NULL);
	K.be = backend_find(o->backend);
	K.state = BOX_ST_CREATING;
	struct err e = { 0 };
	/* It holds the secrets' values (for each proxy it starts): no core,
	 * no ptrace by the user's other processes. */
	if (o->nsecrets)
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	char log[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/keeper.log", boxdir);
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nfd >= 0) {
		dup2(nfd, 0);
		dup2(nfd, 1);
		dup2(lfd >= 0 ? lfd : nfd, 2);
	}
	/* Not where ward was started: a directory the keeper is in stays busy
	 * (a mount there cannot be let go) for as long as the box lives. */
	if (chdir("/") < 0)
		keeper_log("keeper: chdir /: %s", strerror(errno));
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	K.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	snprintf(K.root, sizeof(K.root), "%s/root", boxdir);
	snprintf(K.sock, sizeof(K.sock), "%s/" BOX_SOCK, boxdir);
	snprintf(K.cgname, sizeof(K.cgname), "ward-%s-%d", name, getpid());
	mkdir(K.root, 0700);
	/* The box's own disk is made for it at its first start: one a box of
	 * the same name left (its keeper killed before it could remove it) is
	 * not this box's. */
	if (state_disk_path(name, K.disk, sizeof(K.disk), &e) < 0)
		goto fail;
	keeper_disk_unlink();
	K.layers.lock_fd = -1;
	K.img.hold_fd = -1;
	/* The image, found and held: unpacked already (ward resolved and
	 * pulled it before the create), here only taken. */
	if (o->image && image_find(o->image, &K.img, &e) < 0)
		goto fail;
	K.root_layer = K.be->root_owner != NULL;
	if (K.root_layer)
		K.be->root_owner(&K.root_uid, K.root_by, sizeof(K.root_by));
	K.layered = K.root_layer || (o->workspace && !o->rw);
	/* Without root, an ns box's disk ceiling is a fuse2fs image this
	 * keeper serves in a user and mount namespace of its own, which the
	 * box's are made below (workspace/layersfuse.h): for a copy-on-write
	 * workspace, and, where the ceiling was asked for, for the root's
	 * changes too, each through fuse-overlayfs (the keeper's children).
	 * Still one thread. */
	char fwhy[200];
	bool fuse_ws = o->workspace && !o->rw && o->lim.disk, fuse_root = K.root_layer && o->disk_given && o->lim.disk;
	if ((fuse_ws || fuse_root) && geteuid() != 0 && !strcmp(K.be->name, "ns") &&
	    layers_disk_capable(fwhy, sizeof(fwhy)) && (keeper_fork_peek(&e) < 0 || layersfuse_enter(&e) < 0))
		goto fail;
	if (K.layered) {
		int imaged = keeper_fork_image(&e);
		if (imaged < 0 || layers_open(name, o->lim.disk, &K.layers, &e) < 0)
			goto fail;
		if (fuse_root)
			layers_root_on_image(&K.layers);
		/* A fresh box's root: what a keeper that died left is not its
		 * (a fork's, copied with its image, is). */
		if (K.root_layer && layers_root_make(&K.layers, !imaged, K.root_uid, K.root_uid, &e) < 0)
			goto fail;
	} else {
		snprintf(K.layers.disk_by, sizeof(K.layers.disk_by), "%s",
			 o->rw ? "not enforced: --rw writes the user's tree directly" : "no workspace layer");
	}
	if (o->workspace && !o->rw) {
		snprintf(K.upper, sizeof(K.upper), "%s", K.layers.upper);
		snprintf(K.work, sizeof(K.work), "%s", K.layers.work);
		if (keeper_layers_own(&e) < 0)
			goto fail;
	}
	if (loop_new(&K.loop) < 0 || K.sfd < 0) {
		err_set(&e, -ENOMEM, "keeper setup failed");
		goto fail;
	}
	loop_add(K.loop, K.sfd, EPOLLIN, on_signal, NULL);
	keeper_guest_cgroup_create();
	if (keeper_port_publish(&e) < 0 || keeper_fork_copy(&e) < 0)
		goto fail;
	if (o->net == BOX_NET_ALLOW && (egress_secrets(&K.eg, name, o, &e) < 0 || egress_listen(&K.eg, boxdir, &e) < 0))
		goto fail;
	if (keeper_fork_up(&e) < 0)
		goto fail;
	if (keeper_listen(&e) < 0)
		goto fail;
	if (!o->persistent && o->owner > 0) {
		K.ownerfd = (int)syscall(SYS_pidfd_open, o->owner, 0);
		K.owner = o->owner;
		if (K.ownerfd < 0) {
			err_setc(&e, -errno, "the ward that asked for the box is gone");
			goto fail;
		}
		loop_add(K.loop, K.ownerfd, EPOLLIN, keeper_owner_exit, NULL);
	}
	if (o->ttl_ms)
		K.ttl_at = K.created_ms + o->ttl_ms;
	keeper_write_files();
	if (K.inst.pooled) {
		/* What a create looks for: the kind, and whose pool. */
		char key[32], p[PATH_MAX + 16], txt[96];
		box_pool_key(o, key, sizeof(key));
		snprintf(p, sizeof(p), "%s/pool", boxdir);
		int n = snprintf(txt, sizeof(txt), "{\"key\":\"%s\",\"pool\":%d}", key, (int)o->owner);
		fdio_write_atomic(p, txt, (size_t)n, 0600);
		keeper_state_set(BOX_ST_POOLED);
	}
	keeper_ready(ready_fd, "ok\n");

	/* An idle box's keeper holds what its loop needs, not the pages its
	 * setup touched (base/memtrim.h: one thread, signals by signalfd);
	 * again whenever the box has been hibernated, from the top of the
	 * loop, the save's buffers below it. */
	memtrim_idle(NULL);
	bool trimmed = false;
	while (!K.quit) {
		int64_t next = keeper_tick();
		if (K.quit)
			break;
		if (K.state == BOX_ST_HIBERNATED && !trimmed)
			memtrim_idle(NULL);
		trimmed = K.state == BOX_ST_HIBERNATED;
		if (loop_run_once(K.loop, next) < 0)
			break;
	}
	keeper_log("keeper: destroying box %s: %s", name, K.why ? K.why : "loop error");
	/* What a background job wrote since the last call, for the session
	 * that reads the changes after the box (bounded: a box that does not
	 * answer ends all the same). */
	struct err we = { 0 };
	if (keeper_ws_sync_now(KEEPER_WS_SYNC_MS, &we) < 0)
		keeper_log("keeper: %s", we.msg);
	keeper_guest_down();
	keeper_port_free();
	keeper_jobs_free();
	keeper_guest_fail_calls("unknown", "the box was destroyed while this call ran; its outcome is unknown\n", NULL);
	keeper_step_abort(K.why ? K.why : "loop error");
	keeper_drain_clients(now_ms() + KEEPER_DRAIN_MS);
	cgroup_remove(&K.cg);
	unlink(K.sock);
	egress_free(&K.eg);
	keeper_hib_drop();
	/* A box's changes go with it (nothing reads them after); a session's
	 * workspace changes are kept until they are applied or dropped, its
	 * root's never. */
	keeper_layers_end();
	/* Its own disk (its root's changes, a vm's) goes with it too, and
	 * its workspace's image beside it. */
	keeper_disk_unlink();
	state_rm_rf(boxdir);
	_exit(0);

fail:
	keeper_ready(ready_fd, e.msg[0] ? e.msg : "keeper setup failed");
	/* A guest already up (its owner went before the box was ready) goes
	 * first: its mounts would keep the box's directory. */
	if (K.up)
		keeper_guest_down();
	keeper_port_free();
	keeper_jobs_free();
	egress_free(&K.eg);
	cgroup_remove(&K.cg);
	keeper_layers_end();
	if (K.disk[0])
		keeper_disk_unlink();
	state_rm_rf(boxdir);
	_exit(1);
}
