/* A box's HTTP egress proxy, run on the host in a process of its own. Each
 * client connection (a process in the box dialing HTTP_PROXY) is read for
 * its request head; the host is checked against the allow-list before
 * anything is resolved; the name is resolved off the loop (or the rule's
 * pinned address used), every address not public refused unless the rule
 * names it, and the exact address checked is the one connected (DNS cannot
 * swap it). CONNECT: "200 Connection established", then the ClientHello's
 * SNI must be the CONNECT host, then bytes both ways by splice(2). Plain
 * HTTP: the head rewritten (net/reqhead.h), the body forwarded to its end
 * and not a byte more, the response carried back, the connection closed.
 *
 * A refusal before a tunnel is an HTTP response whose reason phrase says
 * why and what to do ("403 Forbidden by ward: x:443 is not on this box's
 * allow-list (to allow it: --allow-host x)"): 400 malformed, 403 policy,
 * 408 head too slow, 502 resolve or connect failed, 503 at the connection
 * cap, 504 connect timed out. TLS is never terminated, except with
 * cfg.tls for a secret's host (net/tlsterm.h, proxy-tls.c).
 *
 * Each connection, when it ends (a refused one at once), is one JSON line
 * on event_fd, never blocking (a full pipe drops the line and counts it):
 *   {"type":"net","host":"example.org","port":443,"method":"CONNECT",
 *    "allowed":true,"why":"","addr":"93.184.215.14","up":517,"down":4242,
 *    "ms":120,"end":"idle"}
 * why is "" when allowed; addr only when connected; end only when an
 * allowed connection was cut ("idle", "budget", "reset", "stopped").
 * With secrets: "substituted":["NAME",...] on a request whose placeholders
 * were replaced, "secret":"NAME" on one refused for carrying NAME (or a
 * credential of its own to NAME's host); names only, never a value. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define NET_DEFAULT_MAX_CONNS 64
#define NET_DEFAULT_IDLE_MS (120 * 1000)
#define NET_DEFAULT_CONNECT_MS (10 * 1000)
#define NET_DEFAULT_HEAD_MS (10 * 1000)
/* Descriptors one connection may hold: client, upstream, two pipes, and in
 * a vm box the mux's end of the client's socket pair. */
#define NET_FDS_PER_CONN 7
/* RLIMIT_NOFILE = NET_FDS_PER_CONN * max_conns + this (listener, loop,
 * resolver, event pipe, std streams, whatever shares the loop). */
#define NET_FD_SLACK 64

struct net_proxy_cfg {
	const char *const *allow;	/* --allow-host patterns (already validated by net_allow) */
	size_t nallow;
	int listen_fd;		/* a listening SOCK_STREAM socket to accept clients from, or -1 */
	int event_fd;		/* write end of a pipe: one JSON line per connection, or -1 */
	unsigned max_conns;	/* concurrent client connections; 0: NET_DEFAULT_MAX_CONNS */
	uint64_t max_bytes;	/* up+down over the box's life; 0: none */
	uint64_t used_before;	/* of it, what the box's earlier proxies carried */
	int64_t idle_ms;	/* a tunnel with no bytes either way this long is closed; 0: 120 s */
	int64_t connect_ms;	/* resolve + connect upstream; 0: 10 s */
	int64_t head_ms;	/* the client's request head (and a CONNECT's ClientHello); 0: 10 s */
	/* The box's secrets (net/secret.h), the caller's: a forwarded request
	 * to a secret's host has its placeholder replaced by the value; a
	 * request to any other host that carries either is refused. */
	const struct net_secret *secrets;
	size_t nsecrets;
	/* A credential of another (an Authorization, an X-Api-Key, an AWS
	 * signature by another key) to a secret's host is carried as it is
	 * rather than refused (--secret-other-ok). */
	bool secret_other_ok;
	/* With it (the caller's, net/tlsterm.h), a CONNECT to a secret's host
	 * is terminated and its request substituted; NULL: tunnelled. */
	struct net_tls *tls;
};

struct net_proxy_stats {
	uint64_t conns;		/* client connections taken */
	uint64_t refused;	/* of them, refused (an answer, or a tunnel closed at its ClientHello) */
	uint64_t up, down;	/* bytes to upstream servers, and back to clients */
	uint64_t events_dropped;	/* event lines the pipe had no room for */
	unsigned open;		/* client connections open now */
	bool spent;		/* max_bytes reached: new connections are refused */
};

struct net_proxy;
struct net_tls;

/* The listener and event_fd stay the caller's (both are made
 * non-blocking). Lowers the calling process's soft RLIMIT_NOFILE to
 * NET_FDS_PER_CONN * max_conns + NET_FD_SLACK when it is higher. */
int net_proxy_new(const struct net_proxy_cfg *c, struct net_proxy **ret, struct err *e);
void net_proxy_free(struct net_proxy *p);
/* Other handlers may share the loop (the vm backend's connection mux). */
struct loop *net_proxy_loop(struct net_proxy *p);
/* A connected stream socket (TCP, or a unix socketpair end), owned from
 * here on (closed on error too). From the loop's thread: a handler sharing
 * the loop, or before net_proxy_run. */
int net_proxy_add_client(struct net_proxy *p, int fd);
/* Serves until net_proxy_stop or a fatal error (0 or -errno). SIGPIPE is
 * blocked in the calling thread meanwhile. */
int net_proxy_run(struct net_proxy *p);
/* From any thread, or a signal handler. */
void net_proxy_stop(struct net_proxy *p);
/* From the loop's thread, or after net_proxy_run has returned. */
void net_proxy_stats(const struct net_proxy *p, struct net_proxy_stats *ret);

/* Drop privileges and confine the calling process, for it parses what a box
 * sends: resolves "localhost" once (NSS loaded while files may be read);
 * the hard RLIMIT_NOFILE down to the soft one; as root, uid and gid 65534
 * with no supplementary groups; not dumpable; no new privileges; Landlock
 * (no writes anywhere, no TCP bind) where the kernel has it; a seccomp
 * filter (net/proxy-confine.c has the table). Call after net_proxy_new,
 * from the thread that will run the proxy, before any name is resolved. */
int net_proxy_confine(struct err *e);
