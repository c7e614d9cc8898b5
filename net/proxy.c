#include "net/proxy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "net/addr.h"
#include "net/proxy-int.h"


void proxy_duration(int64_t ms, char *out, size_t n)
{
	if (ms < 1000)
		snprintf(out, n, "%lld ms", (long long)ms);
	else if (ms % 1000 == 0)
		snprintf(out, n, "%lld s", (long long)(ms / 1000));
	else
		snprintf(out, n, "%.1f s", (double)ms / 1000);
}

uint64_t proxy_budget_left(const struct net_proxy *p)
{
	if (!p->cfg.max_bytes)
		return UINT64_MAX;
	return p->used >= p->cfg.max_bytes ? 0 : p->cfg.max_bytes - p->used;
}

void proxy_spend(struct net_proxy *p, uint64_t n)
{
	p->used += n;
	if (p->cfg.max_bytes && p->used >= p->cfg.max_bytes && !p->st.spent) {
		p->st.spent = true;
		p->close_all = true;
	}
}

/* The one line that records a connection; never blocks. */
static void proxy_event(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	c->logged = true;
	if (p->cfg.event_fd < 0)
		return;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		goto dropped;
	cJSON_AddStringToObject(o, "type", "net");
	cJSON_AddStringToObject(o, "host", c->have_req ? c->req.host.name : "");
	cJSON_AddNumberToObject(o, "port", c->have_req ? c->req.port : 0);
	cJSON_AddStringToObject(o, "method", c->have_req ? c->req.method : "");
	cJSON_AddBoolToObject(o, "allowed", c->allowed);
	cJSON_AddStringToObject(o, "why", c->allowed ? "" : c->why);
	if (c->connected)
		cJSON_AddStringToObject(o, "addr", c->addr_text);
	cJSON_AddNumberToObject(o, "up", (double)c->nup);
	cJSON_AddNumberToObject(o, "down", (double)c->ndown);
	cJSON_AddNumberToObject(o, "ms", (double)(now_ms() - c->t0));
	if (c->allowed && c->end)
		cJSON_AddStringToObject(o, "end", c->end);
	if (c->substituted) {
		cJSON *a = cJSON_AddArrayToObject(o, "substituted");
		for (size_t i = 0; a && i < p->cfg.nsecrets; i++)
			if (c->substituted & (1u << i))
				cJSON_AddItemToArray(a, cJSON_CreateString(p->cfg.secrets[i].name));
	}
	if (c->secret)
		cJSON_AddStringToObject(o, "secret", c->secret);
	if (c->mask && c->mask->masked)
		cJSON_AddNumberToObject(o, "masked", (double)c->mask->masked);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		goto dropped;
	size_t n = strlen(s);
	/* Up to PIPE_BUF bytes go into a pipe whole or not at all. A reader
	 * gone is an error here, not a SIGPIPE (net_proxy_free writes too). */
	if (n + 1 <= PIPE_BUF) {
		s[n] = '\n';
		sigset_t pipe_set, old;
		sigemptyset(&pipe_set);
		sigaddset(&pipe_set, SIGPIPE);
		pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
		ssize_t w = write(p->cfg.event_fd, s, n + 1);
		if (w < 0 && errno == EPIPE) {
			struct timespec zero = { 0, 0 };
			sigtimedwait(&pipe_set, NULL, &zero);
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		free(s);
		if (w == (ssize_t)n + 1)
			return;
	} else {
		free(s);
	}
dropped:
	p->st.events_dropped++;
}

void proxy_conn_close_fd(struct proxy_conn *c, int *fd)
{
	if (*fd < 0)
		return;
	loop_del(c->p->loop, *fd);
	close(*fd);
	*fd = -1;
}

void proxy_conn_end(struct proxy_conn *c, const char *end)
{
	struct net_proxy *p = c->p;
	if (c->dead)
		return;
	if (!c->end)
		c->end = end;
	if (!c->allowed && !c->why[0])
		snprintf(c->why, sizeof(c->why), "%s before its request was decided",
			 end && !strcmp(end, "stopped") ? "the proxy stopped" : "the connection ended");
	if (!c->logged)
		proxy_event(c);
	if (c->rq) {
		net_resolve_cancel(p->res, c->rq);
		c->rq = NULL;
	}
	proxy_carry_close(c);
	proxy_conn_close_fd(c, &c->ufd);
	proxy_conn_close_fd(c, &c->cfd);
	c->dead = true;
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = p->dead;
	c->prev = NULL;
	p->dead = c;
	p->nconns--;
	p->st.open = p->nconns;
}

static void proxy_conn_free(struct proxy_conn *c)
{
	buf_free(&c->in);
	buf_free(&c->out_c);
	buf_free(&c->out_u);
	free(c->scan_tail);
	if (c->mask_buf)
		explicit_bzero(c->mask_buf, PROXY_MASK_BUF);
	free(c->mask_buf);
	free(c->mask);
	if (c->have_req)
		net_reqhead_free(&c->req);
	free(c);
}

static const char *proxy_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	}
	return "Error";
}

