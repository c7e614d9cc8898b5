/* From a request head to a connected upstream: the allow-list first (no
 * name is resolved before it), then the rule's own address or a resolver
 * thread's answer with every address not public dropped, then a
 * non-blocking connect to each address left, in turn, within connect_ms.
 * The address connected is always one that was checked: nothing resolves
 * a name twice. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/timeutil.h"
#include "net/addr.h"
#include "net/proxy-int.h"
#include "net/sigv4.h"

static void dial_next(struct proxy_conn *c);

static const struct net_secret *body_hit(struct proxy_conn *c, const char *p, size_t n)
{
	struct net_proxy *px = c->p;
	for (size_t i = 0; i < px->cfg.nsecrets; i++) {
		const struct net_secret *s = &px->cfg.secrets[i];
		if (!net_secret_owns(s, &c->req.host) && net_secret_carried(s, p, n))
			return s;
	}
	return NULL;
}

bool proxy_dial_body_carries(struct proxy_conn *c, const char *p, size_t n)
{
	if (!c->scan_body || !n)
		return false;
	if (!c->scan_tail && !(c->scan_tail = malloc(2 * PROXY_SCAN_TAIL)))
		return true;	/* cannot look: not carried unlooked */
	/* Across the seam: the tail before, and the first bytes of these. */
	size_t k = MIN(n, (size_t)PROXY_SCAN_TAIL);
	memcpy(c->scan_tail + c->scan_tail_len, p, k);
	const struct net_secret *s = body_hit(c, c->scan_tail, c->scan_tail_len + k);
	if (!s)
		s = body_hit(c, p, n);
	if (s) {
		c->secret = s->name;
		return true;
	}
	/* The new tail: the last PROXY_SCAN_TAIL - 1 bytes of tail + p. */
	size_t keep = PROXY_SCAN_TAIL - 1;
	if (n >= keep) {
		memcpy(c->scan_tail, p + n - keep, keep);
		c->scan_tail_len = keep;
	} else {
		size_t all = c->scan_tail_len + n, drop = all > keep ? all - keep : 0;
		memmove(c->scan_tail, c->scan_tail + drop, c->scan_tail_len - drop);
		memcpy(c->scan_tail + c->scan_tail_len - drop, p, n);
		c->scan_tail_len = all - drop;
	}
	return false;
}

/* The box's secrets against an allowed request: a forwarded one to a
 * secret's own host gets the value in place of the placeholder (and is
 * refused if it brings a credential of its own there); any request to
 * another host that carries a placeholder or a value is refused. A
 * CONNECT's head goes no further than here, and what it tunnels is TLS
 * end to end: only its head is looked at. 0: go on; <0: refused. */
static int dial_secrets(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	struct net_reqhead *r = &c->req;
	/* What leaves for upstream: a forwarded request's rebuilt head; a
	 * CONNECT's target only (its headers stop here). */
	const char *head = r->kind == NET_REQ_FORWARD ? r->upstream.data : r->host.name;
	size_t n = r->kind == NET_REQ_FORWARD ? r->upstream.len : strlen(r->host.name);
	char ht[NET_HOST_MAX + 3];
	net_allow_host_text(&r->host, ht, sizeof(ht));
	for (size_t i = 0; i < p->cfg.nsecrets; i++) {
		const struct net_secret *s = &p->cfg.secrets[i];
		bool own = net_secret_owns(s, &r->host);
		if (!own && net_secret_carried(s, head, n)) {
			c->secret = s->name;
			proxy_conn_refuse(c, 403, "the request carries secret %s, which goes only to %s; refused and recorded",
					  s->name, s->host[0].name);
			return -EPERM;
		}
		if (!own && r->kind == NET_REQ_FORWARD && r->body != NET_BODY_NONE)
			c->scan_body = true;
		if (!own || r->kind != NET_REQ_FORWARD)
			continue;
		/* The head as it goes on, its body's hash where there is none. */
		bool empty = r->body == NET_BODY_NONE || (r->body == NET_BODY_LENGTH && !r->length);
		char why[256];
		int k = net_secret_apply(s, &r->upstream, empty ? NET_SIGV4_EMPTY_HASH : NULL, p->cfg.secret_other_ok, NULL, why,
					 sizeof(why));
		if (k == -EPERM) {
			c->secret = s->name;
			proxy_conn_refuse(c, 403, "%s, to %s, %s's host; refused and recorded (use $%s%s)", why, ht,
					  s->name, s->aws ? net_secret_aws_vars[0] : s->name,
					  s->aws ? " and sign with it" : "");
			return -EPERM;
		}
		if (k < 0) {
			c->secret = s->name;
			proxy_conn_refuse(c, 400, "secret %s: %s", s->name, why);
			return k;
		}
		if (k > 0)
			c->substituted |= 1u << i;
		head = r->upstream.data;
		n = r->upstream.len;
	}
	return 0;
}

