/* The streamable HTTP transport (MCP 2025-06-18): each message ward sends
 * is a POST; a request's answer comes back as application/json or as an
 * event stream that may carry the server's own messages first; a GET
 * stream carries what the server says unasked. The session id the server
 * gives at initialize goes on every later request, with the protocol
 * version. Every connection goes through the dial the owner gives (the
 * box's egress proxy), so the box's allow-list and budget apply.
 *
 * curl's callbacks only collect: complete messages and ends of requests
 * are queued and handed to the owner by mhub_drain, outside curl, where
 * the owner may send, reset and free as it likes. */
#include "mcp/mcp.h"
#include "mcp/mhttp.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "http/http.h"
#include "http/sse.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What of an error response's body a message quotes. */
#define MHTTP_ERR_BODY 2048
/* A GET stream that ends is opened again after this, doubling to the max;
 * one that fails this many times in a row without an event is given up. */
#define MHTTP_REOPEN_MS 1000
#define MHTTP_REOPEN_MAX_MS 30000
#define MHTTP_REOPEN_TRIES 5
/* A response stream may carry many messages: its total is bounded by this,
 * each message by MCP_LINE_MAX. */
#define MHTTP_STREAM_MAX (1ULL << 30)
#define MHTTP_SESSION_MAX 256
/* Messages read and not yet handled, over all servers: past this, the
 * stream that brings more is stopped (a server flooding ward). */
#define MHTTP_QUEUE_MAX (64u << 20)
/* A notification's or an answer's POST, and a GET stream with nothing
 * for this long (the proxy ends an idle one at 120 s), end. */
#define MHTTP_POST_MS 30000
#define MHTTP_GET_IDLE_MS 150000
/* A GET stream that lived this long was not a failure, events or not. */
#define MHTTP_GET_LIVED_MS 1000
/* Connecting through the box's proxy: past its own 10 s connect limit, so
 * that its answer (504) is what is told. */
#define MHTTP_CONNECT_MS 15000

enum hkind { H_POST, H_GET, H_DELETE };

struct hreq {
	struct mhttp *h;
	struct http_req *req;	/* NULL once done */
	enum hkind kind;
	int64_t rpc;		/* the request it carries (POST), or 0 */
	bool with_session;	/* it carried a session id */
	bool sse, json, over;	/* the response's kind; a message passed MCP_LINE_MAX */
	bool cut;		/* an error's body: enough of it was read */
	bool flood;		/* stopped: too much queued */
	unsigned gen;		/* the server's session it belongs to */
	int64_t start_ms;
	struct sse parse;
	struct buf body;	/* application/json, or an error's first bytes */
	struct qitem *done;	/* its end's queue item, made with it (no allocation at the end) */
	void (*then)(void *ud);	/* called at its end (a notification that must come first) */
	bool got_event;
	struct hreq *next;
};

enum qkind { Q_MSG, Q_DONE };

struct qitem {
	enum qkind kind;
	struct hreq *q;
	char *text;		/* Q_MSG */
	size_t n;
	struct http_result *res;	/* Q_DONE */
	struct qitem *next;
};

struct mhub {
	struct loop *loop;
	struct http *http;
	struct qitem *head, **tail;
	size_t queued;		/* bytes of the messages queued */
	struct mhttp *all;
};

struct mhttp {
	struct mhub *hub;
	char *url;
	char **headers;		/* the server's own, NULL-terminated */
	const struct mhttp_cbs *cbs;
	void *ud;
	char session[MHTTP_SESSION_MAX + 1];
	char proto[32];
	struct hreq *reqs;
	/* The GET stream: not tried, open, waiting to reopen, or not offered. */
	enum { G_NONE, G_OPEN, G_WAIT, G_OFF } get;
	int64_t get_at;
	int get_fails;
	int64_t get_backoff;
	char last_event_id[256];
	unsigned gen;		/* the session's: each reset starts a new one */
	struct mhttp *next;
};

/* ---- the hub: one loop and one client for all of a run's servers ---- */