/* A reason goes into a status line: printable ASCII only (RFC 9112 4). */
static void proxy_vwhy(char *why, size_t n, const char *fmt, va_list ap)
{
	vsnprintf(why, n, fmt, ap);
	for (char *s = why; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

static int proxy_answer(struct buf *b, int status, const char *why)
{
	return buf_printf(b,
			  "HTTP/1.1 %d %s by ward: %s\r\n"
			  "Content-Type: text/plain; charset=utf-8\r\n"
			  "Content-Length: %zu\r\n"
			  "Connection: close\r\n"
			  "\r\n"
			  "ward: %s\n",
			  status, proxy_phrase(status), why, strlen(why) + 7, why);
}

void proxy_conn_linger(struct proxy_conn *c)
{
	if (!c->logged)
		proxy_event(c);
	proxy_carry_close(c);
	proxy_conn_close_fd(c, &c->ufd);
	c->st = PROXY_LINGER;
	c->deadline = now_ms() + PROXY_LINGER_MS;
	c->drained = 0;
	proxy_conn_io(c->p->loop, c->cfd, EPOLLOUT, c);
}

void proxy_conn_refuse(struct proxy_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	proxy_vwhy(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->allowed = false;
	c->p->st.refused++;
	c->out_c.len = 0;
	c->out_c.cap = sizeof(c->why) + 512;
	if (proxy_answer(&c->out_c, status, c->why) < 0) {
		proxy_conn_end(c, NULL);
		return;
	}
	proxy_conn_linger(c);
}

void proxy_conn_reject(struct proxy_conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	proxy_vwhy(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->allowed = false;
	c->p->st.refused++;
	proxy_conn_end(c, NULL);
}

/* The answer at the connection cap, given and closed before returning: the
 * proxy never holds more than max_conns + 1 client descriptors. */
static void proxy_turn_away(struct net_proxy *p, int fd)
{
	struct proxy_conn c = { .p = p, .t0 = now_ms(), .cfd = -1, .ufd = -1 };
	snprintf(c.why, sizeof(c.why), "this box has %u connections open, its cap", p->cfg.max_conns);
	struct buf b;
	buf_init(&b, 1024);
	if (proxy_answer(&b, 503, c.why) >= 0 && send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is gone already */
	}
	buf_free(&b);
	shutdown(fd, SHUT_WR);
	/* What the client sent already is read, so the close is a FIN that
	 * lets it see the answer, not a reset that may discard it. */
	char sink[4096];
	for (int i = 0; i < 4 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
	p->st.refused++;
	proxy_event(&c);
}

static int proxy_take(struct net_proxy *p, int fd)
{
	p->st.conns++;
	/* A terminated connection, on its thread, is still one of the box's. */
	if (p->nconns + proxy_tls_open(p) >= p->cfg.max_conns) {
		proxy_turn_away(p, fd);
		return 0;
	}
	struct proxy_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	*c = (struct proxy_conn){ .p = p, .cfd = fd, .ufd = -1, .cev = EPOLLIN };
	c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
	buf_init(&c->in, NET_REQHEAD_MAX);
	buf_init(&c->out_c, 1024);
	buf_init(&c->out_u, NET_REQHEAD_MAX + 1024);
	c->t0 = c->last = now_ms();
	c->deadline = c->t0 + p->cfg.head_ms;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));	/* fails on a unix socket: fine */
	int rc = loop_add(p->loop, fd, EPOLLIN, proxy_conn_io, c);
	if (rc < 0) {
		close(fd);
		free(c);
		return rc;
	}
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->nconns++;
	p->st.open = p->nconns;
	return 0;
}

int net_proxy_add_client(struct net_proxy *p, int fd)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0 || fdio_set_nonblock(fd, true) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	return proxy_take(p, fd);
}

static void proxy_accept(struct loop *l, int lfd, uint32_t events, void *data)
{
	struct net_proxy *p = data;
	for (int i = 0; i < 16; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			proxy_take(p, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* Out of descriptors or memory: stop accepting for a moment
			 * rather than spin on a listener that stays readable. */
			loop_mod(l, lfd, 0);
			p->listen_resume = now_ms() + 100;
		}
		break;
	}
}

static void proxy_read_head(struct proxy_conn *c)
{
	char tmp[4096];
	size_t room = c->in.cap - c->in.len;
	if (!room)
		return;	/* (a full head was judged when it filled) */
	ssize_t n = recv(c->cfd, tmp, MIN(room, sizeof(tmp)), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* Gone before asking anything: nothing refused, nothing carried. */
		snprintf(c->why, sizeof(c->why), "the client closed before its request head ended");
		c->allowed = false;
		return proxy_conn_end(c, NULL);
	}
	buf_append(&c->in, tmp, (size_t)n);
	/* A head is judged again only when a line has ended (or at the first
	 * bytes, to turn away what is not HTTP at once). */
	if (c->in.len != (size_t)n && !memchr(tmp, '\n', (size_t)n) && c->in.len < c->in.cap)
		return;
	struct err e = { 0 };
	int rc = net_reqhead_parse(c->in.data, c->in.len, &c->req, &e);
	if (rc == -EAGAIN)
		return;
	if (rc < 0)
		return proxy_conn_refuse(c, 400, "%s", e.msg);
	c->have_req = true;
	buf_consume(&c->in, c->req.head_len);
	proxy_dial_decide(c);
}

void proxy_conn_io(struct loop *l, int fd, uint32_t events, void *data)
{
	struct proxy_conn *c = data;
	if (c->dead)
		return;
	switch (c->st) {
	case PROXY_HEAD:
		proxy_read_head(c);
		break;
	case PROXY_RESOLVE:
		break;
	case PROXY_CONNECT:
		if (fd == c->ufd)
			proxy_dial_connected(c);
		break;
	case PROXY_HELLO:
	case PROXY_CARRY:
		proxy_carry_io(c);
		break;
	case PROXY_LINGER: {
		if (c->out_c.len) {
			if (proxy_carry_flush(c, c->cfd, &c->out_c, NULL) < 0)
				return proxy_conn_end(c, NULL);
			if (c->out_c.len)
				break;
			shutdown(c->cfd, SHUT_WR);
		}
		char sink[4096];
		ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		c->drained += n > 0 ? (size_t)n : 0;
		if (n <= 0 || c->drained > PROXY_LINGER_MAX)
			return proxy_conn_end(c, NULL);
		break;
	}
	}
	proxy_conn_sync(c);
	/* epoll reports a hang-up or an error whatever was asked: on a
	 * descriptor nothing is waited for, the peer is gone, and nothing else
	 * would notice (a loop spinning on it, otherwise). */
	if (!c->dead && (events & (EPOLLHUP | EPOLLERR)) &&
	    ((fd == c->cfd && !c->cev) || (fd == c->ufd && !c->uev))) {
		/* What is already on its way to the other side still goes (the
		 * rest of a response in the pipe when the server has closed):
		 * the hung-up side leaves the loop, and the connection ends when
		 * that is delivered. */
		bool ufd = fd == c->ufd;
		bool pending = ufd ? c->down.inpipe || c->out_c.len : c->up.inpipe || c->out_u.len;
		if (!pending)
			return proxy_conn_end(c, "reset");
		loop_del(c->p->loop, fd);
		if (ufd)
			c->u_gone = true;
		else
			c->c_gone = true;
	}
}

void proxy_conn_sync(struct proxy_conn *c)
{
	if (c->dead)
		return;
	uint32_t cev = 0, uev = 0;
	switch (c->st) {
	case PROXY_HEAD:
		cev = EPOLLIN;
		break;
	case PROXY_RESOLVE:
		break;
	case PROXY_CONNECT:
		uev = EPOLLOUT;
		break;
	case PROXY_HELLO:
	case PROXY_CARRY:
		proxy_carry_events(c, &cev, &uev);
		break;
	case PROXY_LINGER:
		cev = c->out_c.len ? EPOLLOUT : EPOLLIN;
		break;
	}
	if (c->cfd >= 0 && !c->c_gone && cev != c->cev && loop_mod(c->p->loop, c->cfd, cev) >= 0)
		c->cev = cev;
	if (c->ufd >= 0 && !c->u_gone && uev != c->uev && loop_mod(c->p->loop, c->ufd, uev) >= 0)
		c->uev = uev;
}

static void proxy_timeout(struct proxy_conn *c, int64_t now)
{
	struct net_proxy *p = c->p;
	char d[32], ht[NET_HOST_MAX + 3] = "";
	if (c->have_req)
		net_allow_host_text(&c->req.host, ht, sizeof(ht));
	switch (c->st) {
	case PROXY_HEAD:
		proxy_duration(p->cfg.head_ms, d, sizeof(d));
		return proxy_conn_refuse(c, 408, "the request head did not come within %s", d);
	case PROXY_RESOLVE:
		proxy_duration(p->cfg.connect_ms, d, sizeof(d));
		return proxy_conn_refuse(c, 504, "resolving %s took longer than %s", ht, d);
	case PROXY_CONNECT:
		proxy_duration(p->cfg.connect_ms, d, sizeof(d));
		return proxy_conn_refuse(c, 504, "connecting to %s:%u (%s) took longer than %s", ht, c->req.port,
					 c->addr_text, d);
	case PROXY_HELLO:
		proxy_duration(p->cfg.head_ms, d, sizeof(d));
		return proxy_conn_reject(c, "no TLS ClientHello within %s of the tunnel opening", d);
	case PROXY_CARRY:
		if (proxy_carry_mask_due(c, now))
			return;
		return proxy_conn_end(c, "idle");
	case PROXY_LINGER:
		return proxy_conn_end(c, NULL);
	}
	(void)now;
}

/* After each loop turn: deadlines, the byte budget, the dead. */
static void proxy_tick(struct net_proxy *p)
{
	int64_t now = now_ms();
	for (struct proxy_conn *c = p->conns, *next; c; c = next) {
		next = c->next;
		if (p->close_all && (c->st == PROXY_HELLO || c->st == PROXY_CARRY))
			proxy_conn_end(c, "budget");
		else if (p->close_all && (c->st == PROXY_RESOLVE || c->st == PROXY_CONNECT))
			proxy_conn_refuse(c, 403, "this box's network byte budget (%llu bytes) is spent",
					  (unsigned long long)p->cfg.max_bytes);
		else if (c->deadline >= 0 && now >= c->deadline)
			proxy_timeout(c, now);
	}
	p->close_all = false;
	if (p->listen_resume >= 0 && now >= p->listen_resume) {
		p->listen_resume = -1;
		loop_mod(p->loop, p->cfg.listen_fd, EPOLLIN);
	}
	while (p->dead) {
		struct proxy_conn *c = p->dead;
		p->dead = c->next;
		proxy_conn_free(c);
	}
}

static int64_t proxy_next_deadline(const struct net_proxy *p)
{
	int64_t d = p->listen_resume;
	for (const struct proxy_conn *c = p->conns; c; c = c->next)
		if (c->deadline >= 0 && (d < 0 || c->deadline < d))
			d = c->deadline;
	return d;
}

static void proxy_wake(struct loop *l, int fd, uint32_t events, void *data)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) < 0) {
		/* a spurious wake-up */
	}
}

