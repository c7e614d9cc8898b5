#include "http/relay.h"
#include "base/fdio.h"
#include "base/loop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_BUF (64 * 1024)

struct relay_wait {
	int port;		/* the curl socket's local port */
	int curl_fd;
	int far;		/* the dialed connection */
	struct relay_wait *next;
};

struct relay_dir {
	char b[RELAY_BUF];
	size_t len;
	bool eof;		/* the source ended: dst is shut for writing once drained */
};

struct relay_conn {
	struct relay *h;
	int near, far;		/* curl's accepted connection; the dialed one */
	struct relay_dir up, down;	/* near->far, far->near */
	bool far_gone;		/* the proxy hung up: what it sent goes on to curl, then the end */
	struct relay_conn *next;
};

struct relay {
	struct loop *loop;
	int fd, port;		/* the listener, or -1 */
	int reserve;		/* a descriptor given up when out of them (fdio_accept) */
	struct relay_wait *waits;
	struct relay_conn *conns;
};

static void relay_conn_free(struct relay_conn *c)
{
	struct relay *h = c->h;
	for (struct relay_conn **p = &h->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	loop_del(h->loop, c->near);
	close(c->near);
	if (c->far >= 0) {
		loop_del(h->loop, c->far);
		close(c->far);
	}
	free(c);
}

static void relay_want(struct relay_conn *c)
{
	/* near: read while up has room (once the proxy is gone: to its end,
	 * thrown away), write while down holds bytes. */
	loop_mod(c->h->loop, c->near,
		 (!c->up.eof && c->up.len < RELAY_BUF ? EPOLLIN : 0) | (c->down.len ? EPOLLOUT : 0));
	if (c->far >= 0)
		loop_mod(c->h->loop, c->far,
			 (!c->down.eof && c->down.len < RELAY_BUF ? EPOLLIN : 0) | (c->up.len ? EPOLLOUT : 0));
}

/* Move what src has into d and what d holds into dst (dst -1: gone, the
 * bytes are dropped): 0, or <0 when the connection is over. */
static int relay_move(struct relay_dir *d, int src, int dst)
{
	if (src >= 0 && !d->eof && d->len < RELAY_BUF) {
		ssize_t n = recv(src, d->b + d->len, RELAY_BUF - d->len, MSG_DONTWAIT);
		if (n > 0)
			d->len += (size_t)n;
		else if (n == 0)
			d->eof = true;
		else if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	if (d->len && dst < 0) {
		d->len = 0;
	} else if (d->len) {
		ssize_t n = send(dst, d->b, d->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			memmove(d->b, d->b + n, d->len - (size_t)n);
			d->len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		}
	}
	if (d->eof && !d->len && dst >= 0)
		shutdown(dst, SHUT_WR);
	return 0;
}

/* epoll reports a hang-up and an error whatever was asked for: a side
 * that reports one is read to its end and taken out of the loop, never
 * left to wake it again. */
static void relay_on_io(struct loop *l, int fd, uint32_t events, void *data)
{
	struct relay_conn *c = data;
	if (events & EPOLLERR) {
		relay_conn_free(c);
		return;
	}
	if (relay_move(&c->up, c->near, c->far) < 0 || relay_move(&c->down, c->far, c->near) < 0) {
		relay_conn_free(c);
		return;
	}
	if (fd == c->near && (events & EPOLLHUP)) {
		relay_conn_free(c);	/* curl is gone: nothing it would read */
		return;
	}
	if (fd == c->far && (events & EPOLLHUP) && !c->far_gone) {
		c->far_gone = c->down.eof = true;
		loop_del(l, c->far);
		close(c->far);
		c->far = -1;
		relay_move(&c->down, -1, c->near);
	}
	/* Over when curl's side ended both ways, or the proxy is gone and all
	 * it sent went on (curl's end is then read and dropped till it closes). */
	if ((c->up.eof && c->down.eof && !c->up.len && !c->down.len) || (c->far_gone && c->up.eof && !c->down.len)) {
		relay_conn_free(c);
		return;
	}
	relay_want(c);
}

static void relay_on_accept(struct loop *l, int lfd, uint32_t events, void *data)
{
	struct relay *h = data;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int fd = fdio_accept(lfd, (struct sockaddr *)&peer, &len, &h->reserve);
		if (fd == -EMFILE)
			continue;	/* (shed: out of descriptors) */
		if (fd < 0)
			return;
		struct relay_wait **p = &h->waits;
		while (*p && !(peer.sin_family == AF_INET && peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
			       ntohs(peer.sin_port) == (*p)->port))
			p = &(*p)->next;
		struct relay_conn *c = *p ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			close(fd);	/* not one of curl's */
			continue;
		}
		struct relay_wait *w = *p;
		*p = w->next;
		*c = (struct relay_conn){ .h = h, .near = fd, .far = w->far };
		free(w);
		fdio_set_nonblock(c->far, true);
		if (loop_add(h->loop, c->near, EPOLLIN, relay_on_io, c) < 0 ||
		    loop_add(h->loop, c->far, EPOLLIN, relay_on_io, c) < 0) {
			loop_del(h->loop, c->near);
			close(c->near);
			close(c->far);
			free(c);
			continue;
		}
		c->next = h->conns;
		h->conns = c;
	}
}

int relay_port(struct relay *h)
{
	if (h->fd >= 0)
		return h->port;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || loop_add(h->loop, fd, EPOLLIN, relay_on_accept, h) < 0) {
		int r = -errno;
		if (fd >= 0)
			close(fd);
		return r ? r : -EIO;
	}
	h->fd = fd;
	h->port = ntohs(sa.sin_port);
	h->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return h->port;
}

int relay_new(struct relay **ret, struct loop *l)
{
	struct relay *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct relay){ .loop = l, .fd = -1, .reserve = -1 };
	*ret = h;
	return 0;
}

void relay_free(struct relay *h)
{
	if (!h)
		return;
	while (h->conns)
		relay_conn_free(h->conns);
	for (struct relay_wait *w = h->waits, *n; w; w = n) {
		n = w->next;
		close(w->far);
		free(w);
	}
	if (h->fd >= 0) {
		loop_del(h->loop, h->fd);
		close(h->fd);
	}
	if (h->reserve >= 0)
		close(h->reserve);
	free(h);
}

int relay_expect(struct relay *h, int far, char *msg, size_t n)
{
	struct relay_wait *w = calloc(1, sizeof(*w));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (!w || fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		snprintf(msg, n, "cannot make a socket for the proxy: %s", strerror(errno));
		free(w);
		if (fd >= 0)
			close(fd);
		close(far);
		return -EIO;
	}
	*w = (struct relay_wait){ .port = ntohs(sa.sin_port), .curl_fd = fd, .far = far, .next = h->waits };
	h->waits = w;
	return fd;
}

void relay_forget(struct relay *h, int fd)
{
	for (struct relay_wait **p = &h->waits; *p; p = &(*p)->next)
		if ((*p)->curl_fd == fd) {
			struct relay_wait *w = *p;
			*p = w->next;
			close(w->far);
			free(w);
			return;
		}
}
