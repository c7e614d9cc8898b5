#include "base/fdio.h"
#include "base/cleanup.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/openat2.h>

static int fdio_wait(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };
	for (;;) {
		int r = poll(&p, 1, -1);
		if (r >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int fdio_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int r = fdio_wait(fd, POLLOUT);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fdio_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int r = fdio_wait(fd, POLLIN);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t fdio_read_some(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

ssize_t fdio_write_some(int fd, const void *buf, size_t len)
{
	for (;;) {
		ssize_t n = write(fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

int fdio_read_file(int dirfd, const char *path, size_t cap, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return fdio_read_fd(fd, cap, ret_buf, ret_len);
}

int fdio_open_beneath(int dirfd, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd < 0 ? -errno : fd;
	/* No openat2 (an old kernel, or a container's filter): one component
	 * at a time, none of them a link, none of them "..". */
	if (path[0] == '/')
		return -EXDEV;
	_cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	for (const char *p = path;;) {
		size_t l = strcspn(p, "/");
		char comp[256];
		if (l == 0 || l >= sizeof(comp))
			return -EINVAL;
		memcpy(comp, p, l);
		comp[l] = 0;
		if (!strcmp(comp, ".."))
			return -EXDEV;
		if (!p[l]) {
			fd = openat(cur, comp, (int)how.flags);
			return fd < 0 ? -errno : fd;
		}
		int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		close(cur);
		cur = next;
		p += l + 1;
	}
}

int fdio_read_fd(int fd, size_t cap, char **ret_buf, size_t *ret_len)
{
	size_t size = 0, alloc = 4096;
	_cleanup_free_ char *buf = malloc(alloc);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (size + 1 >= alloc) {
			if (alloc > cap + 1)
				return -EFBIG;
			alloc *= 2;
			char *nb = realloc(buf, alloc);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		ssize_t n = fdio_read_some(fd, buf + size, alloc - size - 1);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > cap)
			return -EFBIG;
	}
	buf[size] = 0;
	if (ret_len)
		*ret_len = size;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int fdio_write_str(int dirfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n;
	do
		n = write(fd, s, strlen(s));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return 0;
}

int fdio_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	if (fcntl(fd, F_SETFL, fl) < 0)
		return -errno;
	return 0;
}

static bool fdio_in(int fd, const int *keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keep[i] == fd)
			return true;
	return false;
}

void fdio_close_all_but(int lowfd, const int *keep, size_t n)
{
	/* Close ranges between kept fds; close_range exists on every kernel
	 * ward supports (5.9+), with a /proc walk as fallback. */
	int sorted[16];
	size_t m = 0;
	for (size_t i = 0; i < n && m < ARRAY_SIZE(sorted); i++)
		if (keep[i] >= lowfd)
			sorted[m++] = keep[i];
	for (size_t i = 1; i < m; i++)
		for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			int t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	unsigned lo = (unsigned)lowfd;
	bool ok = true;
	for (size_t i = 0; i <= m && ok; i++) {
		unsigned hi = i < m ? (unsigned)sorted[i] : ~0U;
		if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) < 0)
			ok = false;
		if (i < m)
			lo = (unsigned)sorted[i] + 1;
	}
	if (ok)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	struct dirent *de;
	int dfd = dirfd(d);
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || fd < lowfd || fd == dfd || fdio_in((int)fd, keep, n))
			continue;
		close((int)fd);
	}
	closedir(d);
}

int fdio_send_fd(int sock, int fd)
{
	char b = 'F';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	ssize_t n;
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : n < 0 ? -errno : -EIO;
}

int fdio_recv_fd(int sock, int64_t until_ms)
{
	for (;;) {
		int64_t left = until_ms < 0 ? -1 : until_ms - now_ms();
		if (until_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = { .fd = sock, .events = POLLIN };
		int pr = poll(&pf, 1, left < 0 ? -1 : (int)left);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0)
			break;
	}
	char b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	int got = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got < 0)
				got = fd;
			else
				close(fd);
		}
	}
	if (got >= 0)
		return got;
	return n == 0 ? -EPIPE : -EBADMSG;
}

static int fdio_unix_addr(const char *path, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

int fdio_unix_listen(const char *path, int backlog, bool nonblock)
{
	struct sockaddr_un sa;
	int r = fdio_unix_addr(path, &sa);
	if (r < 0)
		return r;
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int fdio_unix_connect(const char *path, bool nonblock)
{
	struct sockaddr_un sa;
	int r = fdio_unix_addr(path, &sa);
	if (r < 0)
		return r;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int fdio_accept(int lfd, struct sockaddr *sa, socklen_t *len, int *reserve)
{
	int fd = accept4(lfd, sa, len, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0)
		return fd;
	int r = -errno;
	if ((r != -EMFILE && r != -ENFILE) || *reserve < 0)
		return r;
	close(*reserve);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	*reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return -EMFILE;
}

bool fdio_peer_is(int fd, uid_t uid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && (cr.uid == uid || cr.uid == 0);
}

int fdio_write_atomic(const char *path, const void *data, size_t n, mode_t mode)
{
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	/* mode, exactly: not a leftover's. */
	int r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r >= 0)
		r = fdio_write_full(fd, data, n);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	/* The rename itself, durable. */
	_cleanup_free_ char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash) {
		*slash = 0;
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return 0;
}

int fdio_std_open(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free descriptor: fd itself, as those below are open. */
		int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n < 0)
			return -errno;
		if (n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
	return 0;
}

int fdio_sealed_memfd(const char *name, const void *data, size_t n)
{
	_cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = fdio_write_full(fd, data, n);
	if (r < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}