int mhub_new(struct mhub **ret, struct err *e)
{
	struct mhub *b = calloc(1, sizeof(*b));
	if (!b)
		return err_set(e, -ENOMEM, "out of memory");
	b->tail = &b->head;
	int r = loop_new(&b->loop);
	if (r < 0) {
		free(b);
		return err_setc(e, r, "cannot make the MCP client's loop");
	}
	r = http_new(&b->http, b->loop);
	if (r < 0) {
		loop_free(b->loop);
		free(b);
		return err_setc(e, r, r == -ENOENT ? "libcurl (libcurl4) could not be loaded" : "cannot start the HTTP client");
	}
	*ret = b;
	return 0;
}

static void q_free(struct mhub *b, struct qitem *i)
{
	b->queued -= i->n;
	free(i->text);
	free(i->res);
	free(i);
}

static void q_push(struct mhub *b, struct qitem *i)
{
	i->next = NULL;
	*b->tail = i;
	b->tail = &i->next;
}

/* Items of q (or of every request of h) leave the queue. */
static void q_purge(struct mhub *b, const struct hreq *q, const struct mhttp *h)
{
	b->tail = &b->head;
	for (struct qitem **p = &b->head; *p;) {
		struct qitem *i = *p;
		if (i->q == q || (h && i->q->h == h)) {
			*p = i->next;
			q_free(b, i);
			continue;
		}
		p = &i->next;
		b->tail = &i->next;
	}
}