static void proxy_rlimit(unsigned max_conns)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)NET_FDS_PER_CONN * max_conns + NET_FD_SLACK;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > want) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int net_proxy_new(const struct net_proxy_cfg *cfg, struct net_proxy **ret, struct err *e)
{
	if (cfg->nsecrets > NET_SECRET_MAX)
		return err_set(e, -E2BIG, "more than %d secrets", NET_SECRET_MAX);
	struct net_proxy *p = calloc(1, sizeof(*p));
	if (!p)
		return err_setc(e, -ENOMEM, "proxy");
	p->cfg = *cfg;
	pthread_mutex_init(&p->tls_mu, NULL);
	for (int i = 0; i < PROXY_TLS_MAX; i++)
		p->tls_fd[i][0] = p->tls_fd[i][1] = -1;
	p->wake = -1;
	p->listen_resume = -1;
	if (!p->cfg.max_conns)
		p->cfg.max_conns = NET_DEFAULT_MAX_CONNS;
	/* A box started again (a restart) goes on with its budget as spent. */
	p->used = cfg->used_before;
	if (p->cfg.max_bytes && p->used >= p->cfg.max_bytes)
		p->st.spent = true;
	if (p->cfg.idle_ms <= 0)
		p->cfg.idle_ms = NET_DEFAULT_IDLE_MS;
	if (p->cfg.connect_ms <= 0)
		p->cfg.connect_ms = NET_DEFAULT_CONNECT_MS;
	if (p->cfg.head_ms <= 0)
		p->cfg.head_ms = NET_DEFAULT_HEAD_MS;
	p->cfg.allow = NULL;
	int rc = 0;
	for (size_t i = 0; i < cfg->nallow && rc >= 0; i++)
		rc = net_allow_add(&p->allow, cfg->allow[i], e);
	if (rc < 0)
		goto fail;
	if ((rc = net_addr_own_new(&p->own)) < 0) {
		err_setc(e, rc, "the host's own addresses (getifaddrs)");
		goto fail;
	}
	if ((rc = loop_new(&p->loop)) < 0 || (rc = net_resolve_new(&p->res)) < 0) {
		err_setc(e, rc, "proxy loop");
		goto fail;
	}
	p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->wake < 0) {
		rc = err_setc(e, -errno, "eventfd");
		goto fail;
	}
	if ((rc = loop_add(p->loop, p->wake, EPOLLIN, proxy_wake, p)) < 0 ||
	    (rc = loop_add(p->loop, net_resolve_fd(p->res), EPOLLIN, proxy_dial_resolver_io, p)) < 0 ||
	    (cfg->listen_fd >= 0 && (rc = loop_add(p->loop, cfg->listen_fd, EPOLLIN, proxy_accept, p)) < 0)) {
		err_setc(e, rc, "proxy loop");
		goto fail;
	}
	p->listening = cfg->listen_fd >= 0;
	if (p->listening && (rc = fdio_set_nonblock(cfg->listen_fd, true)) < 0) {
		err_setc(e, rc, "the listener");
		goto fail;
	}
	if (cfg->event_fd >= 0 && (rc = fdio_set_nonblock(cfg->event_fd, true)) < 0) {
		err_setc(e, rc, "the event pipe");
		goto fail;
	}
	proxy_rlimit(p->cfg.max_conns);
	*ret = p;
	return 0;
