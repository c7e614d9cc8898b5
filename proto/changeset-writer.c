/* The change set's one writer (proto/changeset.h): an upper directory
 * walked into a list of its entries, then the stream filled from the list
 * a chunk at a time, a file's bytes read as each chunk is filled, so that
 * a large file never sits in memory. The guest sends its workspace's
 * upper with it; the host sends the upper it kept to a fresh guest. */
#include "proto/changeset.h"
#include "base/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <unistd.h>

struct cs_entry {
	char *path;
	char *target;		/* a symlink's */
	char op;
	bool opaque;
	mode_t mode;
	int64_t mtime_ns;
};

struct changeset_writer {
	int upper;
	const struct changeset_marks *m;
	int64_t keep_before_ns;
	struct cs_entry *v;
	size_t n, cap, i;
	int fd;			/* the file whose bytes are being written */
	uint64_t left;
	bool head, end;
	uint64_t skipped;
	char first_skipped[CHANGESET_PATH_MAX + 1];
};

static int64_t cs_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int cs_add(struct changeset_writer *w, const struct cs_entry *x)
{
	if (w->n >= CHANGESET_ENTRIES_MAX)
		return -E2BIG;
	if (w->n == w->cap) {
		size_t c = w->cap ? w->cap * 2 : 256;
		struct cs_entry *v = realloc(w->v, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = c;
	}
	w->v[w->n++] = *x;
	return 0;
}

/* path, unless past what a reader takes: then counted and left out. */
static bool cs_path_ok(struct changeset_writer *w, const char *path, int pl)
{
	static const struct changeset_limits lim = { .path_bytes = CHANGESET_PATH_MAX, .depth = CHANGESET_DEPTH_MAX };
	if (pl >= 0 && pl <= CHANGESET_PATH_MAX && changeset_path_check(path, (size_t)pl, &lim) == 0)
		return true;
	if (!w->skipped++)
		snprintf(w->first_skipped, sizeof(w->first_skipped), "%s", path);
	return false;
}

/* dfd's entries (rel its path), preorder: a directory before what is in
 * it, as the reader wants them. */
static int cs_walk(struct changeset_writer *w, int dfd, const char *rel)
{
	int d2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return -errno;
	}
	/* The duplicate shares the descriptor's offset: from the start. */
	rewinddir(d);
	int r = 0;
	struct dirent *de;
	while (r >= 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		const char *name = de->d_name;
		enum changeset_mark mk = w->m->entry(w->m->arg, de->d_name, &st, &name);
		if (mk == CHANGESET_MARK_SKIP)
			continue;
		char path[CHANGESET_PATH_MAX + 2];
		int pl = snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", name);
		if (!cs_path_ok(w, path, pl))
			continue;
		struct cs_entry x = { .mode = st.st_mode & 07777, .mtime_ns = cs_ns(&st.st_mtim) };
		if (mk == CHANGESET_MARK_WHITEOUT) {
			x.op = CHANGESET_WHITEOUT;
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			x.op = CHANGESET_DIR;
			x.opaque = w->m->opaque(w->m->arg, dfd, de->d_name, sub);
			if (!(x.path = strdup(path)) || (r = cs_add(w, &x)) < 0) {
				free(x.path);
				r = r < 0 ? r : -ENOMEM;
				break;
			}
			r = cs_walk(w, sub, path);
			continue;
		} else if (S_ISREG(st.st_mode)) {
			x.op = cs_ns(&st.st_ctim) < w->keep_before_ns ? CHANGESET_KEEP : CHANGESET_FILE;
		} else if (S_ISLNK(st.st_mode)) {
			char t[CHANGESET_PATH_MAX + 1];
			ssize_t tl = readlinkat(dfd, de->d_name, t, sizeof(t));
			if (tl <= 0 || (size_t)tl > CHANGESET_PATH_MAX)
				continue;
			t[tl] = 0;
			x.op = CHANGESET_LINK;
			if (!(x.target = strdup(t)))
				r = -ENOMEM;
		} else {
			continue;	/* a FIFO, a socket, a device: nothing a workspace's changes carry */
		}
		if (r >= 0 && !(x.path = strdup(path)))
			r = -ENOMEM;
		if (r >= 0)
			r = cs_add(w, &x);
		if (r < 0) {
			free(x.path);
			free(x.target);
		}
	}
	closedir(d);
	return r;
}

int changeset_writer_new(int upper, const struct changeset_marks *m, int64_t keep_before_ns,
			 struct changeset_writer **ret)
{
	struct changeset_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct changeset_writer){ .upper = upper, .m = m, .keep_before_ns = keep_before_ns, .fd = -1 };
	int r = cs_walk(w, upper, "");
	if (r < 0) {
		changeset_writer_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void changeset_writer_free(struct changeset_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].path);
		free(w->v[i].target);
	}
	free(w->v);
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

uint64_t changeset_writer_skipped(const struct changeset_writer *w, const char **first)
{
	*first = w->first_skipped;
	return w->skipped;
}

/* The next entry's record, and a file's bytes to follow it. */
static int cs_put(struct changeset_writer *w, struct buf *b, const struct cs_entry *x)
{
	switch (x->op) {
	case CHANGESET_DIR:
		return changeset_put_dir(b, x->path, x->mode, x->opaque, x->mtime_ns);
	case CHANGESET_KEEP:
		return changeset_put_keep(b, x->path);
	case CHANGESET_LINK:
		return changeset_put_link(b, x->path, x->target);
	case CHANGESET_WHITEOUT:
		return changeset_put_whiteout(b, x->path);
	}
	/* A file: its size as it is now (the walk's may be stale). Gone since
	 * the walk, or no longer a file: an empty file (the next sync has the
	 * truth). */
	struct stat st;
	int fd = changeset_open_beneath(w->upper, x->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	uint64_t size = fd >= 0 ? (uint64_t)st.st_size : 0;
	int r = changeset_put_file(b, x->path, x->mode, x->mtime_ns, size);
	if (r < 0 || !size) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	w->fd = fd;
	w->left = size;
	return 0;
}

int changeset_writer_fill(struct changeset_writer *w, struct buf *b)
{
	if (!w->head) {
		w->head = true;
		if (changeset_put_magic(b) < 0)
			return -ENOBUFS;
	}
	while (b->len + CHANGESET_PATH_MAX * 2 + 64 < b->cap) {
		if (w->left) {
			size_t room = (size_t)MIN((uint64_t)(b->cap - b->len), w->left);
			char *p = b->data + b->len;
			ssize_t k = w->fd >= 0 ? read(w->fd, p, room) : 0;
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				/* The file shrank while it was written: zeros to the
				 * size its head said (the next sync sends it again). */
				if (w->fd >= 0)
					close(w->fd);
				w->fd = -1;
				memset(p, 0, room);
				k = (ssize_t)room;
			}
			b->len += (size_t)k;
			w->left -= (uint64_t)k;
			if (!w->left && w->fd >= 0) {
				close(w->fd);
				w->fd = -1;
			}
			continue;
		}
		if (w->i == w->n) {
			if (w->end)
				return 1;
			int r = changeset_put_end(b);
			if (r < 0)
				return r;
			w->end = true;
			return 1;
		}
		int r = cs_put(w, b, &w->v[w->i++]);
		if (r < 0)
			return r;
	}
	return 0;
}
