/* Inside the proxy: one client connection's state, shared by proxy.c (its
 * life: accept, head, refusals, time limits, events), proxy-dial.c (the
 * decision, resolving, connecting) and proxy-carry.c (its bytes:
 * ClientHello, tunnel, forwarded body). */
#pragma once
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/loop.h"
#include "net/allow.h"
#include "net/chunked.h"
#include "net/proxy.h"
#include "net/reqhead.h"
#include "net/resolve.h"
#include "net/secret.h"
#include "net/sni.h"

#define PROXY_PIPE_SIZE (256 * 1024)	/* asked of each pipe; the kernel may give less */
#define PROXY_BODY_BUF (64 * 1024)	/* a forwarded body's bytes between reads and writes */
#define PROXY_LINGER_MS 2000		/* reading a refused client's leftovers after the answer */
#define PROXY_LINGER_MAX (64 * 1024)
#define PROXY_SCAN_TAIL NET_SECRET_VALUE_MAX
#define PROXY_MASK_BUF (64 * 1024 + NET_SECRET_VALUE_MAX)	/* a masked response's bytes in memory */
#define PROXY_TLS_MAX 16	/* terminated connections at once */

enum proxy_state {
	PROXY_HEAD,	/* reading the request head */
	PROXY_RESOLVE,	/* a resolver thread has the name */
	PROXY_CONNECT,	/* connecting upstream, address by address */
	PROXY_HELLO,	/* CONNECT answered 200; reading the ClientHello */
	PROXY_CARRY,	/* bytes both ways */
	PROXY_LINGER,	/* answered (a refusal, or the response forwarded); draining */
};

/* One direction of a tunnel: src -> pipe -> dst, by splice. */
struct proxy_dir {
	int src, dst;
	int pipe[2];
	size_t cap;	/* the pipe's size */
	size_t inpipe;	/* bytes read from src not yet written to dst */
	bool full;	/* src had nothing more to give the pipe, or the pipe no room: wait for dst */
	bool eof;	/* src ended */
	bool shut;	/* dst shut down for writing after the last byte */
};

struct proxy_conn {
	struct net_proxy *p;
	struct proxy_conn *prev, *next;
	enum proxy_state st;
	bool dead;		/* ended: freed after this loop turn */
	int cfd, ufd;
	uint32_t cev, uev;	/* epoll events registered for each */
	bool c_gone, u_gone;	/* that side hung up with bytes still going the other way: out of the loop */
	int64_t t0, deadline, last;

	struct buf in;		/* client bytes not yet consumed */
	struct buf out_c;	/* to the client: the 200, a refusal */
	struct buf out_u;	/* to upstream: a head, a ClientHello, a body */

	bool have_req;
	struct net_reqhead req;
	const struct net_allow_rule *rule;
	struct net_resolve_req *rq;
	struct sockaddr_storage addr[NET_RESOLVE_MAX_ADDRS];
	socklen_t addrlen[NET_RESOLVE_MAX_ADDRS];
	size_t naddr, iaddr;
	int connect_err;	/* the last address's errno */
	bool connected;
	char addr_text[INET6_ADDRSTRLEN];

	struct net_sni_scan scan;	/* PROXY_HELLO */
	struct net_chunked chunked;
	uint64_t body_left;	/* NET_BODY_LENGTH */
	bool body_done;		/* the body is all in out_u: nothing more is read from the client */
	bool client_eof;	/* the client ended before its body did */

	struct proxy_dir up, down;
	uint64_t nup, ndown;	/* bytes written upstream, and to the client */
	size_t drained;		/* PROXY_LINGER: client bytes read and dropped */

