/* Trees for the workspace-changes tests: files made in a line, and a
 * tree's listing (every entry's path, type, mode, and a SHA-256 of its
 * content or its symlink's target) to compare two trees byte for byte. */
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"

static inline void put_n(const char *dir, const char *rel, const void *p, size_t n, mode_t mode)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	unlink(path);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd >= 0) {
		fdio_write_full(fd, p, n);
		fchmod(fd, mode);
	}
}

static inline void put(const char *dir, const char *rel, const char *content)
{
	put_n(dir, rel, content, strlen(content), 0644);
}

static inline char *get(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	char *b = NULL;
	if (fdio_read_file(AT_FDCWD, p, 1 << 20, &b, NULL) < 0)
		return NULL;
	return b;
}

static inline void mk(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	mkdir(p, 0755);
}

static inline void ln(const char *dir, const char *rel, const char *target)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	unlink(p);
	symlink(target, p);
}

static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int tree_name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static inline void tree_list_into(const char *root, const char *rel, struct buf *out)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel);
	struct dirent **names;
	int n = scandir(dir, &names, NULL, tree_name_cmp);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char r[PATH_MAX], p[PATH_MAX];
		snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", name);
		snprintf(p, sizeof(p), "%s/%s", root, r);
		struct stat st;
		if (strcmp(name, ".") && strcmp(name, "..") && lstat(p, &st) == 0) {
			char what[2 * HASH_SHA256_LEN + 1] = "";
			if (S_ISLNK(st.st_mode)) {
				ssize_t k = readlink(p, what, sizeof(what) - 1);
				what[k > 0 ? k : 0] = 0;
			} else if (S_ISREG(st.st_mode)) {
				struct hash_sha256 h;
				hash_sha256_init(&h);
				_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
				char b[65536];
				ssize_t k;
				while (fd >= 0 && (k = read(fd, b, sizeof(b))) > 0)
					hash_sha256_update(&h, b, (size_t)k);
				uint8_t d[HASH_SHA256_LEN];
				hash_sha256_final(&h, d);
				hash_hex(d, sizeof(d), what);
			}
			buf_printf(out, "%s %c %04o %s\n", r, S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f',
				   (unsigned)(st.st_mode & 07777), what);
			if (S_ISDIR(st.st_mode))
				tree_list_into(root, r, out);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* Every entry of the tree at root, one line each (malloc'd). */
static inline char *tree_list(const char *root)
{
	struct buf b;
	buf_init(&b, 16 << 20);
	tree_list_into(root, "", &b);
	buf_cstr(&b);
	return b.data ? b.data : strdup("");
}