fail:
	net_proxy_free(p);
	return rc;
}

void net_proxy_free(struct net_proxy *p)
{
	if (!p)
		return;
	while (p->conns)
		proxy_conn_end(p->conns, "stopped");
	proxy_tls_stop_all(p);
	pthread_mutex_destroy(&p->tls_mu);
	while (p->dead) {
		struct proxy_conn *c = p->dead;
		p->dead = c->next;
		proxy_conn_free(c);
	}
	if (p->loop) {
		if (p->listening)
			loop_del(p->loop, p->cfg.listen_fd);
		if (p->res)
			loop_del(p->loop, net_resolve_fd(p->res));
		if (p->wake >= 0)
			loop_del(p->loop, p->wake);
	}
	net_resolve_free(p->res);
	if (p->wake >= 0)
		close(p->wake);
	loop_free(p->loop);
	net_addr_own_free(p->own);
	net_allow_free(&p->allow);
	free(p);
}

struct loop *net_proxy_loop(struct net_proxy *p)
{
	return p->loop;
}

int net_proxy_run(struct net_proxy *p)
{
	/* splice(2) and write(2) into a closed peer raise SIGPIPE; here it
	 * is an error return instead. */
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int rc = 0;
	while (!atomic_load(&p->stop)) {
		rc = loop_run_once(p->loop, proxy_next_deadline(p));
		if (rc < 0)
			break;
		rc = 0;
		proxy_tick(p);
	}
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void net_proxy_stop(struct net_proxy *p)
{
	atomic_store(&p->stop, true);
	uint64_t one = 1;
	if (write(p->wake, &one, sizeof(one)) < 0) {
		/* the counter is full: the loop is awake anyway */
	}
}

void net_proxy_stats(const struct net_proxy *p, struct net_proxy_stats *ret)
{
	*ret = p->st;
}
