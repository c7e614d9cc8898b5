/* ward's connection to a box's keeper: calls, cancels and their input (the
 * requests answered once, info to destroy, are box-request.c's). One
 * call path: a call is started, the connection is driven from an event
 * loop, and the blocking box_call is that loop. Writes go through a bounded
 * queue on a non-blocking socket, so a stopped keeper never blocks ward;
 * each call's deadline on this side comes from its budget. */
#include "sandbox/box.h"
#include "sandbox/box-conn-int.h"
#include "sandbox/box-state.h"
#include "sandbox/box-int.h"
#include "sandbox/egress.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/timeutil.h"
#include "tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>



/* The box's grace from the keeper's hello: {"grace_ms":N} after the
 * magic and the version. */
static int64_t box_hello_grace(const struct frame *f)
{
	if (f->len <= 8)
		return BUDGET_GRACE_MS;
	cJSON *j = cJSON_ParseWithLength((const char *)f->payload + 8, f->len - 8);
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "grace_ms");
	int64_t v = cJSON_IsNumber(g) && g->valuedouble >= 0 && g->valuedouble < 3600e3 ? (int64_t)g->valuedouble
										     : BUDGET_GRACE_MS;
	cJSON_Delete(j);
	return v;
}

/* A keeper whose loop is busy with a step of the box's (hibernating,
 * waking, moving its state to the store) answers once it is done: the
 * state it wrote says so. */
static bool box_keeper_busy(const char *boxdir)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/state", boxdir);
	_cleanup_free_ char *st = NULL;
	if (fdio_read_file(AT_FDCWD, p, 64, &st, NULL) < 0)
		return false;
	return box_state_name_busy(st);
}

static int box_connect_as(const char *name, bool wait_busy, struct box_conn **ret, struct err *e)
{
	if (!state_name_valid(name))
		return err_set(e, -EINVAL, "invalid box name \"%s\"", name);
	_cleanup_free_ struct box_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(e, -ENOMEM, "out of memory");
	int r = state_box_dir(name, c->boxdir, sizeof(c->boxdir), e);
	if (r < 0)
		return r;
	snprintf(c->name, sizeof(c->name), "%s", name);
	char sock[PATH_MAX + 8];
	snprintf(sock, sizeof(sock), "%s/" BOX_SOCK, c->boxdir);
	c->fd = fdio_unix_connect(sock, false);
	if (c->fd == -ENAMETOOLONG)
		return err_set(e, -ENAMETOOLONG, "box socket path too long");
	if (c->fd < 0)
		return err_set(e, -ENOENT, "no box named %s (see `ward box ls`)", name);
	/* Only a quick connect reads the state first; a waiting one, only
	 * when the hello is late. */
	if (!wait_busy && box_keeper_busy(c->boxdir)) {
		close(c->fd);
		return err_set(e, -EBUSY, "box %s is busy (hibernating, waking or moving to the store); try again when "
			       "it is done", name);
	}
	/* The keeper's hello, within the bound: a stopped keeper still
	 * accepts connections (the kernel's backlog) but never speaks. A busy
	 * one speaks when its step is done: waited for while the state it
	 * wrote says busy (each step has its own bound). */
	fdio_set_nonblock(c->fd, true);
	proto_reader_init(&c->rd);
	proto_writer_init(&c->wr, BOX_CONN_QUEUE);
	int64_t t0 = now_ms(), until = t0 + BOX_CONNECT_TIMEOUT_MS;
	struct frame f;
	while ((r = proto_reader_next(&c->rd, &f)) == -EAGAIN) {
		int64_t now = now_ms();
		if (now >= until && wait_busy && now - t0 < BOX_HIBERNATE_TIMEOUT_MS && box_keeper_busy(c->boxdir))
			until = now + BOX_CONNECT_TIMEOUT_MS;
		if (now >= until) {
			r = -ETIMEDOUT;
			break;
		}
		struct pollfd pf = { .fd = c->fd, .events = POLLIN };
		if (poll(&pf, 1, (int)MIN(until - now, 500)) <= 0)
			continue;
		int k = proto_reader_fill(&c->rd, c->fd);
		if (k == 0 || (k < 0 && k != -EAGAIN)) {
			r = k == 0 ? -ECONNRESET : k;
			break;
		}
	}
	if (r == 0)
		r = proto_hello_check(&f);
	if (r == 0)
		c->grace_ms = box_hello_grace(&f);
	if (r < 0) {
		close(c->fd);
		proto_reader_free(&c->rd);
		proto_writer_free(&c->wr);
		if (r == -ETIMEDOUT)
			return err_set(e, r, "box %s did not answer (no hello within %lld ms: is its keeper stopped?)", name,
				       (long long)(now_ms() - t0));
		return err_set(e, r, "box %s did not answer (%s)", name, strerror(-r));
	}
	uint8_t hello[8];
	proto_hello_payload(hello);
	proto_queue(&c->wr, PROTO_HELLO, 0, 0, hello, sizeof(hello));
	proto_flush(&c->wr, c->fd);
	*ret = TAKE_PTR(c);
	return 0;
}

