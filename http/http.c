#include "http/http.h"
#include "http/relay.h"
#include "config.h"	/* WARD_VERSION */
#include "base/cleanup.h"
#include "base/curlso.h"
#include "base/loop.h"
#include "base/timeutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_CONNECT_MS_DEFAULT 10000
#define HTTP_MAX_BODY_DEFAULT (64u << 20)

struct http_req {
	struct http *h;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	struct http_opts o;
	struct http_cbs cbs;
	void *ud;
	struct http_result res;
	bool head_sent, stopped;
	int dial_err;		/* <0: the proxy could not be dialed (why in res.msg) */
	char status_line[360];	/* the last one seen: a proxy's refusal of a CONNECT */
	enum http_fail why_stopped;
	int64_t start_ms, last_byte_ms;
	struct http_req *next;
};

struct http {
	struct loop *loop;
	CURLM *multi;
	int64_t curl_deadline;	/* from curl's timer callback; -1 none */
	struct http_req *reqs;
	struct relay *relay;	/* to a proxy the caller dials */
};

const char *http_fail_name(enum http_fail f)
{
	static const char *const names[] = {
		[HTTP_OK] = "ok", [HTTP_CONNECT] = "connect", [HTTP_IDLE] = "idle",
		[HTTP_TIMEOUT] = "timeout", [HTTP_TOO_BIG] = "too big", [HTTP_STOPPED] = "stopped",
		[HTTP_NET] = "network",
	};
	return (unsigned)f < ARRAY_SIZE(names) ? names[f] : "?";
}

static void http_check_done(struct http *h);

static void http_on_fd(struct loop *l, int fd, uint32_t events, void *data)
{
	struct http *h = data;
	int mask = 0;
	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	int running;
	curl_multi_socket_action(h->multi, fd, mask, &running);
	http_check_done(h);
}

/* curl tells which sockets to watch for what. */
static int http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct http *h = userp;
	uint32_t ev = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= EPOLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= EPOLLOUT;
	if (what == CURL_POLL_REMOVE) {
		if (socketp) {
			loop_del(h->loop, s);
			curl_multi_assign(h->multi, s, NULL);
		}
		return 0;
	}
	if (socketp) {
		loop_mod(h->loop, s, ev);
	} else if (loop_add(h->loop, s, ev, http_on_fd, h) == 0) {
		curl_multi_assign(h->multi, s, h);
	}
	return 0;
}

static int http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct http *h = userp;
	h->curl_deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	return 0;
}