static void hreq_free(struct hreq *q)
{
	struct mhttp *h = q->h;
	for (struct hreq **p = &h->reqs; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	q_purge(h->hub, q, NULL);
	http_abort(q->req);	/* (not from curl's callbacks: see the top) */
	sse_free(&q->parse);
	buf_free(&q->body);
	if (q->done) {
		free(q->done->res);
		free(q->done);
	}
	free(q);
}

void mhub_free(struct mhub *b)
{
	if (!b)
		return;
	while (b->all)
		mhttp_free(b->all);
	for (struct qitem *i = b->head, *n; i; i = n) {
		n = i->next;
		q_free(b, i);
	}
	http_free(b->http);
	loop_free(b->loop);
	free(b);
}

int mhub_fd(const struct mhub *b)
{
	return b ? loop_fd(b->loop) : -1;
}

static void get_open(struct mhttp *h);

void mhub_drain(struct mhub *b)
{
	while (b && b->head) {
		struct qitem *i = b->head;
		b->head = i->next;
		if (!b->head)
			b->tail = &b->head;
		struct hreq *q = i->q;
		struct mhttp *h = q->h;
		if (i->kind == Q_MSG) {
			h->cbs->message(h->ud, i->text, i->n);
			q_free(b, i);
			continue;
		}
		/* The end of a request: what it means, then the request goes. */
		struct http_result res = *i->res;
		q_free(b, i);
		enum hkind kind = q->kind;
		int64_t rpc = q->rpc;
		void (*then)(void *) = q->then;
		bool sess = q->with_session, sse = q->sse, got = q->got_event, over = q->over, flood = q->flood;
		bool current = q->gen == h->gen;
		bool lived = now_ms() - q->start_ms >= MHTTP_GET_LIVED_MS;
		if (q->cut && res.fail == HTTP_STOPPED)
			res.fail = HTTP_OK;	/* (an error's body, read far enough) */
		bool answer = kind == H_POST && q->json && res.fail == HTTP_OK && !over && q->body.len;
		/* The request goes before the owner hears of it: a callback may
		 * reset the server, which ends its requests. */
		struct buf body = q->body;
		q->body = (struct buf){ 0 };
		hreq_free(q);
		char why[600] = "";
		if (answer)
			h->cbs->message(h->ud, body.data, body.len);
		_cleanup_free_ char *text = !answer && body.len ? utf8_dup(body.data, body.len) : NULL;
		buf_free(&body);
		if (res.fail != HTTP_OK) {
			if (flood)
				snprintf(why, sizeof(why), "it sent more than %u MiB faster than ward could read it",
					 MHTTP_QUEUE_MAX >> 20);
			else if (over)
				snprintf(why, sizeof(why), "it sent a message over %u MiB, which ward does not read",
					 MCP_LINE_MAX >> 20);
			else
				snprintf(why, sizeof(why), "%s %s: %s",
					 res.fail == HTTP_CONNECT ? "could not reach" : "the connection to", h->url,
					 res.msg);
		} else if (res.status == 404 && sess && kind == H_POST && current) {
			h->session[0] = 0;
			h->cbs->expired(h->ud);
			continue;
		} else if (res.status >= 300) {
			/* An error with a JSON-RPC body (400 with its error) is the
			 * answer; otherwise the status says. */
			if (text && text[0] == '{' && rpc)
				h->cbs->message(h->ud, text, strlen(text));
			/* The reason phrase, or the body's first line where none. */
			const char *more = !res.reason[0] && text ? text : "";
			snprintf(why, sizeof(why), "%s answered HTTP %ld%s%.300s%s%.*s", h->url, res.status,
				 res.reason[0] || more[0] ? " " : "", res.reason, more[0] ? "" : "",
				 (int)strcspn(more, "\r\n") > 200 ? 200 : (int)strcspn(more, "\r\n"), more);
		} else if (rpc) {
			snprintf(why, sizeof(why), "%s ended its answer%s without a JSON-RPC response", h->url,
				 sse ? " stream" : "");
		}
		if (kind == H_GET) {
			if (!current || h->get != G_OPEN)
				continue;	/* a stream of a session since reset */
			if (res.fail == HTTP_OK && (res.status == 405 || res.status == 404)) {
				h->get = G_OFF;	/* the server offers no stream: fine */
				continue;
			}
			/* Open again, later; a stream that keeps failing (an error, or
			 * an end at once) is given up. A quiet one the proxy ended
			 * after a while is no failure. */
			bool ok = res.status >= 200 && res.status < 300 && (got || lived);
			h->get_fails = ok ? 0 : h->get_fails + 1;
			if (h->get_fails >= MHTTP_REOPEN_TRIES) {
				h->get = G_OFF;
				char line[700];
				snprintf(line, sizeof(line), "its event stream (GET) is given up: %s",
					 why[0] ? why : "it kept ending");
				h->cbs->note(h->ud, line);
				continue;
			}
			h->get_backoff = ok || !h->get_backoff ? MHTTP_REOPEN_MS : h->get_backoff * 2;
			if (h->get_backoff > MHTTP_REOPEN_MAX_MS)
				h->get_backoff = MHTTP_REOPEN_MAX_MS;
			h->get = G_WAIT;
			h->get_at = now_ms() + h->get_backoff;
			continue;
		}
		if (rpc && why[0] && current)
			h->cbs->failed(h->ud, rpc, why);
		if (then && current)
			then(h->ud);
	}
}

void mhub_close(struct mhub *b, int64_t until)
{
	for (;;) {
		bool busy = false;
		for (const struct mhttp *h = b ? b->all : NULL; h; h = h->next)
			busy |= h->reqs != NULL;
		int64_t left = until - now_ms();
		if (!busy || left <= 0)
			return;
		int64_t d = mhub_deadline(b), w = d < 0 ? left : d - now_ms();
		struct pollfd pf = { .fd = loop_fd(b->loop), .events = POLLIN };
		poll(&pf, 1, w < 0 ? 0 : w > left ? (int)left : (int)w);
		mhub_io(b);
		mhub_tick(b);
	}
}

void mhub_io(struct mhub *b)
{
	if (!b)
		return;
	loop_run_once(b->loop, 0);
	mhub_drain(b);
}

int64_t mhub_deadline(const struct mhub *b)
{
	if (!b)
		return -1;
	if (b->head)
		return 0;
	int64_t d = http_deadline(b->http);
	for (const struct mhttp *h = b->all; h; h = h->next)
		if (h->get == G_WAIT && (d < 0 || h->get_at < d))
			d = h->get_at;
	return d;
}

void mhub_tick(struct mhub *b)
{
	if (!b)
		return;
	http_tick(b->http);
	int64_t now = now_ms();
	for (struct mhttp *h = b->all; h; h = h->next)
		if (h->get == G_WAIT && now >= h->get_at)
			get_open(h);
	mhub_drain(b);
}

/* ---- curl's side: collect only ---- */

static int on_event(void *ud, const struct sse_event *ev)
{
	struct hreq *q = ud;
	q->got_event = true;
	if (ev->id[0] && q->kind == H_GET)	/* (a POST's stream is its own) */
		snprintf(q->h->last_event_id, sizeof(q->h->last_event_id), "%s", ev->id);
	/* "message" events carry JSON-RPC; an empty data is a keep-alive. */
	if ((ev->type_len != 7 || memcmp(ev->type, "message", 7)) || !ev->data_len)
		return 0;
	struct qitem *i = calloc(1, sizeof(*i));
	char *t = malloc(ev->data_len + 1);
	if (!i || !t) {
		free(i);
		free(t);
		return -ENOMEM;
	}
	memcpy(t, ev->data, ev->data_len);
	t[ev->data_len] = 0;
	struct mhub *b = q->h->hub;
	if (b->queued + ev->data_len > MHTTP_QUEUE_MAX) {
		free(i);
		free(t);
		q->flood = true;
		return -1;
	}
	*i = (struct qitem){ .kind = Q_MSG, .q = q, .text = t, .n = ev->data_len };
	b->queued += i->n;
	q_push(b, i);
	return 0;
}

static void on_header(void *ud, const char *name, size_t nlen, const char *v, size_t vlen)
{
	struct hreq *q = ud;
	if (nlen != 14 || strncasecmp(name, "mcp-session-id", 14) || q->kind != H_POST)
		return;
	/* Visible ASCII only (the specification's), and not too long. */
	if (!vlen || vlen > MHTTP_SESSION_MAX)
		return;
	for (size_t i = 0; i < vlen; i++)
		if (v[i] < 0x21 || v[i] > 0x7e)
			return;
	memcpy(q->h->session, v, vlen);
	q->h->session[vlen] = 0;
}

static int on_head(void *ud, const struct http_result *head)
{
	struct hreq *q = ud;
	const char *ct = head->content_type;
	if (head->status >= 200 && head->status < 300) {
		q->sse = !strncasecmp(ct, "text/event-stream", 17);
		q->json = !q->sse && !strncasecmp(ct, "application/json", 16);
	}
	return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
	struct hreq *q = ud;
	if (q->sse) {
		int r = sse_feed(&q->parse, p, n);
		if (r == -EMSGSIZE)
			q->over = true;
		return r < 0 ? -1 : 0;
	}
	if (q->json) {
		if (buf_append(&q->body, p, n) < 0) {
			q->over = true;
			return -1;
		}
		return 0;
	}
	/* An error's body: its first bytes, for the message; no more is read. */
	size_t room = MHTTP_ERR_BODY - q->body.len;
	buf_append(&q->body, p, n < room ? n : room);
	if (n >= room) {
		q->cut = true;
		return -1;
	}
	return 0;
}

static void on_done(void *ud, const struct http_result *r)
{
	struct hreq *q = ud;
	q->req = NULL;	/* (freed by the client) */
	if (q->sse && r->fail == HTTP_OK)
		sse_finish(&q->parse);
	struct qitem *i = q->done;
	q->done = NULL;
	*i->res = *r;
	q_push(q->h->hub, i);
}

static const struct http_cbs cbs = { .on_head = on_head, .on_header = on_header, .on_data = on_data, .on_done = on_done };

/* ---- one server ---- */

int mhttp_new(struct mhub *b, const char *url, char *const *headers, const struct mhttp_cbs *c, void *ud,
	      struct mhttp **ret)
{
	struct mhttp *h = calloc(1, sizeof(*h));
	if (!h || !(h->url = strdup(url))) {
		free(h);
		return -ENOMEM;
	}
	h->hub = b;
	h->headers = (char **)headers;
	h->cbs = c;
	h->ud = ud;
	h->next = b->all;
	b->all = h;
	*ret = h;
	return 0;
}

static int h_start(struct mhttp *h, enum hkind kind, const char *body, size_t n, int64_t rpc, void (*then)(void *))
{
	struct hreq *q = calloc(1, sizeof(*q));
	struct qitem *done = calloc(1, sizeof(*done));
	struct http_result *res = calloc(1, sizeof(*res));
	if (!q || !done || !res) {
		free(q);
		free(done);
		free(res);
		return -ENOMEM;
	}
	*done = (struct qitem){ .kind = Q_DONE, .q = q, .res = res };
	q->done = done;
	q->h = h;
	q->kind = kind;
	q->rpc = rpc;
	q->gen = h->gen;
	q->then = then;
	q->start_ms = now_ms();
	sse_init(&q->parse, MCP_LINE_MAX, on_event, q);
	buf_init(&q->body, MCP_LINE_MAX);
	/* Ours first, then the server's own (its Authorization). */
	const char *hd[64 + 8];
	char sess[MHTTP_SESSION_MAX + 32], proto[64], last[300];
	size_t k = 0;
	if (kind == H_POST) {
		hd[k++] = "Content-Type: application/json";
		hd[k++] = "Accept: application/json, text/event-stream";
	} else if (kind == H_GET) {
		hd[k++] = "Accept: text/event-stream";
		if (h->last_event_id[0]) {
			snprintf(last, sizeof(last), "Last-Event-ID: %s", h->last_event_id);
			hd[k++] = last;
		}
	}
	if (h->session[0]) {
		snprintf(sess, sizeof(sess), "Mcp-Session-Id: %s", h->session);
		hd[k++] = sess;
		q->with_session = true;
	}
	if (h->proto[0]) {
		snprintf(proto, sizeof(proto), "MCP-Protocol-Version: %s", h->proto);
		hd[k++] = proto;
	}
	for (char *const *p = h->headers; p && *p && k < ARRAY_SIZE(hd) - 1; p++)
		hd[k++] = *p;
	hd[k] = NULL;
	const struct http_opts o = {
		.max_body = MHTTP_STREAM_MAX,
		.connect_ms = MHTTP_CONNECT_MS,
		.dial = h->cbs->dial, .dial_ud = h->ud,
		/* A request's answer is bounded by its caller's clock; a
		 * notification's or an answer's POST, a DELETE (a courtesy) and
		 * a quiet GET stream by these. */
		.total_ms = kind == H_DELETE ? 2000 : kind == H_POST && !rpc ? MHTTP_POST_MS : 0,
		.idle_ms = kind == H_GET ? MHTTP_GET_IDLE_MS : 0,
		.method = kind == H_DELETE ? "DELETE" : NULL,
	};
	q->next = h->reqs;
	h->reqs = q;
	int r = http_start(h->hub->http, h->url, hd, body, n, &o, &cbs, q, &q->req);
	if (r < 0) {
		hreq_free(q);
		return r;
	}
	return 0;
}

int mhttp_post(struct mhttp *h, const char *json, size_t n, int64_t rpc, void (*then)(void *ud))
{
	return h_start(h, H_POST, json, n, rpc, then);
}

static void get_open(struct mhttp *h)
{
	h->get = G_OPEN;
	if (h_start(h, H_GET, NULL, 0, 0, NULL) < 0)
		h->get = G_OFF;
}

void mhttp_ready(struct mhttp *h, const char *proto)
{
	snprintf(h->proto, sizeof(h->proto), "%s", proto);
	/* The stream is opened at the next tick: after the initialized
	 * notification the caller sends now. */
	if (h->get == G_NONE) {
		h->get = G_WAIT;
		h->get_at = now_ms();
	}
}

void mhttp_drop(struct mhttp *h, int64_t rpc)
{
	for (struct hreq *q = h->reqs; q; q = q->next)
		if (q->kind == H_POST && q->rpc == rpc) {
			hreq_free(q);
			return;
		}
}

void mhttp_reset(struct mhttp *h)
{
	/* The server is told the session is over (a DELETE that may go
	 * unanswered); everything else of it ends now. */
	for (struct hreq *q = h->reqs, *n; q; q = n) {
		n = q->next;
		if (q->kind != H_DELETE)
			hreq_free(q);
	}
	if (h->session[0])
		h_start(h, H_DELETE, NULL, 0, 0, NULL);
	h->session[0] = h->proto[0] = 0;
	h->last_event_id[0] = 0;
	h->gen++;
	h->get = G_NONE;
	h->get_fails = 0;
	h->get_backoff = 0;
}

void mhttp_free(struct mhttp *h)
{
	if (!h)
		return;
	while (h->reqs)
		hreq_free(h->reqs);
	for (struct mhttp **p = &h->hub->all; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	free(h->url);
	free(h);
}