int64_t box_conn_grace(const struct box_conn *c)
{
	return c->grace_ms;
}

int box_connect(const char *name, struct box_conn **ret, struct err *e)
{
	return box_connect_as(name, true, ret, e);
}

int box_connect_quick(const char *name, struct box_conn **ret, struct err *e)
{
	return box_connect_as(name, false, ret, e);
}

int box_egress_dial(const struct box_conn *c, char *msg, size_t cap)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/" EGRESS_SOCK, c->boxdir);
	/* Never a wait: ward's loop is the caller's. */
	int fd = fdio_unix_connect(path, true);
	if (fd == -EAGAIN) {
		snprintf(msg, cap, "the egress proxy of box %s is busy (its queue is full); try again", c->name);
		return fd;
	}
	if (fd == -ENOENT) {
		snprintf(msg, cap, "the box %s has no egress proxy: it reaches hosts only with --allow-host HOST",
			 c->name);
		return -ENETUNREACH;
	}
	if (fd < 0)
		snprintf(msg, cap, "cannot reach the egress proxy of box %s: %s", c->name, strerror(-fd));
	return fd;
}

void box_disconnect(struct box_conn *c)
{
	if (!c)
		return;
	while (c->pending) {
		struct box_pending *p = c->pending;
		c->pending = p->next;
		free(p);
	}
	close(c->fd);
	proto_reader_free(&c->rd);
	proto_writer_free(&c->wr);
	cJSON_Delete(c->reply);
	free(c);
}

int box_conn_fd(const struct box_conn *c)
{
	return c->fd;
}

uint32_t box_conn_events(const struct box_conn *c)
{
	return EPOLLIN | (proto_pending(&c->wr) ? EPOLLOUT : 0);
}

void box_conn_flush(struct box_conn *c)
{
	size_t before = proto_queued(&c->wr);
	int r = proto_flush(&c->wr, c->fd);
	if (proto_queued(&c->wr) < before || before == 0)
		c->wr_progress_ms = now_ms();
	if (r < 0 && r != -EAGAIN)
		c->dead = true;
}

static int box_queue_flags(struct box_conn *c, uint8_t type, uint8_t flags, uint32_t id, const void *p, size_t n)
{
	bool was_empty = !proto_pending(&c->wr);
	int r = proto_queue(&c->wr, type, flags, id, p, n);
	if (r < 0)
		return r;
	if (was_empty)
		c->wr_progress_ms = now_ms();
	box_conn_flush(c);
	return 0;
}

int box_conn_queue(struct box_conn *c, uint8_t type, uint32_t id, const void *p, size_t n)
{
	return box_queue_flags(c, type, 0, id, p, n);
}

/* The keeper did not answer in time: it is broken or stopped. Kill it; the
 * box dies with it (PDEATHSIG). */
static void box_kill_keeper(struct box_conn *c)
{
	int pfd = box_keeper_pidfd(c->boxdir);
	if (pfd >= 0) {
		box_pidfd_end(pfd, SIGKILL, 0);
		close(pfd);
	}
}

