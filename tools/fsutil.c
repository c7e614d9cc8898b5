#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int fs_path(const struct tool_ctx *ctx, const char *in, char *out, size_t n)
{
	if (!in || !*in)
		return -EINVAL;
	int k = in[0] == '/' ? snprintf(out, n, "%s", in)
			     : snprintf(out, n, "%s%s%s", ctx->cwd, strcmp(ctx->cwd, "/") ? "/" : "", in);
	if (k < 0 || (size_t)k >= n)
		return -ENAMETOOLONG;
	/* Tidy trailing slashes for messages; "." and ".." are left to the
	 * kernel, which resolves them inside the box's root. */
	size_t l = strlen(out);
	while (l > 1 && out[l - 1] == '/')
		out[--l] = 0;
	return 0;
}

int fs_open(const struct tool_ctx *ctx, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, ctx->root_fd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* path's directory part into dir, its last component into name. */
static int fs_split(const char *path, char *dir, size_t dn, char name[NAME_MAX + 1])
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	if (strlen(base) > NAME_MAX)
		return -ENAMETOOLONG;
	snprintf(name, NAME_MAX + 1, "%s", base);
	size_t l = slash ? (size_t)(slash - path) : 0;
	if (slash == path)
		l = 1;	/* "/x": the root */
	if (!slash) {
		snprintf(dir, dn, ".");
		return 0;
	}
	if (l >= dn)
		return -ENAMETOOLONG;
	memcpy(dir, path, l);
	dir[l] = 0;
	return 0;
}

/* Make every missing directory of dir, one component at a time, each
 * resolved from the root as fs_open does. */
static int fs_mkdirs(const struct tool_ctx *ctx, const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	size_t l = strlen(p);
	for (size_t i = 1; i <= l; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char saved = p[i];
		p[i] = 0;
		int fd = fs_open(ctx, p, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			close(fd);
		} else if (fd == -ENOENT) {
			char parent[PATH_MAX], name[NAME_MAX + 1];
			int r = fs_split(p, parent, sizeof(parent), name);
			if (r < 0)
				return r;
			_cleanup_close_ int pfd = fs_open(ctx, parent, O_PATH | O_DIRECTORY, 0);
			if (pfd < 0)
				return pfd;
			if (mkdirat(pfd, name, 0755) < 0 && errno != EEXIST)
				return -errno;
		} else {
			return fd;
		}
		p[i] = saved;
	}
	return 0;
}

int fs_open_parent(const struct tool_ctx *ctx, const char *path, bool mkdirs, char ret_name[NAME_MAX + 1])
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int r = fs_split(path, dir, sizeof(dir), name);
	if (r < 0)
		return r;
	int fd = fs_open(ctx, dir, O_PATH | O_DIRECTORY, 0);
	if (fd == -ENOENT && mkdirs) {
		r = fs_mkdirs(ctx, dir);
		if (r < 0)
			return r;
		fd = fs_open(ctx, dir, O_PATH | O_DIRECTORY, 0);
	}
	if (fd >= 0)
		memcpy(ret_name, name, sizeof(name));
	return fd;
}

int fs_open_error(struct tool_result *res, const char *tool, const char *path, int err)
{
	switch (err) {
	case ENOENT:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s does not exist", tool, path);
	case EACCES:
	case EPERM:
		return tool_result_set(res, OUTCOME_FAILED, "%s: permission denied: %s", tool, path);
	case ENOTDIR:
		return tool_result_set(res, OUTCOME_FAILED, "%s: a part of %s is not a directory", tool, path);
	case ELOOP:
		return tool_result_set(res, OUTCOME_FAILED,
				       "%s: %s goes through too many symlinks, or through a /proc link to a process's "
				       "files (fd, cwd, root, exe), which tools do not follow", tool, path);
	case EXDEV:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s leads outside the box's root", tool, path);
	case EROFS:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s is on a read-only file system; only /workspace and /tmp are writable", tool, path);
	case ENOSPC:
	case EDQUOT:
		return tool_result_set(res, OUTCOME_FAILED, "%s: no space left for %s: the box's disk is full", tool, path);
	case ECANCELED:
		return tool_result_set(res, OUTCOME_CANCELLED, "%s: cancelled", tool);
	default:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s: %s", tool, path, strerror(err));
	}
}

bool fs_looks_binary(const char *p, size_t n)
{
	return memchr(p, 0, MIN(n, 8192)) != NULL;
}

/* A new file beside the target, named .ward-tmp-XXXXXX. */
static int fs_tmpfile(int dfd, char name[32])
{
	for (int i = 0; i < 16; i++) {
		uint32_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)now_ms() ^ (uint32_t)i * 2654435761u;
		snprintf(name, 32, ".ward-tmp-%08x", rnd);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

int fs_replace(const struct tool_ctx *ctx, const char *path, const char *content, size_t len, bool *ret_created)
{
	char cur[PATH_MAX], name[NAME_MAX + 1];
	snprintf(cur, sizeof(cur), "%s", path);
	_cleanup_close_ int dfd = -1;
	struct stat st;
	bool exists = false;
	/* Writing through a symlink replaces the file it names, as an editor
	 * would; each hop is resolved again beneath the box's root. */
	for (int hops = 0;; hops++) {
		if (hops > 40)
			return -ELOOP;
		if (dfd >= 0)
			close(dfd);
		dfd = fs_open_parent(ctx, cur, false, name);
		if (dfd < 0)
			return dfd;
		struct statfs sf;
		if (fstatfs(dfd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC)
			return -EACCES;	/* /proc: its links are the kernel's, not files */
		exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (!exists) {
			if (errno != ENOENT)
				return -errno;
			break;
		}
		if (!S_ISLNK(st.st_mode))
			break;
		char t[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
		if (n <= 0)
			return n < 0 ? -errno : -ENOENT;
		t[n] = 0;
		if (t[0] == '/') {
			snprintf(cur, sizeof(cur), "%s", t);
		} else {
			char *slash = strrchr(cur, '/');
			size_t keep = slash ? (size_t)(slash - cur) + 1 : 0;
			if (keep + (size_t)n >= sizeof(cur))
				return -ENAMETOOLONG;
			memcpy(cur + keep, t, (size_t)n + 1);
		}
	}
	if (exists && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	char tmp[32];
	_cleanup_close_ int fd = fs_tmpfile(dfd, tmp);
	if (fd < 0)
		return fd;
	int r = uio_write_all(ctx->uio, fd, content, len);
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	/* Never a setuid or setgid bit: nothing the box writes carries
	 * privilege out of it. */
	if (r >= 0 && fchmod(fd, exists ? st.st_mode & 01777 : 0644) < 0)
		r = -errno;
	/* The last point of no return: after the rename the new file is whole. */
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	else if (ret_created)
		*ret_created = !exists;
	return r;
}
