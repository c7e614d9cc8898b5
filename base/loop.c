#include "base/loop.h"
#include "base/timeutil.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct loop_entry {
	int fd;
	loop_fd_cb *cb;
	void *data;
	struct loop_entry *next;
};

struct loop {
	int epfd;
	struct loop_entry *entries;
	/* An entry removed during dispatch is kept until dispatch ends. */
	struct loop_entry *dead;
	unsigned gen;
};

int loop_new(struct loop **ret_loop)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = -errno;
		free(l);
		return r;
	}
	*ret_loop = l;
	return 0;
}

static void loop_free_list(struct loop_entry *e)
{
	while (e) {
		struct loop_entry *n = e->next;
		free(e);
		e = n;
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	loop_free_list(l->entries);
	loop_free_list(l->dead);
	free(l);
}

int loop_add(struct loop *l, int fd, uint32_t events, loop_fd_cb *cb, void *data)
{
	struct loop_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct loop_entry){ .fd = fd, .cb = cb, .data = data, .next = l->entries };
	struct epoll_event ev = { .events = events, .data.ptr = e };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = -errno;
		free(e);
		return r;
	}
	l->entries = e;
	return 0;
}

static struct loop_entry *loop_find(struct loop *l, int fd, struct loop_entry ***ret_prev)
{
	for (struct loop_entry **p = &l->entries; *p; p = &(*p)->next)
		if ((*p)->fd == fd) {
			if (ret_prev)
				*ret_prev = p;
			return *p;
		}
	return NULL;
}

int loop_mod(struct loop *l, int fd, uint32_t events)
{
	struct loop_entry *e = loop_find(l, fd, NULL);
	if (!e)
		return -ENOENT;
	struct epoll_event ev = { .events = events, .data.ptr = e };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct loop *l, int fd)
{
	struct loop_entry **prev;
	struct loop_entry *e = loop_find(l, fd, &prev);
	if (!e)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	*prev = e->next;
	e->cb = NULL;
	e->next = l->dead;
	l->dead = e;
}

int loop_run_once(struct loop *l, int64_t deadline_ms)
{
	struct epoll_event evs[32];
	int timeout = -1;
	if (deadline_ms >= 0) {
		int64_t d = deadline_ms - now_ms();
		timeout = d < 0 ? 0 : d > 60000 ? 60000 : (int)d;
	}
	int n = epoll_wait(l->epfd, evs, 32, timeout);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct loop_entry *e = evs[i].data.ptr;
		if (e->cb)
			e->cb(l, e->fd, evs[i].events, e->data);
	}
	loop_free_list(l->dead);
	l->dead = NULL;
	return n;
}

int loop_fd(const struct loop *l)
{
	return l->epfd;
}