/* A result ward makes up for a call the box could not answer. */
#define box_result(outcome, destroyed, ...) box_result_env(tool_result_json(outcome, __VA_ARGS__), destroyed)
static cJSON *box_result_env(cJSON *j, bool destroyed)
{
	if (destroyed) {
		cJSON_AddStringToObject(j, "environment", "the box was destroyed");
		cJSON_AddBoolToObject(j, "box_destroyed", 1);
	}
	return j;
}

static struct box_pending *box_pending_take(struct box_conn *c, uint32_t id, bool remove)
{
	for (struct box_pending **pp = &c->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct box_pending *p = *pp;
			if (remove)
				*pp = p->next;
			return p;
		}
	return NULL;
}

static void box_pending_finish(struct box_pending *p, cJSON *res)
{
	struct box_call_cbs cbs = p->cbs;
	void *ud = p->ud;
	uint32_t id = p->id;
	free(p);
	if (cbs.result)
		cbs.result(ud, id, res);
	else
		cJSON_Delete(res);
}

/* The connection is gone: every pending call's outcome is unknown. */
static void box_fail_all(struct box_conn *c, const char *why)
{
	c->dead = true;
	while (c->pending) {
		struct box_pending *p = c->pending;
		c->pending = p->next;
		box_pending_finish(p, box_result("unknown", false, "%s", why));
	}
}

int box_call_start(struct box_conn *c, const struct box_call_req *rq, const struct box_call_cbs *cbs, void *ud,
		   uint32_t *ret_id, struct err *e)
{
	if (c->dead)
		return err_set(e, -ECONNRESET, "the connection to box %s is gone", c->name);
	const struct tool *t = tool_lookup(rq->tool);
	if (rq->limit_ms < 0 || rq->limit_ms > BUDGET_LIMIT_MAX_MS)
		return err_set(e, -EINVAL, "a call's limit is at most %lld days",
			       (long long)(BUDGET_LIMIT_MAX_MS / (24LL * 3600 * 1000)));
	if (rq->input && (!t || t->inproc))
		return err_set(e, -EINVAL, "only a bash call can have a stdin");
	struct box_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return err_set(e, -ENOMEM, "out of memory");
	p->id = ++c->next_id;
	p->input = rq->input;
	/* The one place a call's time budget is made. */
	p->b = budget_make(rq->limit_ms ? rq->limit_ms : tool_limit_ms(t, rq->args), tool_idle_ms(t, rq->args),
			   rq->left_ms, c->grace_ms);
	p->start_ms = now_ms();
	p->deadline = budget_deadline(&p->b, BUDGET_CLIENT, p->start_ms, 0);
	p->cbs = *cbs;
	p->ud = ud;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "tool", rq->tool);
	cJSON_AddItemToObject(req, "args", cJSON_Duplicate(rq->args, 1));
	cJSON_AddItemToObject(req, "budget", budget_to_json(&p->b));
	cJSON_AddBoolToObject(req, "stream", rq->stream || rq->input);
	if (rq->input)
		cJSON_AddBoolToObject(req, "stdin", 1);
	char gen[64];
	snprintf(gen, sizeof(gen), "%s-%d-%u", c->name, getpid(), p->id);
	cJSON_AddStringToObject(req, "key", rq->key && *rq->key ? rq->key : gen);
	_cleanup_free_ char *s = jsonprint_text(req);
	cJSON_Delete(req);
	int r = s ? box_conn_queue(c, PROTO_CALL, p->id, s, strlen(s)) : -ENOMEM;
	if (r < 0) {
		free(p);
		if (r == -ENOBUFS || r == -EMSGSIZE)
			return err_set(e, r, "box %s is not taking frames (%s)", c->name,
				       r == -EMSGSIZE ? "the call is over the frame limit" : "its queue is full");
		return err_setc(e, r, "box %s", c->name);
	}
	p->next = c->pending;
	c->pending = p;
	if (ret_id)
		*ret_id = p->id;
	return 0;
}

