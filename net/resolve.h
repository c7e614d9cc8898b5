/* Name resolution off the event loop: a few worker threads call
 * getaddrinfo and hand results back through an eventfd the loop watches.
 * Workers start when first needed (so a process confined before any lookup
 * starts them confined too) and are detached: freeing the resolver never
 * waits on a lookup stuck in a slow DNS server; the last one out frees it. */
#pragma once
#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_RESOLVE_THREADS 4
#define NET_RESOLVE_MAX_ADDRS 16

struct net_resolve;
struct net_resolve_req;

/* getaddrinfo, or a test's stand-in (process-wide; NULL restores it). */
typedef int net_resolve_fn(const char *node, const char *service, const struct addrinfo *hints,
			   struct addrinfo **res);
void net_resolve_set_fn(net_resolve_fn *fn);

int net_resolve_new(struct net_resolve **ret);
void net_resolve_free(struct net_resolve *r);
/* Readable when a result waits for net_resolve_next. */
int net_resolve_fd(const struct net_resolve *r);
/* Look host up (a name) for TCP port; data comes back with the result. */
int net_resolve_start(struct net_resolve *r, const char *host, uint16_t port, void *data,
		      struct net_resolve_req **ret);
/* The result of q will not be delivered; q is not to be used again. */
void net_resolve_cancel(struct net_resolve *r, struct net_resolve_req *q);

struct net_resolve_result {
	void *data;
	int gai;		/* 0, or a getaddrinfo error (EAI_*) */
	int sys_errno;		/* with EAI_SYSTEM */
	struct sockaddr_storage addr[NET_RESOLVE_MAX_ADDRS];
	socklen_t addrlen[NET_RESOLVE_MAX_ADDRS];
	size_t n;
};
/* One finished lookup: 1 with *ret filled, 0 when none is waiting. */
int net_resolve_next(struct net_resolve *r, struct net_resolve_result *ret);
