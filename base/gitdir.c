#include "base/gitdir.h"
#include "base/cleanup.h"
#include "base/mnt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The UTF-8 of a code point HFS+ ignores in a name (git's utf8.c,
 * next_hfs_char): U+200C-200F, U+202A-202E, U+206A-206F, U+FEFF. Its
 * length, or 0. */
static size_t hfs_ignored(const unsigned char *s, size_t left)
{
	if (left < 3)
		return 0;
	if (s[0] == 0xe2 && s[1] == 0x80 && ((s[2] >= 0x8c && s[2] <= 0x8f) || (s[2] >= 0xaa && s[2] <= 0xae)))
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xaa && s[2] <= 0xaf)
		return 3;
	if (s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		return 3;
	return 0;
}

bool gitdir_name(const char *name, size_t len)
{
	char k[8];
	size_t n = 0;
	const unsigned char *s = (const unsigned char *)name;
	for (size_t i = 0; i < len;) {
		size_t skip = hfs_ignored(s + i, len - i);
		if (skip) {
			i += skip;
			continue;
		}
		if (n == sizeof(k))
			return false;
		k[n++] = (char)s[i++];
	}
	/* NTFS drops trailing dots and spaces. */
	while (n > 0 && (k[n - 1] == '.' || k[n - 1] == ' '))
		n--;
	return (n == 4 && !strncasecmp(k, ".git", 4)) || (n == 5 && !strncasecmp(k, "git~1", 5));
}

bool gitdir_in_path(const char *rel)
{
	for (const char *p = rel; *p;) {
		size_t l = strcspn(p, "/");
		if (gitdir_name(p, l))
			return true;
		p += l;
		p += *p == '/';
	}
	return false;
}

bool gitdir_looks_bare(bool (*has)(void *ud, const char *name, bool dir), void *ud)
{
	return has(ud, "HEAD", false) && ((has(ud, "objects", true) && has(ud, "refs", true)) || has(ud, "commondir", false));
}

static bool has_at(void *ud, const char *name, bool dir)
{
	struct stat st;
	if (fstatat(*(int *)ud, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
}

bool gitdir_bare_at(int dfd)
{
	return gitdir_looks_bare(has_at, &dfd);
}

static int walk(int dfd, char *path, size_t plen, int depth, int (*fn)(int, const char *, const char *, void *),
		void *ud, struct gitdir_walk *w)
{
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (++w->entries > (w->max_entries ? w->max_entries : GITDIR_WALK_ENTRIES)) {
			w->cut = true;
			break;
		}
		unsigned char type = de->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		bool named = gitdir_name(name, strlen(name));
		if (type != DT_DIR && !(type == DT_REG && named))
			continue;
		int l = snprintf(path + plen, PATH_MAX - plen, "%s%s", plen ? "/" : "", name);
		if (l < 0 || (size_t)l >= PATH_MAX - plen) {
			w->cut = true;
			continue;
		}
		size_t sublen = plen + (size_t)l;
		if (named) {
			w->found++;
			r = fn(dfd, name, path, ud);
		} else {
			_cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				;	/* unreadable: passed over */
			else if (gitdir_bare_at(sub)) {
				w->found++;
				r = fn(dfd, name, path, ud);
			} else if (depth + 1 >= GITDIR_WALK_DEPTH)
				w->cut = true;
			else
				r = walk(sub, path, sublen, depth + 1, fn, ud, w);
		}
		path[plen] = 0;
	}
	closedir(d);
	return r;
}

int gitdir_walk(int dir, const char *rel, int (*fn)(int dfd, const char *name, const char *path, void *ud), void *ud,
		struct gitdir_walk *w)
{
	char path[PATH_MAX];
	int l = snprintf(path, sizeof(path), "%s", rel);
	if (l < 0 || (size_t)l >= sizeof(path))
		return -ENAMETOOLONG;
	return walk(dir, path, (size_t)l, 0, fn, ud, w);
}

struct ro_ctx {
	const char *root;
	char *bad;
	size_t n;
};

/* The entry bound read-only over itself, by descriptor (the name is
 * never resolved again, so nothing can be swapped in between). */
static int bind_ro(int dfd, const char *name, const char *path, void *ud)
{
	struct ro_ctx *x = ud;
	snprintf(x->bad, x->n, "%s/%s", x->root, path);
	_cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	_cleanup_close_ int t = (int)syscall(SYS_open_tree, fd, "",
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (t < 0)
		return -errno;
	struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	bool set = syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) == 0;
	if (!set && errno != ENOSYS)
		return -errno;
	if (syscall(SYS_move_mount, t, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	/* Before Linux 5.12: the top mount, by path (nothing of the box runs
	 * yet to change what it names). */
	return set ? 0 : mnt_remount_ro(x->bad, MS_NOSUID | MS_NODEV);
}

int gitdir_ro(const char *root, struct gitdir_walk *w, char *bad, size_t n)
{
	snprintf(bad, n, "%s", root);
	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ro_ctx x = { .root = root, .bad = bad, .n = n };
	/* A root that is a repository itself is one whole. */
	if (gitdir_bare_at(fd)) {
		w->found++;
		return bind_ro(fd, ".", "", &x);
	}
	int r = gitdir_walk(fd, "", bind_ro, &x, w);
	return r < 0 ? r : 0;
}