int box_call_cancel(struct box_conn *c, uint32_t id)
{
	struct box_pending *p = box_pending_take(c, id, false);
	if (!p || p->cancel_ms)
		return 0;
	p->cancel_ms = now_ms();
	p->deadline = budget_deadline(&p->b, BUDGET_CLIENT, p->start_ms, p->cancel_ms);
	return box_conn_queue(c, PROTO_CANCEL, id, NULL, 0);
}

void box_call_forget(struct box_conn *c, uint32_t id)
{
	struct box_pending *p = c ? box_pending_take(c, id, false) : NULL;
	if (p) {
		p->cbs = (struct box_call_cbs){ 0 };
		p->ud = NULL;
	}
}

int box_call_input(struct box_conn *c, uint32_t id, const void *p, size_t n)
{
	struct box_pending *pc = box_pending_take(c, id, false);
	if (!pc || !pc->input || c->dead)
		return -ENOENT;
	if (pc->in_closed)
		return -EPIPE;
	if (n > BOX_INPUT_MAX)
		return -EMSGSIZE;
	/* Whole or not at all: a stdin must not lose a middle. */
	size_t frames = n ? (n + PROTO_MAX_PAYLOAD - 1) / PROTO_MAX_PAYLOAD : 0;
	if (!proto_room(&c->wr, n + frames * PROTO_HDR))
		return -ENOBUFS;
	for (size_t off = 0; off < n; off += PROTO_MAX_PAYLOAD) {
		int r = box_conn_queue(c, PROTO_INPUT, id, (const uint8_t *)p + off, MIN(n - off, (size_t)PROTO_MAX_PAYLOAD));
		if (r < 0)
			return r;
	}
	return 0;
}

int box_call_input_close(struct box_conn *c, uint32_t id)
{
	struct box_pending *p = box_pending_take(c, id, false);
	if (!p || !p->input || c->dead)
		return -ENOENT;
	if (p->in_closed)
		return 0;
	int r = box_queue_flags(c, PROTO_INPUT, PROTO_F_EOF, id, NULL, 0);
	if (r == 0)
		p->in_closed = true;
	return r;
}

void box_conn_on_event(struct box_conn *c, void (*cb)(void *ud, cJSON *ev), void *ud)
{
	c->ev_cb = cb;
	c->ev_ud = ud;
}

/* A wake, a hibernate or a move to the store holds the calls' clocks:
 * their deadlines move by its length. */
static void box_wake_clock(struct box_conn *c, const cJSON *ev)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
	const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));
	if (!t || strcmp(t, "box") || !what)
		return;
	int64_t now = now_ms();
	/* What the keeper's loop waits for: a wake, a hibernate, a move to
	 * the store; each ends with its done or failed event. */
	enum box_step step;
	enum box_step_event sev;
	if (box_step_event_parse(what, &step, &sev) < 0)
		return;
	bool start = sev == BOX_EV_START, end = !start;
	if (start && !c->busy_since) {
		c->busy_since = now;
	} else if (c->busy_since && end) {
		for (struct box_pending *p = c->pending; p; p = p->next)
			p->deadline += now - c->busy_since;
		c->wr_progress_ms += now - c->busy_since;
		c->busy_since = 0;
	}
}

