/* A connection's bytes once its upstream is connected: a CONNECT's
 * ClientHello checked, then a tunnel both ways; or a forwarded request's
 * body, to its end and no further, and the response back. Tunnels and
 * responses go by splice(2) through a pipe per direction: the bytes never
 * enter this process's memory. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "net/proxy-int.h"
#include "net/sni.h"

#define CARRY_ROUNDS 16	/* pipe-fulls moved per event before others get a turn */

static int carry_pipe(struct proxy_dir *d, int src, int dst)
{
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	int sz = fcntl(d->pipe[1], F_SETPIPE_SZ, PROXY_PIPE_SIZE);
	if (sz < 0)
		sz = fcntl(d->pipe[1], F_GETPIPE_SZ);
	d->cap = sz > 0 ? (size_t)sz : 65536;
	d->src = src;
	d->dst = dst;
	return 0;
}

void proxy_carry_close(struct proxy_conn *c)
{
	struct proxy_dir *dirs[] = { &c->up, &c->down };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		for (int j = 0; j < 2; j++)
			if (dirs[i]->pipe[j] >= 0) {
				close(dirs[i]->pipe[j]);
				dirs[i]->pipe[j] = -1;
			}
}

int proxy_carry_flush(struct proxy_conn *c, int fd, struct buf *b, uint64_t *count)
{
	while (b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf_consume(b, (size_t)n);
			if (count)
				*count += (uint64_t)n;
			c->last = now_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

/* src -> pipe for a response from a secret's host: read, masked
 * (net_secret_mask), and what may go written to the pipe; as splice
 * answers: >0 bytes into the pipe, 0 src ended and nothing is held, -1
 * with errno. */
static ssize_t carry_masked(struct proxy_conn *c, struct proxy_dir *d, size_t want)
{
	if (!c->mask_buf && !(c->mask_buf = malloc(PROXY_MASK_BUF))) {
		errno = ENOMEM;
		return -1;
	}
	size_t room = PROXY_MASK_BUF - c->mask_len;
	if (!c->mask_eof && room) {
		ssize_t n = read(d->src, c->mask_buf + c->mask_len, MIN(want, room));
		if (n < 0 && errno != EAGAIN)
			return -1;
		if (n == 0)
			c->mask_eof = true;
		if (n > 0) {
			proxy_spend(c->p, (uint64_t)n);
			c->mask_len += (size_t)n;
		}
	}
	size_t before = c->mask_len - c->mask_ready;
	c->mask_ready += net_secret_mask(c->mask, c->mask_buf + c->mask_ready, c->mask_len - c->mask_ready,
					 c->mask_eof);
	/* The server's silence is timed from its last bytes that were held. */
	if (c->mask_len == c->mask_ready || c->mask_eof)
		c->mask_hold_until = -1;
	else if (c->mask_hold_until < 0 || c->mask_len - c->mask_ready != before)
		c->mask_hold_until = now_ms() + NET_SECRET_MASK_HOLD_MS;
	if (!c->mask_ready) {
		if (c->mask_eof && !c->mask_len)
			return 0;
		errno = EAGAIN;
		return -1;
	}
	ssize_t w = write(d->pipe[1], c->mask_buf, c->mask_ready);
	if (w <= 0)
		return -1;
	memmove(c->mask_buf, c->mask_buf + w, c->mask_len - (size_t)w);
	c->mask_len -= (size_t)w;
	c->mask_ready -= (size_t)w;
	return w;
}

static bool carry_wants_read(const struct proxy_dir *d)
{
	return d->pipe[0] >= 0 && !d->eof && !d->full && d->inpipe < d->cap;
}

/* Move what can be moved src -> pipe -> dst without blocking; shut dst for
 * writing once src has ended and the pipe is empty (a half-close passed on). */
static int carry_pump(struct proxy_conn *c, struct proxy_dir *d, uint64_t *count)
{
	struct net_proxy *p = c->p;
	bool moved = false;
	for (int round = 0; round < CARRY_ROUNDS; round++) {
		bool progress = false;
		while (d->inpipe) {
			ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0) {
				d->inpipe -= (size_t)n;
				*count += (uint64_t)n;
				d->full = false;
				progress = true;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			return n < 0 ? -errno : -EPIPE;
		}
		uint64_t left = proxy_budget_left(p);
		if (carry_wants_read(d) && left) {
			size_t want = d->cap - d->inpipe;
			if (want > left)
				want = (size_t)left;
			bool masked = c->mask && d == &c->down;
			ssize_t n = masked ? carry_masked(c, d, want)
					   : splice(d->src, NULL, d->pipe[1], NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0) {
				d->inpipe += (size_t)n;
				if (!masked)
					proxy_spend(p, (uint64_t)n);
				progress = true;
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EAGAIN) {
				/* Either the socket is empty or the pipe's slots are:
				 * with bytes in the pipe, wait until dst takes some. */
				if (d->inpipe)
					d->full = true;
			} else if (errno != EINTR) {
				return -errno;
			}
		}
		if (d->eof && !d->inpipe && !d->shut) {
			shutdown(d->dst, SHUT_WR);
			d->shut = true;
		}
		moved |= progress;
		if (!progress)
			break;
	}
	if (moved)
		c->last = now_ms();
	return 0;
}

static int carry_read(struct proxy_conn *c, size_t max, bool *eof)
{
	char tmp[16384];
	size_t room = c->in.cap - c->in.len;
	size_t want = MIN(MIN(room, max), sizeof(tmp));
	if (!want)
		return 0;
	ssize_t n = recv(c->cfd, tmp, want, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0) {
		*eof = true;
		return 0;
	}
	buf_append(&c->in, tmp, (size_t)n);
	c->last = now_ms();
	return (int)n;
}

static void carry_tunnel_open(struct proxy_conn *c)
{
	if (carry_pipe(&c->up, c->cfd, c->ufd) < 0 || carry_pipe(&c->down, c->ufd, c->cfd) < 0)
		return proxy_conn_end(c, "reset");
	c->st = PROXY_CARRY;
}

/* PROXY_HELLO: the first bytes in the tunnel must be a ClientHello naming
 * the CONNECT host. */
static void carry_hello(struct proxy_conn *c)
{
	bool eof = false;
	int rc = carry_read(c, SIZE_MAX, &eof);
	if (rc < 0)
		return proxy_conn_end(c, "reset");
	if (!net_sni_ready(&c->scan, (const uint8_t *)c->in.data, c->in.len)) {
		if (eof)
			return proxy_conn_reject(c, "the client closed the tunnel before its TLS ClientHello ended");
		return;
	}
	char name[NET_SNI_NAME_MAX + 1], ht[NET_HOST_MAX + 3];
	net_allow_host_text(&c->req.host, ht, sizeof(ht));
	enum net_sni_result r = net_sni_parse((const uint8_t *)c->in.data, c->in.len, name);
	switch (r) {
	case NET_SNI_MORE:
		if (eof)
			return proxy_conn_reject(c, "the client closed the tunnel before its TLS ClientHello ended");
		return;
	case NET_SNI_NOT_TLS:
		return proxy_conn_reject(c, "the tunnel to %s:%u carried something other than TLS; CONNECT carries TLS only",
					 ht, c->req.port);
	case NET_SNI_MALFORMED:
		return proxy_conn_reject(c, "a malformed TLS ClientHello in the tunnel to %s:%u", ht, c->req.port);
	case NET_SNI_NONE:
		if (c->req.host.kind == NET_HOST_NAME)
			return proxy_conn_reject(c, "the TLS ClientHello to %s names no server (no SNI)", ht);
		break;
	case NET_SNI_FOUND: {
		struct net_host sni;
		if (net_allow_host(name, strlen(name), &sni, NULL) < 0)
			return proxy_conn_reject(c, "the TLS server name in the tunnel to %s is not a host name", ht);
		if (c->req.host.kind == NET_HOST_NAME && (sni.kind != NET_HOST_NAME || strcmp(sni.name, c->req.host.name)))
			return proxy_conn_reject(c, "the TLS server name %s is not the CONNECT host %s", sni.name, ht);
		break;
	}
	}
	/* The ClientHello (and anything after it) goes on as it came. */
	proxy_spend(c->p, c->in.len);
	c->out_u.cap = MAX(c->out_u.cap, c->in.cap);
	if (buf_append(&c->out_u, c->in.data, c->in.len) < 0)
		return proxy_conn_end(c, "reset");
	c->in.len = 0;
	carry_tunnel_open(c);
}

/* Bytes just put in out_u, as the server will read them: a length body
 * as it is, a chunked one's payload (out_u holds net_chunked's framing,
 * "HEX\r\n" DATA "\r\n" ... "0\r\n\r\n", whole chunks each time), for a
 * secret of another host. */
static bool carry_body_carries(struct proxy_conn *c, const char *p, size_t n)
{
	if (!c->scan_body)
		return false;
	if (c->req.body == NET_BODY_LENGTH)
		return proxy_dial_body_carries(c, p, n);
	const char *end = p + n;
	while (p < end) {
		char *crlf;
		unsigned long long k = strtoull(p, &crlf, 16);
		if (crlf + 2 > end || crlf[0] != '\r' || crlf[1] != '\n')
			return true;	/* not the framing it wrote: not carried unlooked */
		p = crlf + 2;
		if (k == 0)
			break;
		if (k > (size_t)(end - p))
			return true;
		if (proxy_dial_body_carries(c, p, (size_t)k))
			return true;
		p += k + 2;
	}
	return false;
}

/* A forwarded request's body into out_u: exactly its length, or its chunks
 * re-framed; past its end nothing more is read from the client. */
static int carry_body(struct proxy_conn *c)
{
	while (!c->body_done) {
		if (c->in.len == 0) {
			if (c->client_eof || c->out_u.len >= PROXY_BODY_BUF)
				break;
			uint64_t left = proxy_budget_left(c->p);
			int rc = carry_read(c, left > SIZE_MAX ? SIZE_MAX : (size_t)left, &c->client_eof);
			if (rc < 0)
				return rc;
			if (rc == 0)
				break;
		}
		size_t before = c->out_u.len, used = 0;
		if (c->req.body == NET_BODY_LENGTH) {
			size_t room = c->out_u.cap - c->out_u.len;
			used = MIN(MIN(c->in.len, room), c->body_left > SIZE_MAX ? SIZE_MAX : (size_t)c->body_left);
			buf_append(&c->out_u, c->in.data, used);
			c->body_left -= used;
			c->body_done = c->body_left == 0;
		} else {
			int rc = net_chunked_feed(&c->chunked, c->in.data, c->in.len, &c->out_u, &used);
			if (rc < 0)
				return -EBADMSG;
			c->body_done = rc == 1;
		}
		if (carry_body_carries(c, c->out_u.data + before, c->out_u.len - before)) {
			c->out_u.len = before;	/* those bytes never leave */
			return -EACCES;
		}
		proxy_spend(c->p, c->out_u.len - before);
		buf_consume(&c->in, used);
		if (!used && !c->body_done)
			break;	/* out_u is full */
	}
	if (c->body_done)
		c->in.len = 0;	/* a second, pipelined request: never forwarded */
	return 0;
}

/* A forwarded request to a secret's own host: its response is masked. */
static int carry_mask_start(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	bool owned = false;
	for (size_t i = 0; i < p->cfg.nsecrets && !owned; i++)
		owned = net_secret_owns(&p->cfg.secrets[i], &c->req.host);
	if (!owned)
		return 0;
	if (!(c->mask = malloc(sizeof(*c->mask))))
		return -ENOMEM;
	c->mask_hold_until = -1;
	net_secret_mask_init(c->mask, p->cfg.secrets, p->cfg.nsecrets);
	return 0;
}

void proxy_carry_start(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	if (proxy_tls_wanted(c))
		return proxy_tls_start(c);
	if (c->req.kind == NET_REQ_CONNECT) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		buf_append(&c->out_c, ok, sizeof(ok) - 1);
		c->st = PROXY_HELLO;
		c->deadline = now_ms() + p->cfg.head_ms;
		c->in.cap = NET_SNI_MAX_HELLO;
	} else {
		if (carry_pipe(&c->down, c->ufd, c->cfd) < 0 || carry_mask_start(c) < 0)
			return proxy_conn_end(c, "reset");
		proxy_spend(p, c->req.upstream.len);
		buf_append(&c->out_u, c->req.upstream.data, c->req.upstream.len);
		c->out_u.cap = PROXY_BODY_BUF + NET_REQHEAD_MAX + 1024;
		c->in.cap = PROXY_BODY_BUF;
		c->body_left = c->req.length;
		c->body_done = c->req.body == NET_BODY_NONE || (c->req.body == NET_BODY_LENGTH && !c->req.length);
		net_chunked_init(&c->chunked);
		c->st = PROXY_CARRY;
		c->last = now_ms();
	}
	proxy_carry_io(c);
	proxy_conn_sync(c);
}

static void carry_forward(struct proxy_conn *c)
{
	int rc = carry_body(c);
	if (rc == -EBADMSG && c->ndown == 0 && c->down.inpipe == 0)
		return proxy_conn_refuse(c, 400, "the chunked request body is malformed");
	if (rc == -EACCES) {
		/* Cut before the bytes that carry it leave; the server may have
		 * the head and the body before them. */
		c->allowed = false;
		if (c->ndown == 0 && c->down.inpipe == 0)
			return proxy_conn_refuse(c, 403, "the request body carries secret %s, which goes only to its "
						 "own hosts; cut and recorded", c->secret);
		snprintf(c->why, sizeof(c->why), "the request body carries secret %s; cut", c->secret);
		return proxy_conn_end(c, "secret");
	}
	if (rc < 0)
		return proxy_conn_end(c, "reset");
	if (proxy_carry_flush(c, c->ufd, &c->out_u, &c->nup) < 0) {
		/* The server stopped taking the request (it may have answered
		 * early, a 413, and closed): the rest of the body is dropped and
		 * its answer still carried back. */
		c->out_u.len = 0;
		c->body_done = c->up.shut = true;
	}
	if (c->client_eof && !c->body_done && !c->out_u.len && !c->up.shut) {
		shutdown(c->ufd, SHUT_WR);	/* the body was cut: the server sees it end */
		c->up.shut = true;
	}
	if (carry_pump(c, &c->down, &c->ndown) < 0)
		return proxy_conn_end(c, "reset");
	if (c->down.shut)
		proxy_conn_linger(c);	/* the response is all there: one request per connection */
}

static void carry_tunnel(struct proxy_conn *c)
{
	if (proxy_carry_flush(c, c->cfd, &c->out_c, NULL) < 0 || proxy_carry_flush(c, c->ufd, &c->out_u, &c->nup) < 0)
		return proxy_conn_end(c, "reset");
	if (!c->out_u.len && carry_pump(c, &c->up, &c->nup) < 0)
		return proxy_conn_end(c, "reset");
	if (!c->out_c.len && carry_pump(c, &c->down, &c->ndown) < 0)
		return proxy_conn_end(c, "reset");
	if (c->up.shut && c->down.shut)
		proxy_conn_end(c, NULL);
}

void proxy_carry_io(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	if (c->st == PROXY_HELLO) {
		if (proxy_carry_flush(c, c->cfd, &c->out_c, NULL) < 0)
			return proxy_conn_end(c, "reset");
		carry_hello(c);
	}
	if (c->dead || c->st != PROXY_CARRY)
		return;
	uint64_t nup = c->nup, ndown = c->ndown;
	if (c->req.kind == NET_REQ_CONNECT)
		carry_tunnel(c);
	else
		carry_forward(c);
	p->st.up += c->nup - nup;
	p->st.down += c->ndown - ndown;
	if (!c->dead && c->st == PROXY_CARRY) {
		c->deadline = c->last + p->cfg.idle_ms;
		if (c->mask && c->mask_hold_until >= 0 && c->mask_hold_until < c->deadline)
			c->deadline = c->mask_hold_until;
	}
}

bool proxy_carry_mask_due(struct proxy_conn *c, int64_t now)
{
	if (!c->mask || c->mask_hold_until < 0 || now < c->mask_hold_until)
		return false;
	/* Only the bytes held now, and only if the server has sent nothing
	 * since: what comes after is masked with what it may finish. */
	char b;
	ssize_t n = recv(c->ufd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	c->mask_hold_until = -1;
	if (n < 0 && errno == EAGAIN)
		c->mask_ready = c->mask_len;
	proxy_carry_io(c);
	if (!c->dead)
		proxy_conn_sync(c);
	return true;
}

void proxy_carry_events(const struct proxy_conn *c, uint32_t *cev, uint32_t *uev)
{
	bool budget = proxy_budget_left(c->p) > 0;
	*cev = *uev = 0;
	if (c->st == PROXY_HELLO) {
		*cev = (c->out_c.len ? EPOLLOUT : 0) | (c->in.len < c->in.cap ? EPOLLIN : 0);
		return;
	}
	if (c->out_c.len || c->down.inpipe)
		*cev |= EPOLLOUT;
	if (c->out_u.len || c->up.inpipe)
		*uev |= EPOLLOUT;
	if (!c->out_c.len && carry_wants_read(&c->down) && budget)
		*uev |= EPOLLIN;
	if (c->req.kind == NET_REQ_CONNECT) {
		if (!c->out_u.len && carry_wants_read(&c->up) && budget)
			*cev |= EPOLLIN;
	} else if (!c->body_done && !c->client_eof && c->out_u.len < PROXY_BODY_BUF && budget) {
		*cev |= EPOLLIN;
	}
}
