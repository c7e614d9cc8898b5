/* A file as a session's box sees it, read on the host: its copy-on-write
 * layer over the workspace (or the workspace itself with --rw), never
 * following a symlink. The terminal session's diffs and ward acp's. */
#include "cmd/session.h"
#include "base/cleanup.h"
#include "workspace/layers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* rel beneath root, no symlink followed anywhere on the way. */
static int read_beneath(const char *root, const char *rel, size_t cap, char **ret, size_t *len)
{
	_cleanup_close_ int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, dir, rel, &how, sizeof(how));
	if (fd < 0)
		return errno == ELOOP ? -EOPNOTSUPP : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* An overlay whiteout: deleted in the box. */
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
		return -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > cap)
		return -EFBIG;
	char *d = malloc((size_t)st.st_size + 1);
	if (!d)
		return -ENOMEM;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, d + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == (size_t)st.st_size)
			break;
	}
	d[n] = 0;
	*ret = d;
	*len = n;
	return 0;
}

int session_file_read(const struct session_ws *w, bool rw, const char *path, size_t cap, char **ret, size_t *len)
{
	if (!path || !*path || !w->workspace || !w->workspace[0])
		return -EOPNOTSUPP;
	const char *rel = path;
	if (!strncmp(rel, "/workspace", 10) && (rel[10] == '/' || !rel[10]))
		rel += 10;
	else if (rel[0] == '/')
		return -EOPNOTSUPP;	/* outside the workspace: the box's own files */
	while (*rel == '/')
		rel++;
	while (!strncmp(rel, "./", 2))
		rel += 2;
	if (!*rel)
		return -EINVAL;
	if (rw)
		return read_beneath(w->workspace, rel, cap, ret, len);
	struct layers L = { .lock_fd = -1 };
	int k = session_changes_read(w, &L, NULL, NULL);
	int r = -ENOENT;
	if (k > 0) {
		r = read_beneath(L.upper, rel, cap, ret, len);
		layers_release(&L);
		if (r == 0 || (r != -ENOENT && r != -ENOTDIR))
			return r;
		/* A whiteout in the layer: deleted. */
		if (r == -ENOENT) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/%s", L.upper, rel);
			struct stat st;
			if (lstat(p, &st) == 0)
				return -ENOENT;
		}
	}
	return read_beneath(w->workspace, rel, cap, ret, len);
}