static void box_frame(struct box_conn *c, const struct frame *f)
{
	if (f->type == PROTO_EVENT && f->id == 0) {
		cJSON *j = cJSON_ParseWithLength((const char *)f->payload, f->len);
		if (cJSON_IsObject(j))
			box_wake_clock(c, j);
		if (cJSON_IsObject(j) && c->ev_cb)
			c->ev_cb(c->ev_ud, j);
		else
			cJSON_Delete(j);
		return;
	}
	if (c->want_type && f->type == c->want_type && f->id == c->want_id) {
		cJSON_Delete(c->reply);
		c->reply = cJSON_ParseWithLength((const char *)f->payload, f->len);
		if (!c->reply)
			c->reply = cJSON_CreateNull();
		return;
	}
	struct box_pending *p = box_pending_take(c, f->id, false);
	if (!p)
		return;
	if (f->type == PROTO_OUTPUT && f->flags == 2 && p->cbs.output_err) {
		p->cbs.output_err(p->ud, p->id, (const char *)f->payload, f->len);
	} else if (f->type == PROTO_OUTPUT && p->cbs.output) {
		p->cbs.output(p->ud, p->id, (const char *)f->payload, f->len);
	} else if (f->type == PROTO_ERROR) {
		box_pending_take(c, f->id, true);
		box_pending_finish(p, box_result("failed", false, "the box refused the call: %.*s\n",
						 (int)MIN(f->len, 500u), f->payload));
	} else if (f->type == PROTO_RESULT) {
		box_pending_take(c, f->id, true);
		cJSON *j = cJSON_ParseWithLength((const char *)f->payload, f->len);
		box_pending_finish(p, j ? j : box_result("unknown", false, "the box sent a malformed result\n"));
	}
}

int box_conn_io(struct box_conn *c, uint32_t events)
{
	if (c->dead)
		return -ECONNRESET;
	if (events & EPOLLOUT)
		box_conn_flush(c);
	int r = 1;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		r = proto_reader_fill(&c->rd, c->fd);
		if (r == -EAGAIN)
			r = 1;
	}
	if (r <= 0 || c->dead) {
		char why[300];
		snprintf(why, sizeof(why), "the connection to box %s was lost while this call ran; its outcome is unknown\n",
			 c->name);
		box_fail_all(c, why);
		return r < 0 ? r : -ECONNRESET;
	}
	struct frame f;
	while ((r = proto_reader_next(&c->rd, &f)) == 0)
		box_frame(c, &f);
	if (r != -EAGAIN) {
		box_fail_all(c, "box protocol error; the call's outcome is unknown\n");
		return r;
	}
	return 0;
}

/* A keeper that has not taken a queued frame for a margin is stopped or
 * stuck: once a cancel waits behind it, it is given no longer (at once if
 * it was already that long silent when the cancel came). */
static int64_t box_stall_deadline(const struct box_conn *c)
{
	if (!proto_pending(&c->wr))
		return -1;
	int64_t d = -1;
	for (const struct box_pending *p = c->pending; p; p = p->next)
		if (p->cancel_ms) {
			int64_t t = MAX(c->wr_progress_ms + p->b.margin_ms, p->cancel_ms);
			if (d < 0 || t < d)
				d = t;
		}
	return d;
}

int64_t box_conn_deadline(const struct box_conn *c)
{
	if (c->busy_since)
		return c->busy_since + BOX_HIBERNATE_TIMEOUT_MS;
	int64_t d = box_stall_deadline(c);
	for (const struct box_pending *p = c->pending; p; p = p->next)
		if (d < 0 || p->deadline < d)
			d = p->deadline;
	return d;
}

void box_conn_tick(struct box_conn *c)
{
	int64_t now = now_ms(), stall = box_stall_deadline(c);
	bool stuck = stall >= 0 && now >= stall;
	for (const struct box_pending *p = c->pending; p && !stuck; p = p->next)
		stuck = now >= p->deadline;
	if (c->busy_since)
		stuck = now >= c->busy_since + BOX_HIBERNATE_TIMEOUT_MS;
	if (!stuck)
		return;
	/* The keeper is past its own deadline for a call, or not taking
	 * frames: it and the box go, and every call on it ends here. */
	box_kill_keeper(c);
	c->dead = true;
	while (c->pending) {
		struct box_pending *p = c->pending;
		c->pending = p->next;
		cJSON *res;
		if (p->cancel_ms)
			res = box_result("cancelled", true,
					 "cancelled after %.1f s; the box did not answer within the call's grace (%.1f s) "
					 "and was destroyed; a new box will be created; files under /workspace are kept\n",
					 (now - p->start_ms) / 1000.0, p->b.grace_ms / 1000.0);
		else if (now >= p->deadline)
			res = box_result("timed_out", true,
					 "timed out after %lld s; the box did not answer and was destroyed; a new box "
					 "will be created; files under /workspace are kept\n",
					 (long long)((p->b.limit_ms + 999) / 1000));
		else
			res = box_result("unknown", true,
					 "the box stopped answering and was destroyed while this call ran; its outcome "
					 "is unknown; files under /workspace are kept\n");
		box_pending_finish(p, res);
	}
}


