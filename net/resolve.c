#include "net/resolve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/cleanup.h"

struct net_resolve_req {
	struct net_resolve_req *next;
	char host[256];
	char port[8];
	void *data;
	bool cancelled;
	struct net_resolve_result res;
};

struct net_resolve {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct net_resolve_req *queue, **queue_tail;	/* waiting for a worker */
	struct net_resolve_req *done, **done_tail;	/* results for the loop */
	unsigned threads, idle, refs;			/* refs: the owner and each worker */
	bool stopping;
	int efd;
};

static net_resolve_fn *resolve_fn = getaddrinfo;

void net_resolve_set_fn(net_resolve_fn *fn)
{
	resolve_fn = fn ? fn : getaddrinfo;
}

int net_resolve_new(struct net_resolve **ret)
{
	struct net_resolve *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd < 0) {
		int rc = -errno;
		free(r);
		return rc;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->queue_tail = &r->queue;
	r->done_tail = &r->done;
	r->refs = 1;
	*ret = r;
	return 0;
}

static void resolve_destroy(struct net_resolve *r)
{
	while (r->queue) {
		struct net_resolve_req *q = r->queue;
		r->queue = q->next;
		free(q);
	}
	while (r->done) {
		struct net_resolve_req *q = r->done;
		r->done = q->next;
		free(q);
	}
	close(r->efd);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cond);
	free(r);
}

/* Called with the lock held; frees r when it was the last reference. */
static bool resolve_unref_locked(struct net_resolve *r)
{
	if (--r->refs)
		return false;
	pthread_mutex_unlock(&r->mu);
	resolve_destroy(r);
	return true;
}

void net_resolve_free(struct net_resolve *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stopping = true;
	pthread_cond_broadcast(&r->cond);
	if (!resolve_unref_locked(r))
		pthread_mutex_unlock(&r->mu);
}

int net_resolve_fd(const struct net_resolve *r)
{
	return r->efd;
}

static void resolve_lookup(struct net_resolve_req *q)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
		.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG,
	};
	struct addrinfo *ai = NULL;
	q->res.gai = resolve_fn(q->host, q->port, &hints, &ai);
	/* A name of one label ("localhost", an intranet's "build"): the
	 * allow-list named it bare, so the host's own way of finding it
	 * (/etc/hosts, its domains) is what was meant. */
	size_t hl = strlen(q->host);
	if (q->res.gai == EAI_NONAME && hl > 1 && !memchr(q->host, '.', hl - 1)) {
		q->host[hl - 1] = 0;
		q->res.gai = resolve_fn(q->host, q->port, &hints, &ai);
		q->host[hl - 1] = '.';
	}
	q->res.sys_errno = q->res.gai == EAI_SYSTEM ? errno : 0;
	for (struct addrinfo *a = ai; a && q->res.n < NET_RESOLVE_MAX_ADDRS; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof(q->res.addr[0]))
			continue;
		memcpy(&q->res.addr[q->res.n], a->ai_addr, a->ai_addrlen);
		q->res.addrlen[q->res.n++] = a->ai_addrlen;
	}
	if (ai)
		freeaddrinfo(ai);
}

static void *resolve_worker(void *arg)
{
	struct net_resolve *r = arg;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->queue && !r->stopping)
			pthread_cond_wait(&r->cond, &r->mu);
		if (r->stopping)
			break;
		struct net_resolve_req *q = r->queue;
		r->queue = q->next;
		if (!r->queue)
			r->queue_tail = &r->queue;
		r->idle--;
		pthread_mutex_unlock(&r->mu);

		resolve_lookup(q);

		pthread_mutex_lock(&r->mu);
		r->idle++;
		if (q->cancelled || r->stopping) {
			free(q);
			continue;
		}
		q->next = NULL;
		*r->done_tail = q;
		r->done_tail = &q->next;
		uint64_t one = 1;
		if (write(r->efd, &one, sizeof(one)) < 0) {
			/* the counter is already non-zero: the loop will look */
		}
	}
	r->threads--;
	if (!resolve_unref_locked(r))
		pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* With the lock held: one more worker, when none is idle. */
static int resolve_spawn_locked(struct net_resolve *r)
{
	if (r->idle > 0 || r->threads >= NET_RESOLVE_THREADS)
		return 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Signals stay with the thread that runs the loop. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int rc = pthread_create(&t, &attr, resolve_worker, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc)
		return r->threads ? 0 : -rc;	/* the ones there will get to it */
	r->threads++;
	r->idle++;
	r->refs++;
	return 0;
}

int net_resolve_start(struct net_resolve *r, const char *host, uint16_t port, void *data,
		      struct net_resolve_req **ret)
{
	struct net_resolve_req *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	/* Fully qualified: the resolver's search domains are never tried, so
	 * a name the allow-list takes (x.example.org) cannot resolve as
	 * x.example.org.corp.internal. */
	size_t hl = strlen(host);
	snprintf(q->host, sizeof(q->host), "%s%s", host, hl && host[hl - 1] == '.' ? "" : ".");
	snprintf(q->port, sizeof(q->port), "%u", port);
	q->data = data;
	q->res.data = data;
	pthread_mutex_lock(&r->mu);
	int rc = resolve_spawn_locked(r);
	if (rc < 0) {
		pthread_mutex_unlock(&r->mu);
		free(q);
		return rc;
	}
	*r->queue_tail = q;
	r->queue_tail = &q->next;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->mu);
	*ret = q;
	return 0;
}

void net_resolve_cancel(struct net_resolve *r, struct net_resolve_req *q)
{
	pthread_mutex_lock(&r->mu);
	/* Still queued: out of the queue. Done: out of the done list. Being
	 * looked up: marked, and the worker frees it. */
	for (struct net_resolve_req **p = &r->queue; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			if (!*p)
				r->queue_tail = p;
			free(q);
			goto out;
		}
	for (struct net_resolve_req **p = &r->done; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			if (!*p)
				r->done_tail = p;
			free(q);
			goto out;
		}
	q->cancelled = true;
out:
	pthread_mutex_unlock(&r->mu);
}

int net_resolve_next(struct net_resolve *r, struct net_resolve_result *ret)
{
	uint64_t v;
	pthread_mutex_lock(&r->mu);
	struct net_resolve_req *q = r->done;
	if (q) {
		r->done = q->next;
		if (!r->done)
			r->done_tail = &r->done;
	} else if (read(r->efd, &v, sizeof(v)) < 0) {
		/* nothing pending; the counter was already zero */
	}
	pthread_mutex_unlock(&r->mu);
	if (!q)
		return 0;
	*ret = q->res;
	free(q);
	return 1;
}
