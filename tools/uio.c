#include "tools/uio.h"
#include "base/cleanup.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#define UIO_IO 1
#define UIO_TOKEN 2
#define UIO_CANCEL 3
#define UIO_REBIND 4
#define UIO_CHUNK (256u * 1024)

struct uio {
	struct io_uring ring;
	int efd;
	bool token_armed, token_fired;
};

int uio_new(struct uio **ret, int cancel_efd)
{
	struct uio *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	int r = io_uring_queue_init(8, &u->ring, 0);
	if (r < 0) {
		free(u);
		return r;
	}
	u->efd = cancel_efd;
	*ret = u;
	return 0;
}

void uio_free(struct uio *u)
{
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	free(u);
}

int uio_rebind(struct uio *u, int cancel_efd)
{
	bool token = !u->token_armed, cancel = !u->token_armed;
	if (u->token_armed) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_cancel64(sqe, UIO_TOKEN, 0);
		io_uring_sqe_set_data64(sqe, UIO_REBIND);
		int r = io_uring_submit(&u->ring);
		if (r < 0)
			return r;
	}
	/* Wait for the poll's completion (cancelled, or fired meanwhile) and
	 * the cancel request's own; drop any left from an earlier cancel. */
	while (!token || !cancel) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(&u->ring, &cqe);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		uint64_t what = io_uring_cqe_get_data64(cqe);
		token |= what == UIO_TOKEN;
		cancel |= what == UIO_REBIND;
		io_uring_cqe_seen(&u->ring, cqe);
	}
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(&u->ring, &cqe) == 0)
		io_uring_cqe_seen(&u->ring, cqe);
	u->token_armed = u->token_fired = false;
	u->efd = cancel_efd;
	return 0;
}

static ssize_t uio_submit(struct uio *u, bool write, int fd, void *buf, size_t len, off_t off)
{
	if (u->token_fired)
		return -ECANCELED;
	struct io_uring_sqe *sqe;
	if (!u->token_armed && u->efd >= 0) {
		sqe = io_uring_get_sqe(&u->ring);
		io_uring_prep_poll_add(sqe, u->efd, POLLIN);
		io_uring_sqe_set_data64(sqe, UIO_TOKEN);
		u->token_armed = true;
	}
	sqe = io_uring_get_sqe(&u->ring);
	if (write)
		io_uring_prep_write(sqe, fd, buf, (unsigned)len, (uint64_t)off);
	else
		io_uring_prep_read(sqe, fd, buf, (unsigned)len, (uint64_t)off);
	io_uring_sqe_set_data64(sqe, UIO_IO);
	int r = io_uring_submit(&u->ring);
	if (r < 0)
		return r;
	bool io_done = false, cancelling = false;
	ssize_t res = 0;
	while (!io_done) {
		struct io_uring_cqe *cqe;
		r = io_uring_wait_cqe(&u->ring, &cqe);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		uint64_t what = io_uring_cqe_get_data64(cqe);
		int cres = cqe->res;
		io_uring_cqe_seen(&u->ring, cqe);
		if (what == UIO_IO) {
			io_done = true;
			res = cres;
		} else if (what == UIO_TOKEN) {
			u->token_armed = false;
			u->token_fired = true;
			if (!cancelling) {
				cancelling = true;
				sqe = io_uring_get_sqe(&u->ring);
				io_uring_prep_cancel64(sqe, UIO_IO, 0);
				io_uring_sqe_set_data64(sqe, UIO_CANCEL);
				io_uring_submit(&u->ring);
			}
		}
	}
	if (cancelling && res < 0)
		return -ECANCELED;
	return res;
}

ssize_t uio_read(struct uio *u, int fd, void *buf, size_t len, off_t off)
{
	return uio_submit(u, false, fd, buf, len, off);
}

ssize_t uio_write(struct uio *u, int fd, const void *buf, size_t len, off_t off)
{
	return uio_submit(u, true, fd, (void *)buf, len, off);
}

int uio_read_file(struct uio *u, int fd, size_t cap, char **ret, size_t *ret_len)
{
	size_t alloc = 65536, len = 0;
	_cleanup_free_ char *b = malloc(alloc);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (alloc - len < 4096 + 1) {
			if (alloc > cap + 1)
				return -EFBIG;
			alloc *= 2;
			char *nb = realloc(b, alloc);
			if (!nb)
				return -ENOMEM;
			b = nb;
		}
		size_t want = MIN(alloc - len - 1, UIO_CHUNK);
		ssize_t n = uio_read(u, fd, b + len, want, -1);
		if (n == -EAGAIN)
			continue;
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > cap)
			return -EFBIG;
	}
	b[len] = 0;
	*ret = TAKE_PTR(b);
	*ret_len = len;
	return 0;
}

int uio_write_all(struct uio *u, int fd, const void *buf, size_t len)
{
	const char *p = buf;
	off_t off = 0;
	while (len) {
		ssize_t n = uio_write(u, fd, p, MIN(len, UIO_CHUNK), off);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}
