#include "tools/cancel.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int cancel_init(struct cancel *c)
{
	atomic_init(&c->set, false);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return c->efd < 0 ? -errno : 0;
}

void cancel_fire(struct cancel *c)
{
	atomic_store(&c->set, true);
	uint64_t one = 1;
	ssize_t n = write(c->efd, &one, sizeof(one));
	(void)n;
}

void cancel_free(struct cancel *c)
{
	if (c->efd >= 0)
		close(c->efd);
	c->efd = -1;
}