/* The request is in: is it allowed, and where does it go? */
void proxy_dial_decide(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	const struct net_reqhead *r = &c->req;
	char ht[NET_HOST_MAX + 3], sug[NET_HOST_MAX + 10];
	net_allow_host_text(&r->host, ht, sizeof(ht));
	proxy_spend(p, 0);	/* (a terminating thread may have spent the rest) */
	if (p->st.spent)
		return proxy_conn_refuse(c, 403, "this box's network byte budget (%llu bytes) is spent",
					 (unsigned long long)p->cfg.max_bytes);
	c->rule = net_allow_match(&p->allow, &r->host, r->port);
	if (!c->rule) {
		net_allow_suggest(&r->host, r->port, sug, sizeof(sug));
		return proxy_conn_refuse(c, 403, "%s:%u is not on this box's allow-list (to allow it: --allow-host %s)",
					 ht, r->port, sug);
	}
	if (dial_secrets(c) < 0)
		return;
	c->allowed = true;
	c->st = PROXY_RESOLVE;
	c->deadline = now_ms() + p->cfg.connect_ms;
	if (c->rule->has_addr) {
		/* Pinned, or an address rule: connected as named, never resolved. */
		net_allow_rule_sockaddr(c->rule, r->port, &c->addr[0], &c->addrlen[0]);
		c->naddr = 1;
		c->st = PROXY_CONNECT;
		dial_next(c);
		return;
	}
	int rc = net_resolve_start(p->res, r->host.name, r->port, c, &c->rq);
	if (rc < 0)
		return proxy_conn_refuse(c, 502, "could not start resolving %s: %s", ht, strerror(-rc));
	proxy_conn_sync(c);
}

static void dial_next(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	while (c->iaddr < c->naddr) {
		size_t i = c->iaddr++;
		int fd = socket(c->addr[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
		if (fd < 0) {
			c->connect_err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		net_addr_text((struct sockaddr *)&c->addr[i], c->addr_text, sizeof(c->addr_text));
		if (connect(fd, (struct sockaddr *)&c->addr[i], c->addrlen[i]) == 0 || errno == EINPROGRESS) {
			int rc = loop_add(p->loop, fd, EPOLLOUT, proxy_conn_io, c);
			if (rc < 0) {
				c->connect_err = -rc;
				close(fd);
				continue;
			}
			c->ufd = fd;
			c->uev = EPOLLOUT;
			c->st = PROXY_CONNECT;
			proxy_conn_sync(c);
			return;
		}
		c->connect_err = errno;
		close(fd);
	}
	char ht[NET_HOST_MAX + 3];
	net_allow_host_text(&c->req.host, ht, sizeof(ht));
	proxy_conn_refuse(c, 502, "could not connect to %s:%u (%s): %s", ht, c->req.port, c->addr_text,
			  strerror(c->connect_err));
}

void proxy_dial_connected(struct proxy_conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		c->connect_err = err;
		proxy_conn_close_fd(c, &c->ufd);
		dial_next(c);
		return;
	}
	if (c->p->st.spent)
		return proxy_conn_refuse(c, 403, "this box's network byte budget (%llu bytes) is spent",
					 (unsigned long long)c->p->cfg.max_bytes);
	c->connected = true;
	proxy_carry_start(c);
}

static void dial_resolved(struct proxy_conn *c, const struct net_resolve_result *res)
{
	struct net_proxy *p = c->p;
	char ht[NET_HOST_MAX + 3];
	net_allow_host_text(&c->req.host, ht, sizeof(ht));
	c->rq = NULL;
	if (res->gai)
		return proxy_conn_refuse(c, 502, "could not resolve %s: %s", ht,
					 res->gai == EAI_SYSTEM ? strerror(res->sys_errno) : gai_strerror(res->gai));
	int refused = -1;
	enum net_addr_class refused_class = NET_ADDR_PUBLIC;
	for (size_t i = 0; i < res->n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&res->addr[i];
		enum net_addr_class k = net_addr_check(p->own, sa);
		if (k != NET_ADDR_PUBLIC) {
			if (refused < 0) {
				refused = (int)i;
				refused_class = k;
			}
			continue;
		}
		bool dup = false;
		for (size_t j = 0; j < c->naddr && !dup; j++)
			dup = c->addrlen[j] == res->addrlen[i] && !memcmp(&c->addr[j], sa, res->addrlen[i]);
		if (dup)
			continue;
		memcpy(&c->addr[c->naddr], sa, res->addrlen[i]);
		c->addrlen[c->naddr++] = res->addrlen[i];
	}
	if (c->naddr == 0 && refused >= 0) {
		char at[INET6_ADDRSTRLEN + 2], a[INET6_ADDRSTRLEN];
		net_addr_text((const struct sockaddr *)&res->addr[refused], a, sizeof(a));
		snprintf(at, sizeof(at), res->addr[refused].ss_family == AF_INET6 ? "[%s]" : "%s", a);
		char port[8] = "";
		if (c->req.port != 443 && c->req.port != 80)
			snprintf(port, sizeof(port), ":%u", c->req.port);
		return proxy_conn_refuse(c, 403,
					 "%s resolves to %s, %s; only a rule that names the address allows it (--allow-host %s=%s%s)",
					 ht, a, net_addr_class_name(refused_class), c->req.host.name, at, port);
	}
	if (c->naddr == 0)
		return proxy_conn_refuse(c, 502, "could not resolve %s: no address", ht);
	c->st = PROXY_CONNECT;
	dial_next(c);
}

void proxy_dial_resolver_io(struct loop *l, int fd, uint32_t events, void *data)
{
	struct net_proxy *p = data;
	struct net_resolve_result *res = malloc(sizeof(*res));
	if (!res)
		return;
	while (net_resolve_next(p->res, res) > 0) {
		struct proxy_conn *c = res->data;
		if (!c->dead && c->st == PROXY_RESOLVE)
			dial_resolved(c, res);
	}
	free(res);
}