	unsigned substituted;	/* bit i: cfg.secrets[i]'s placeholder replaced */
	/* A forwarded body to a host that owns no secret is scanned as it
	 * passes: the last bytes of it, for a placeholder or value split
	 * across reads (PROXY_SCAN_TAIL: the longest value, less one). */
	bool scan_body;
	char *scan_tail;
	size_t scan_tail_len;
	const char *secret;	/* refused for carrying this secret, or NULL */
	/* A response from a secret's own host comes through memory, not a
	 * splice: no value of a secret goes back in it (net_secret_mask).
	 * mask_buf[0..mask_ready) may go to the pipe; up to mask_len is held. */
	struct net_secret_mask *mask;
	char *mask_buf;
	size_t mask_len, mask_ready;
	int64_t mask_hold_until;	/* held bytes go then, the server quiet (-1: none held) */
	bool mask_eof;
	bool allowed, logged;
	char why[320];
	const char *end;	/* why an allowed connection was cut, or NULL */
};

struct net_proxy {
	struct net_proxy_cfg cfg;
	struct loop *loop;
	struct net_allow allow;
	struct net_addr_own *own;
	struct net_resolve *res;
	int wake;		/* eventfd: net_proxy_stop */
	atomic_bool stop;
	bool listening;
	int64_t listen_resume;	/* accept paused (out of descriptors) until then, or -1 */
	struct proxy_conn *conns, *dead;
	unsigned nconns;
	/* Bytes taken in to carry, for max_bytes: the loop's and the
	 * terminating threads' (proxy_tls_spend). */
	_Atomic uint64_t used;
	bool close_all;		/* max_bytes reached: end the tunnels after this turn */
	struct net_proxy_stats st;
	/* Connections to a secret's host, on threads of their own
	 * (proxy-tls.c): their sockets, for net_proxy_free to end. */
	pthread_mutex_t tls_mu;
	int tls_fd[PROXY_TLS_MAX][2];
	int tls_n;
};

/* proxy.c */
void proxy_conn_io(struct loop *l, int fd, uint32_t events, void *data);
void proxy_conn_close_fd(struct proxy_conn *c, int *fd);
void proxy_conn_end(struct proxy_conn *c, const char *end);
void proxy_conn_refuse(struct proxy_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Close the tunnel of a connection refused after its 200 (SNI). */
void proxy_conn_reject(struct proxy_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void proxy_conn_linger(struct proxy_conn *c);
void proxy_conn_sync(struct proxy_conn *c);
/* Bytes that may still be taken in under max_bytes. */
uint64_t proxy_budget_left(const struct net_proxy *p);
void proxy_spend(struct net_proxy *p, uint64_t n);
void proxy_duration(int64_t ms, char *out, size_t n);

/* proxy-dial.c */
void proxy_dial_decide(struct proxy_conn *c);
void proxy_dial_connected(struct proxy_conn *c);
void proxy_dial_resolver_io(struct loop *l, int fd, uint32_t events, void *data);

/* proxy-dial.c: whether a forwarded body's payload bytes p[0..n), after
 * those scanned before, carry a secret of another host (c->secret set). */
bool proxy_dial_body_carries(struct proxy_conn *c, const char *p, size_t n);

/* proxy-tls.c */
bool proxy_tls_wanted(const struct proxy_conn *c);
/* Terminated connections open now (they count in max_conns). */
unsigned proxy_tls_open(struct net_proxy *p);
void proxy_tls_start(struct proxy_conn *c);
void proxy_tls_stop_all(struct net_proxy *p);

/* proxy-carry.c */
void proxy_carry_start(struct proxy_conn *c);
void proxy_carry_io(struct proxy_conn *c);
/* A masked response's held bytes whose time has come (the server quiet):
 * sent on, true; false when none are due. */
bool proxy_carry_mask_due(struct proxy_conn *c, int64_t now);
void proxy_carry_events(const struct proxy_conn *c, uint32_t *cev, uint32_t *uev);
void proxy_carry_close(struct proxy_conn *c);
/* Write out what b holds to fd; 0, or -errno on a broken connection. */
int proxy_carry_flush(struct proxy_conn *c, int fd, struct buf *b, uint64_t *count);