int http_new(struct http **ret, struct loop *l)
{
	int lr = curlso_load();
	if (lr < 0)
		return lr;
	struct http *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->loop = l;
	h->curl_deadline = -1;
	h->multi = curl_multi_init();
	if (!h->multi || relay_new(&h->relay, l) < 0) {
		if (h->multi)
			curl_multi_cleanup(h->multi);
		free(h);
		return -ENOMEM;
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, http_timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	*ret = h;
	return 0;
}

static void http_req_free(struct http_req *r)
{
	struct http *h = r->h;
	for (struct http_req **p = &h->reqs; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	curl_multi_remove_handle(h->multi, r->easy);
	curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	free(r->body);
	free(r);
}

void http_free(struct http *h)
{
	if (!h)
		return;
	while (h->reqs)
		http_req_free(h->reqs);
	/* (curl closes its cached sockets here, through http_close_cb.) */
	curl_multi_cleanup(h->multi);
	relay_free(h->relay);
	free(h);
}

static void http_send_head(struct http_req *r)
{
	if (r->head_sent)
		return;
	r->head_sent = true;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->res.status);
	char *ct = NULL;
	if (curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(r->res.content_type, sizeof(r->res.content_type), "%s", ct);
	if (r->cbs.on_head && r->cbs.on_head(r->ud, &r->res) < 0) {
		r->stopped = true;
		r->why_stopped = HTTP_STOPPED;
	}
}

static size_t http_write_cb(char *p, size_t size, size_t n, void *ud)
{
	struct http_req *r = ud;
	size_t len = size * n;
	r->last_byte_ms = now_ms();
	if (r->stopped)
		return 0;
	http_send_head(r);
	if (r->stopped)
		return 0;
	if (r->res.body_bytes + len > r->o.max_body) {
		r->stopped = true;
		r->why_stopped = HTTP_TOO_BIG;
		return 0;
	}
	r->res.body_bytes += len;
	if (r->cbs.on_data && r->cbs.on_data(r->ud, p, len) < 0) {
		r->stopped = true;
		r->why_stopped = HTTP_STOPPED;
		return 0;
	}
	return len;
}

/* The headers ward acts on; a new header block (after a 1xx or a
 * retried auth) starts them afresh. */
static size_t http_header_cb(char *p, size_t size, size_t n, void *ud)
{
	struct http_req *r = ud;
	size_t len = size * n;
	r->last_byte_ms = now_ms();
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		r->res.retry_after_ms = -1;
		r->res.should_retry = -1;
		r->res.request_id[0] = 0;
		/* "HTTP/1.1 403 Forbidden by ward: ...": the code and the reason. */
		size_t k = len;
		while (k && (p[k - 1] == '\r' || p[k - 1] == '\n'))
			k--;
		snprintf(r->status_line, sizeof(r->status_line), "%.*s", (int)k, p);
		const char *sp = memchr(p, ' ', k);
		const char *rs = sp ? memchr(sp + 1, ' ', k - (size_t)(sp + 1 - p)) : NULL;
		snprintf(r->res.reason, sizeof(r->res.reason), "%.*s", rs ? (int)(k - (size_t)(rs + 1 - p)) : 0,
			 rs ? rs + 1 : "");
		return len;
	}
	const char *colon = memchr(p, ':', len);
	if (!colon)
		return len;
	size_t nlen = (size_t)(colon - p);
	const char *v = colon + 1, *end = p + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	if (r->cbs.on_header)
		r->cbs.on_header(r->ud, p, nlen, v, (size_t)(end - v));
	char val[128];
	snprintf(val, sizeof(val), "%.*s", (int)(end - v), v);
#define IS(name) (nlen == strlen(name) && !strncasecmp(p, name, nlen))
	if (IS("retry-after-ms")) {
		char *e;
		double ms = strtod(val, &e);
		if (e != val && ms >= 0)
			r->res.retry_after_ms = (int64_t)ms;
	} else if (IS("retry-after") && r->res.retry_after_ms < 0) {
		/* Seconds, or an HTTP date. */
		char *e;
		double s = strtod(val, &e);
		if (e != val && s >= 0) {
			r->res.retry_after_ms = (int64_t)(s * 1000);
		} else {
			time_t t = curl_getdate(val, NULL);
			if (t > 0) {
				time_t now = time(NULL);
				r->res.retry_after_ms = t > now ? (int64_t)(t - now) * 1000 : 0;
			}
		}
	} else if (IS("x-should-retry")) {
		r->res.should_retry = !strcasecmp(val, "true") ? 1 : !strcasecmp(val, "false") ? 0 : -1;
	} else if (IS("request-id") || IS("x-request-id")) {
		snprintf(r->res.request_id, sizeof(r->res.request_id), "%s", val);
	}
#undef IS
	return len;
}

/* curl's socket for a request through a dialed proxy: the proxy is
 * dialed first (a refusal is the request's), then the relay gives the
 * socket it will know the connection by. */
static curl_socket_t http_open_cb(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct http_req *r = ud;
	struct http *h = r->h;
	/* Only the relay: a socket for anywhere else is refused. */
	const struct sockaddr_in *to = (const struct sockaddr_in *)&addr->addr;
	if (addr->family != AF_INET || to->sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
	    ntohs(to->sin_port) != relay_port(h->relay)) {
		r->dial_err = -EHOSTUNREACH;
		snprintf(r->res.msg, sizeof(r->res.msg), "a connection around the proxy was refused");
		return CURL_SOCKET_BAD;
	}
	int far = r->o.dial(r->o.dial_ud, r->res.msg, sizeof(r->res.msg));
	if (far < 0) {
		r->dial_err = far;
		return CURL_SOCKET_BAD;
	}
	int fd = relay_expect(h->relay, far, r->res.msg, sizeof(r->res.msg));
	if (fd < 0) {
		r->dial_err = fd;
		return CURL_SOCKET_BAD;
	}
	r->dial_err = 0;
	r->res.msg[0] = 0;
	return fd;
}

/* A socket curl is done with. */
static int http_close_cb(void *ud, curl_socket_t fd)
{
	struct http *h = ud;
	relay_forget(h->relay, fd);
	return close(fd);
}

int http_start(struct http *h, const char *url, const char *const *headers, const char *body, size_t len,
	       const struct http_opts *o, const struct http_cbs *cbs, void *ud, struct http_req **ret)
{
	struct http_req *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->h = h;
	r->o = o ? *o : (struct http_opts){ 0 };
	if (!r->o.connect_ms)
		r->o.connect_ms = HTTP_CONNECT_MS_DEFAULT;
	if (!r->o.max_body)
		r->o.max_body = HTTP_MAX_BODY_DEFAULT;
	r->cbs = *cbs;
	r->ud = ud;
	r->res.retry_after_ms = -1;
	r->res.should_retry = -1;
	r->easy = curl_easy_init();
	if (!r->easy) {
		free(r);
		return -ENOMEM;
	}
	for (const char *const *hd = headers; hd && *hd; hd++) {
		struct curl_slist *n = curl_slist_append(r->headers, *hd);
		if (!n) {
			curl_slist_free_all(r->headers);
			curl_easy_cleanup(r->easy);
			free(r);
			return -ENOMEM;
		}
		r->headers = n;
	}
	/* libcurl's own "Expect: 100-continue" would add a round trip. */
	r->headers = curl_slist_append(r->headers, "Expect:");
	CURL *e = r->easy;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* Who is asking, as every SDK says: a provider's logs (and a proxy's)
	 * can tell ward's requests apart. */
	curl_easy_setopt(e, CURLOPT_USERAGENT, "ward/" WARD_VERSION);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)r->o.connect_ms);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	if (r->o.method)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->o.method);
	if (r->o.dial) {
		int lr = relay_port(h->relay);
		if (lr < 0) {
			curl_slist_free_all(r->headers);
			curl_easy_cleanup(e);
			free(r);
			return lr;
		}
		char proxy[64];
		snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", lr);
		curl_easy_setopt(e, CURLOPT_PROXY, proxy);
		/* no_proxy in ward's environment may not send a request around
		 * the proxy the caller chose. */
		curl_easy_setopt(e, CURLOPT_NOPROXY, "");
		curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, http_open_cb);
		curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
		curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, http_close_cb);
		curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, h);
	}
	if (body) {
		r->body = malloc(len + 1);
		if (!r->body) {
			curl_slist_free_all(r->headers);
			curl_easy_cleanup(e);
			free(r);
			return -ENOMEM;
		}
		memcpy(r->body, body, len);
		r->body[len] = 0;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	r->start_ms = r->last_byte_ms = now_ms();
	r->next = h->reqs;
	h->reqs = r;
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		http_req_free(r);
		return -EIO;
	}
	if (ret)
		*ret = r;
	return 0;
}