int box_conn_drive(struct box_conn *c, bool (*done)(void *), void *ud, int64_t until, int cancel_fd,
		     uint32_t cancel_id, const struct box_also *also)
{
	bool cancelled = false;
	while (!done(ud)) {
		int64_t d = box_conn_deadline(c);
		if (until >= 0 && (d < 0 || until < d))
			d = until;
		int64_t left = d < 0 ? -1 : MAX(d - now_ms(), 0);
		struct pollfd pf[3] = { { .fd = c->fd, .events = (short)(POLLIN | (proto_pending(&c->wr) ? POLLOUT : 0)) },
					{ .fd = cancel_fd >= 0 && !cancelled ? cancel_fd : -1, .events = POLLIN },
					{ .fd = also ? also->fd : -1, .events = POLLIN } };
		int pr = poll(pf, 3, left < 0 ? -1 : (int)MIN(left, 1000));
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0 && (pf[1].revents & POLLIN)) {
			cancelled = true;
			box_call_cancel(c, cancel_id);
		}
		if (pr > 0 && pf[0].revents) {
			uint32_t ev = (pf[0].revents & POLLOUT ? EPOLLOUT : 0) |
				      (pf[0].revents & (POLLIN | POLLHUP | POLLERR) ? EPOLLIN : 0);
			if (box_conn_io(c, ev) < 0 && !done(ud))
				return -ECONNRESET;
		}
		if (pr > 0 && pf[2].revents)
			also->on(also->ud);
		box_conn_tick(c);
		if (until >= 0 && now_ms() >= until && !done(ud))
			return -ETIMEDOUT;
	}
	return 0;
}

int box_conn_wait(struct box_conn *c, bool (*done)(void *ud), void *ud, int64_t until)
{
	return box_conn_drive(c, done, ud, until, -1, 0, NULL);
}

int box_conn_wait_fd(struct box_conn *c, bool (*done)(void *ud), void *ud, int64_t until, int fd,
		     void (*on_fd)(void *ud), void *fd_ud)
{
	const struct box_also also = { .fd = fd, .on = on_fd, .ud = fd_ud };
	return box_conn_drive(c, done, ud, until, -1, 0, fd >= 0 ? &also : NULL);
}

struct box_sync {
	box_output_cb *cb;
	void *ud;
	cJSON *res;
};

static void box_sync_output(void *ud, uint32_t id, const char *p, size_t n)
{
	struct box_sync *s = ud;
	if (s->cb)
		s->cb(p, n, s->ud);
}

static void box_sync_result(void *ud, uint32_t id, cJSON *res)
{
	((struct box_sync *)ud)->res = res;
}

static bool box_sync_done(void *ud)
{
	return ((struct box_sync *)ud)->res != NULL;
}

int box_call(struct box_conn *c, const struct box_call_req *rq, box_output_cb *cb, void *ud, int cancel_fd,
	     cJSON **ret_result, struct err *e)
{
	struct box_sync s = { .cb = cb, .ud = ud };
	const struct box_call_cbs cbs = { .output = box_sync_output, .result = box_sync_result };
	uint32_t id;
	int r = box_call_start(c, rq, &cbs, &s, &id, e);
	if (r < 0)
		return r;
	r = box_conn_drive(c, box_sync_done, &s, -1, cancel_fd, id, NULL);
	if (!s.res) {
		/* The loop itself failed (poll): the call's fate is not known here. */
		box_pending_take(c, id, true);
		return err_setc(e, r, "box %s", c->name);
	}
	*ret_result = s.res;
	return 0;
}
