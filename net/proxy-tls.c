/* A CONNECT to a secret's host (net/tlsterm.h): once upstream is
 * connected and the 200 sent, the connection leaves the loop for a thread
 * of its own that terminates TLS, puts the secret in, and reports the
 * request as its one net event. net_proxy_free ends such threads
 * (shutdown of their sockets) and waits for them, bounded. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/timeutil.h"
#include "net/proxy-int.h"
#include "net/tlsterm.h"

struct tls_job {
	struct net_proxy *p;
	int slot;
	int cfd, ufd;
	char host[NET_HOST_MAX + 1];
	uint16_t port;
	char addr[INET6_ADDRSTRLEN];
	int64_t t0;
};

bool proxy_tls_wanted(const struct proxy_conn *c)
{
	const struct net_proxy *p = c->p;
	if (!p->cfg.tls || c->req.kind != NET_REQ_CONNECT)
		return false;
	for (size_t i = 0; i < p->cfg.nsecrets; i++)
		if (net_secret_owns(&p->cfg.secrets[i], &c->req.host))
			return true;
	return false;
}

unsigned proxy_tls_open(struct net_proxy *p)
{
	pthread_mutex_lock(&p->tls_mu);
	int n = p->tls_n;
	pthread_mutex_unlock(&p->tls_mu);
	return n > 0 ? (unsigned)n : 0;
}

/* A terminated connection's bytes against max_bytes, as a tunnel's: what
 * would pass it is not carried. The loop sees the budget spent at its
 * next connection (proxy_spend). */
static int tls_spend(void *ud, uint64_t n)
{
	struct net_proxy *p = ud;
	uint64_t before = atomic_fetch_add(&p->used, n);
	return p->cfg.max_bytes && before + n > p->cfg.max_bytes ? -ENOSPC : 0;
}

static void tls_event(struct tls_job *j, const struct net_tls_result *r, int rc)
{
	struct net_proxy *p = j->p;
	if (p->cfg.event_fd < 0)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "net");
	cJSON_AddStringToObject(o, "host", j->host);
	cJSON_AddNumberToObject(o, "port", j->port);
	cJSON_AddStringToObject(o, "method", r->method[0] ? r->method : "CONNECT");
	bool refused = rc == -EPERM || rc == -EBADMSG || rc == -EPROTO || rc == -EMSGSIZE;
	cJSON_AddBoolToObject(o, "allowed", !refused);
	cJSON_AddStringToObject(o, "why", refused ? r->why : "");
	cJSON_AddStringToObject(o, "addr", j->addr);
	cJSON_AddNumberToObject(o, "up", (double)r->up);
	cJSON_AddNumberToObject(o, "down", (double)r->down);
	cJSON_AddNumberToObject(o, "ms", (double)(now_ms() - j->t0));
	cJSON_AddStringToObject(o, "tls", "terminated");
	if (!refused && rc < 0)
		cJSON_AddStringToObject(o, "end", r->why);
	if (r->substituted) {
		cJSON *a = cJSON_AddArrayToObject(o, "substituted");
		for (size_t i = 0; a && i < p->cfg.nsecrets; i++)
			if (r->substituted & (1u << i))
				cJSON_AddItemToArray(a, cJSON_CreateString(p->cfg.secrets[i].name));
	}
	if (r->secret)
		cJSON_AddStringToObject(o, "secret", r->secret);
	if (r->masked)
		cJSON_AddNumberToObject(o, "masked", (double)r->masked);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n';	/* (the NUL's place) */
	if (n + 1 <= PIPE_BUF)
		(void)!write(p->cfg.event_fd, s, n + 1);
	free(s);
}

static void *tls_run(void *arg)
{
	struct tls_job *j = arg;
	struct net_proxy *p = j->p;
	struct net_tls_result r;
	int rc = net_tls_serve(p->cfg.tls, j->cfd, j->ufd, j->host, j->port, p->cfg.secrets, p->cfg.nsecrets,
			       p->cfg.secret_other_ok, p->cfg.idle_ms, tls_spend, p, &r);
	tls_event(j, &r, rc);
	pthread_mutex_lock(&p->tls_mu);
	p->tls_fd[j->slot][0] = p->tls_fd[j->slot][1] = -1;
	p->tls_n--;
	pthread_mutex_unlock(&p->tls_mu);
	free(j);
	return NULL;
}

void proxy_tls_start(struct proxy_conn *c)
{
	struct net_proxy *p = c->p;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct tls_job *j = calloc(1, sizeof(*j));
	int slot = -1;
	pthread_mutex_lock(&p->tls_mu);
	for (int i = 0; j && i < PROXY_TLS_MAX && slot < 0; i++)
		if (p->tls_fd[i][0] < 0)
			slot = i;
	pthread_mutex_unlock(&p->tls_mu);
	if (!j || slot < 0) {
		free(j);
		return proxy_conn_refuse(c, 503, "too many connections to a secret's host at once (%d)", PROXY_TLS_MAX);
	}
	fdio_set_nonblock(c->cfd, false);
	fdio_set_nonblock(c->ufd, false);
	if (fdio_write_full(c->cfd, ok, sizeof(ok) - 1) < 0) {
		free(j);
		return proxy_conn_end(c, "reset");
	}
	*j = (struct tls_job){ .p = p, .slot = slot, .cfd = fcntl(c->cfd, F_DUPFD_CLOEXEC, 3),
			       .ufd = fcntl(c->ufd, F_DUPFD_CLOEXEC, 3), .port = c->req.port, .t0 = c->t0 };
	snprintf(j->host, sizeof(j->host), "%s", c->req.host.name);
	snprintf(j->addr, sizeof(j->addr), "%s", c->addr_text);
	/* The loop's side ends without an event: the thread's is the one. */
	c->logged = true;
	proxy_conn_end(c, NULL);
	if (j->cfd < 0 || j->ufd < 0) {
		if (j->cfd >= 0)
			close(j->cfd);
		if (j->ufd >= 0)
			close(j->ufd);
		free(j);
		return;
	}
	pthread_mutex_lock(&p->tls_mu);
	p->tls_fd[slot][0] = j->cfd;
	p->tls_fd[slot][1] = j->ufd;
	p->tls_n++;
	pthread_mutex_unlock(&p->tls_mu);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, tls_run, j) != 0) {
		pthread_mutex_lock(&p->tls_mu);
		p->tls_fd[slot][0] = p->tls_fd[slot][1] = -1;
		p->tls_n--;
		pthread_mutex_unlock(&p->tls_mu);
		close(j->cfd);
		close(j->ufd);
		free(j);
	}
	pthread_attr_destroy(&a);
}

void proxy_tls_stop_all(struct net_proxy *p)
{
	pthread_mutex_lock(&p->tls_mu);
	for (int i = 0; i < PROXY_TLS_MAX; i++)
		for (int k = 0; k < 2; k++)
			if (p->tls_fd[i][k] >= 0)
				shutdown(p->tls_fd[i][k], SHUT_RDWR);
	pthread_mutex_unlock(&p->tls_mu);
	for (int64_t until = now_ms() + 2000; now_ms() < until;) {
		pthread_mutex_lock(&p->tls_mu);
		int n = p->tls_n;
		pthread_mutex_unlock(&p->tls_mu);
		if (!n)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}