void http_abort(struct http_req *r)
{
	if (r)
		http_req_free(r);
}

static long connect_code(struct http_req *r)
{
	long c = 0;
	curl_easy_getinfo(r->easy, CURLINFO_HTTP_CONNECTCODE, &c);
	return c;
}

static void http_finish(struct http_req *r, CURLcode code)
{
	if (r->stopped) {
		r->res.fail = r->why_stopped;
		if (r->why_stopped == HTTP_TOO_BIG)
			snprintf(r->res.msg, sizeof(r->res.msg), "the response passed %zu bytes", r->o.max_body);
		else if (r->why_stopped == HTTP_IDLE)
			snprintf(r->res.msg, sizeof(r->res.msg), "no data for %lld ms", (long long)r->o.idle_ms);
		else if (r->why_stopped == HTTP_TIMEOUT)
			snprintf(r->res.msg, sizeof(r->res.msg), "no whole response within %lld ms",
				 (long long)r->o.total_ms);
		else
			snprintf(r->res.msg, sizeof(r->res.msg), "stopped");
	} else if (code == CURLE_OK) {
		http_send_head(r);
		r->res.fail = HTTP_OK;
	} else if (r->dial_err < 0) {
		r->res.fail = HTTP_CONNECT;	/* (msg: the dial's why) */
	} else if (r->o.dial && !r->head_sent && connect_code(r) >= 300) {
		r->res.fail = HTTP_CONNECT;
		r->res.status = connect_code(r);
		snprintf(r->res.msg, sizeof(r->res.msg), "the proxy answered: %s", r->status_line);
	} else if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
		   code == CURLE_COULDNT_RESOLVE_PROXY ||
		   (code == CURLE_OPERATION_TIMEDOUT && !r->res.status && !r->head_sent)) {
		r->res.fail = HTTP_CONNECT;
		snprintf(r->res.msg, sizeof(r->res.msg), "%s", curl_easy_strerror(code));
	} else {
		r->res.fail = HTTP_NET;
		snprintf(r->res.msg, sizeof(r->res.msg), "%s", curl_easy_strerror(code));
	}
	if (!r->res.status)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->res.status);
	if (r->res.fail == HTTP_CONNECT)
		r->res.reason[0] = 0;	/* (a proxy's, not a response's) */
	struct http_result res = r->res;
	struct http_cbs cbs = r->cbs;
	void *ud = r->ud;
	http_req_free(r);
	if (cbs.on_done)
		cbs.on_done(ud, &res);
}

