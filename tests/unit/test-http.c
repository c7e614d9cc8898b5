/* The HTTP client against a scripted server on loopback (real sockets, real
 * bytes): streaming, status and the retry headers, the idle limit, a cut
 * mid-body, a refused connect, the size cap, a stop from a callback, and an
 * abort. Each limit's test asserts the time it took. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "http/http.h"
#include "tap.h"

struct step {
	const char *bytes;	/* NULL ends the script */
	int delay_ms;		/* before these bytes */
};

struct server {
	int lfd;
	int port;
	const struct step *script;
	char request[8192];
	bool saw_close;		/* the client closed before the script ended */
	pthread_t th;
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void *serve(void *p)
{
	struct server *s = p;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	size_t got = 0;
	while (got < sizeof(s->request) - 1) {
		ssize_t n = read(fd, s->request + got, sizeof(s->request) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		s->request[got] = 0;
		char *end = strstr(s->request, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(s->request, "content-length:");
		size_t want = cl ? (size_t)atol(cl + 15) : 0;
		if (got >= (size_t)(end + 4 - s->request) + want)
			break;
	}
	for (const struct step *st = s->script; st->bytes; st++) {
		if (st->delay_ms)
			sleep_ms(st->delay_ms);
		if (write(fd, st->bytes, strlen(st->bytes)) < 0) {
			s->saw_close = true;
			break;
		}
	}
	/* Wait for the client to close (or a moment) before closing. */
	struct timeval tv = { 0, 300000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char b[256];
	if (read(fd, b, sizeof(b)) == 0)
		s->saw_close = true;
	close(fd);
	return NULL;
}

static void server_start(struct server *s, const struct step *script)
{
	*s = (struct server){ .script = script };
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	bind(s->lfd, (struct sockaddr *)&a, sizeof(a));
	listen(s->lfd, 4);
	getsockname(s->lfd, (struct sockaddr *)&a, &al);
	s->port = ntohs(a.sin_port);
	pthread_create(&s->th, NULL, serve, s);
}

static void server_stop(struct server *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
}

struct got {
	bool head, done;
	struct http_result head_res, res;
	struct buf body;
	int stop_after;		/* on_data returns -1 after this many bytes; 0 never */
};

static int on_head(void *ud, const struct http_result *h)
{
	struct got *g = ud;
	g->head = true;
	g->head_res = *h;
	return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
	struct got *g = ud;
	buf_append(&g->body, p, n);
	return g->stop_after && g->body.len >= (size_t)g->stop_after ? -1 : 0;
}

static void on_done(void *ud, const struct http_result *r)
{
	struct got *g = ud;
	g->done = true;
	g->res = *r;
}

static const struct http_cbs cbs = { .on_head = on_head, .on_data = on_data, .on_done = on_done };

/* Runs one request to the script; returns elapsed ms. */
static int64_t fetch(const struct step *script, const struct http_opts *o, struct got *g, int port_override)
{
	struct loop *l;
	loop_new(&l);
	struct http *h;
	http_new(&h, l);
	struct server s;
	if (script)
		server_start(&s, script);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/messages", script ? s.port : port_override);
	buf_init(&g->body, 1 << 20);
	const char *hdrs[] = { "content-type: application/json", "x-api-key: sk-test-secret", NULL };
	int64_t t0 = now_ms();
	http_start(h, url, hdrs, "{\"a\":1}", 7, o, &cbs, g, NULL);
	while (!g->done && now_ms() - t0 < 10000) {
		loop_run_once(l, http_deadline(h));
		http_tick(h);
	}
	int64_t ms = now_ms() - t0;
	http_free(h);
	loop_free(l);
	if (script)
		server_stop(&s);
	return ms;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	struct got g;
	struct http_opts o = { .idle_ms = 300 };

	static const struct step sse[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nrequest-id: req_123\r\n"
		  "transfer-encoding: chunked\r\n\r\n", 0 },
		{ "11\r\nevent: a\ndata: 1\n\r\n", 20 },
		{ "9\r\n\ndata: 2\n\r\n", 20 },
		{ "1\r\n\n\r\n0\r\n\r\n", 20 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(sse, &o, &g, 0);
	ok(g.done && g.res.fail == HTTP_OK, "a chunked stream in pieces: ok (%s)", http_fail_name(g.res.fail));
	is_int(g.head_res.status, 200, "status before the body");
	is_str(g.head_res.content_type, "text/event-stream", "content type before the body");
	is_str(g.res.request_id, "req_123", "request id kept");
	is_str(g.body.data, "event: a\ndata: 1\n\ndata: 2\n\n", "the body, whole and in order");
	buf_free(&g.body);

	static const struct step r429[] = {
		{ "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 2\r\n"
		  "x-should-retry: true\r\ncontent-length: 11\r\n\r\n{\"e\":\"rl\"}\n", 0 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(r429, &o, &g, 0);
	is_int(g.res.status, 429, "429 is a whole response");
	is_int(g.res.retry_after_ms, 2000, "retry-after in seconds");
	is_int(g.res.should_retry, 1, "x-should-retry: true");
	is_str(g.body.data, "{\"e\":\"rl\"}\n", "and its error body");
	buf_free(&g.body);

	static const struct step r529[] = {
		{ "HTTP/1.1 529 Overloaded\r\nretry-after-ms: 1500\r\nretry-after: 9\r\nx-should-retry: false\r\n"
		  "content-length: 0\r\n\r\n", 0 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(r529, &o, &g, 0);
	is_int(g.res.status, 529, "529");
	is_int(g.res.retry_after_ms, 1500, "retry-after-ms wins over retry-after");
	is_int(g.res.should_retry, 0, "x-should-retry: false");
	ok(g.head, "an empty body still reports its head");
	buf_free(&g.body);

	static const struct step stall[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\ndata: 1\n\n", 0 },
		{ "data: never\n\n", 2500 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	int64_t ms = fetch(stall, &o, &g, 0);
	is_str(http_fail_name(g.res.fail), "idle", "a stalled stream ends at the idle limit");
	ok(ms >= 280 && ms < 1000, "after 300 ms of silence (%lld ms)", (long long)ms);
	is_str(g.body.data, "data: 1\n\n", "what came before the stall was delivered");
	buf_free(&g.body);

	static const struct step twin[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 21\r\n\r\ndata: 1\n\n", 0 },
		{ "data: slow\n\n", 200 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(twin, &o, &g, 0);
	is_str(http_fail_name(g.res.fail), "ok", "positive twin: a pause under the idle limit is fine");
	buf_free(&g.body);

	static const struct step cut[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100\r\n\r\ndata: par", 0 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(cut, &(struct http_opts){ .idle_ms = 5000 }, &g, 0);
	is_str(http_fail_name(g.res.fail), "network", "a connection cut mid-body is a network failure, not done");
	buf_free(&g.body);

	/* A port nobody listens on. */
	int probe = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	bind(probe, (struct sockaddr *)&a, sizeof(a));
	getsockname(probe, (struct sockaddr *)&a, &al);
	close(probe);
	g = (struct got){ 0 };
	ms = fetch(NULL, &o, &g, ntohs(a.sin_port));
	is_str(http_fail_name(g.res.fail), "connect", "a refused connection");
	ok(ms < 1000, "reported at once (%lld ms)", (long long)ms);
	buf_free(&g.body);

	static const struct step big[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-length: 3000\r\n\r\n", 0 },
		{ "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
		  "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789", 0 },
		{ NULL, 0 },
	};
	g = (struct got){ 0 };
	fetch(big, &(struct http_opts){ .idle_ms = 500, .max_body = 150 }, &g, 0);
	is_str(http_fail_name(g.res.fail), "too big", "a response past the size cap is cut");
	ok(g.body.len <= 150, "nothing past the cap is delivered (%zu bytes)", g.body.len);
	buf_free(&g.body);

	g = (struct got){ .stop_after = 5 };
	fetch(sse, &o, &g, 0);
	is_str(http_fail_name(g.res.fail), "stopped", "a callback that says stop ends the transfer");
	buf_free(&g.body);

	/* Abort: on_done is never called, and the server sees the close. */
	static const struct step slow[] = {
		{ "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\ndata: 1\n\n", 0 },
		{ "data: 2\n\n", 1500 },
		{ NULL, 0 },
	};
	struct loop *l;
	loop_new(&l);
	struct http *h;
	http_new(&h, l);
	struct server s;
	server_start(&s, slow);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
	g = (struct got){ 0 };
	buf_init(&g.body, 4096);
	struct http_req *req;
	http_start(h, url, NULL, NULL, 0, &(struct http_opts){ .idle_ms = 5000 }, &cbs, &g, &req);
	int64_t t0 = now_ms();
	while (g.body.len == 0 && now_ms() - t0 < 3000) {
		loop_run_once(l, http_deadline(h));
		http_tick(h);
	}
	http_abort(req);
	t0 = now_ms();
	while (now_ms() - t0 < 300) {
		loop_run_once(l, now_ms() + 50);
		http_tick(h);
	}
	ok(!g.done, "an aborted request's on_done is not called");
	http_free(h);
	loop_free(l);
	server_stop(&s);
	ok(s.saw_close, "the server saw the connection closed");
	buf_free(&g.body);
	return tap_done();
}