static void http_check_done(struct http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct http_req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r)
			http_finish(r, m->data.result);
	}
	/* A limit fired or a callback asked to stop: end such transfers
	 * here, one at a time (an on_done may start or abort others). */
	for (;;) {
		struct http_req *r = h->reqs;
		while (r && !r->stopped)
			r = r->next;
		if (!r)
			break;
		http_finish(r, CURLE_WRITE_ERROR);
	}
}

int64_t http_deadline(struct http *h)
{
	int64_t d = h->curl_deadline;
	for (struct http_req *r = h->reqs; r; r = r->next) {
		if (r->o.idle_ms > 0 && (d < 0 || r->last_byte_ms + r->o.idle_ms < d))
			d = r->last_byte_ms + r->o.idle_ms;
		if (r->o.total_ms > 0 && (d < 0 || r->start_ms + r->o.total_ms < d))
			d = r->start_ms + r->o.total_ms;
	}
	return d;
}

void http_tick(struct http *h)
{
	int64_t now = now_ms();
	if (h->curl_deadline >= 0 && now >= h->curl_deadline) {
		h->curl_deadline = -1;
		int running;
		curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
	for (struct http_req *r = h->reqs; r; r = r->next) {
		if (r->stopped)
			continue;
		/* No byte (headers included) for idle_ms since the request
		 * began or since the last one. */
		if (r->o.idle_ms > 0 && now >= r->last_byte_ms + r->o.idle_ms) {
			r->stopped = true;
			r->why_stopped = HTTP_IDLE;
		} else if (r->o.total_ms > 0 && now >= r->start_ms + r->o.total_ms) {
			r->stopped = true;
			r->why_stopped = HTTP_TIMEOUT;
		}
	}
	http_check_done(h);
}
