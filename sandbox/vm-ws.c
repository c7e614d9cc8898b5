/* A vm box's workspace as a block image (vm-int.h): the workspace's tree
 * reaches the VM as a read-only erofs image, the lower layer of the
 * guest's own overlay, whose upper is on the box's disk; the guest sends
 * that upper's changes back (guest/changeset.c, sandbox/keeper-ws.c), so
 * no 9p share is mounted and QEMU can save the whole machine.
 *
 * The image is made at the box's first start, and is the box's for its
 * life (beside its disk, DISK.ws): a wake or a restart attaches the very bytes
 * the guest's overlay was built on, whatever became of the user's tree
 * since. It is cached by what the tree holds as far as a walk of its
 * metadata tells (every entry's path, type, mode, size, times and inode:
 * no file is read), so a second box of an unchanged workspace links the
 * image the first one made. */
#include "sandbox/vm-int.h"
#include "sandbox/backend.h"
#include "sandbox/box.h"
#include "sandbox/vmimage.h"
#include "image/erofs.h"
#include "base/cleanup.h"
#include "base/hash.h"
#include "base/state.h"
#include "proto/changeset.h"
#include "proto/proto.h"
#include "workspace/wslayer.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The workspace images kept in the cache (each is the size of a tree). */
#define VM_WS_CACHE_KEEP 8
/* Past this many entries the walk stops and the image is made without
 * the cache. */
#define VM_WS_WALK_MAX 2000000

bool vm_ws_block(const struct box_spec *s)
{
	return s->image_root && s->opts->workspace && !s->opts->rw;
}

static struct {
	struct hash_sha256 h;
	size_t n;
	size_t skip;	/* the root's path length */
} W;

static int vm_ws_walk_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)flag;
	(void)f;
	if (++W.n > VM_WS_WALK_MAX)
		return 1;
	const char *rel = p + MIN(strlen(p), W.skip);
	hash_sha256_update(&W.h, rel, strlen(rel) + 1);
	int64_t v[8] = { st->st_mode, st->st_size, st->st_mtim.tv_sec, st->st_mtim.tv_nsec, st->st_ctim.tv_sec,
			 st->st_ctim.tv_nsec, (int64_t)st->st_ino, (int64_t)st->st_dev };
	hash_sha256_update(&W.h, v, sizeof(v));
	return 0;
}

/* The tree's key (hex), or -E2BIG past the walk's bound. */
static int vm_ws_key(const char *root, char out[HASH_SHA256_HEX])
{
	hash_sha256_init(&W.h);
	W.n = 0;
	W.skip = strlen(root);
	/* The tool and the layout are part of what the image is. */
	hash_sha256_update(&W.h, "ward-ws-erofs-1", 15);
	int r = nftw(root, vm_ws_walk_one, 32, FTW_PHYS);
	if (r != 0)
		return r > 0 ? -E2BIG : -errno;
	uint8_t d[HASH_SHA256_LEN];
	hash_sha256_final(&W.h, d);
	hash_hex(d, sizeof(d), out);
	return 0;
}

/* The cached image of the tree at root, made if it is not there. */
static int vm_ws_cached(const char *root, char *out, size_t n, struct err *e)
{
	char key[HASH_SHA256_HEX], dir[PATH_MAX];
	int r = vm_ws_key(root, key);
	if (r < 0)
		return r;
	if ((r = state_cache_dir("wsimg", "the workspace images' cache", dir, sizeof(dir), e)) < 0)
		return r;
	if ((size_t)snprintf(out, n, "%s/%s.erofs", dir, key) >= n)
		return err_set(e, -ENAMETOOLONG, "the cache's path is too long");
	if (access(out, R_OK) == 0)
		return 0;
	if ((r = image_erofs_make(root, out, e)) < 0)
		return r;
	char pat[PATH_MAX + 16];
	snprintf(pat, sizeof(pat), "%s/*.erofs", dir);
	vmimage_prune(pat, VM_WS_CACHE_KEEP, NULL);
	return 0;
}

int vm_ws_image(const struct box_spec *s, char *out, size_t n, struct err *e)
{
	if ((size_t)snprintf(out, n, "%s" BOX_DISK_WS_SUFFIX, s->disk_path) >= n)
		return err_set(e, -ENAMETOOLONG, "the box's path is too long");
	if (access(out, R_OK) == 0)
		return 0;
	char cached[PATH_MAX];
	struct err ce = { 0 };
	if (vm_ws_cached(s->opts->workspace, cached, sizeof(cached), &ce) >= 0 && link(cached, out) == 0)
		return 0;
	/* No cache (a tree too large to walk, the cache on another file
	 * system): the box's own. */
	int r = image_erofs_make(s->opts->workspace, out, e);
	if (r < 0)
		return err_set(e, r, "the workspace %s could not be made into the vm box's image: %s", s->opts->workspace,
			       e->msg);
	return 0;
}

/* The seed: the host's upper sent to a fresh guest, which writes it into
 * its own upper before it mounts the workspace's overlay (a session's
 * changes outlive its box: a new box, after a rewind too, starts from
 * them). The host wrote that upper; the guest trusts the host. */
#define VM_WS_SEED_CHUNK (256u << 10)

struct vm_ws_seed {
	int chan;
	enum wslayer_writer writer;	/* who wrote the host's upper (workspace/wslayer.h) */
	struct buf b;
};

static int vm_ws_seed_flush(struct vm_ws_seed *w, bool last)
{
	int r = proto_send(w->chan, PROTO_CHANGES, last ? PROTO_F_EOF : 0, 0, w->b.data, w->b.len);
	w->b.len = 0;
	return r;
}

static int vm_ws_seed_room(struct vm_ws_seed *w)
{
	return w->b.len + 2 * CHANGESET_PATH_MAX + 64 > VM_WS_SEED_CHUNK ? vm_ws_seed_flush(w, false) : 0;
}

static int vm_ws_seed_dir(struct vm_ws_seed *w, int dfd, const char *rel)
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
		char path[CHANGESET_PATH_MAX + 2];
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", de->d_name) > CHANGESET_PATH_MAX)
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || (r = vm_ws_seed_room(w)) < 0)
			continue;
		const char *tn;
		enum wslayer_kind kind = wslayer_entry(w->writer, de->d_name, &st, &tn);
		if (kind == WSLAYER_MARK)
			continue;
		if (kind == WSLAYER_WHITEOUT) {
			if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", tn) <= CHANGESET_PATH_MAX)
				r = changeset_put_whiteout(&w->b, path);
			continue;
		}
		int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			bool opq = wslayer_opaque(w->writer, dfd, de->d_name);
			r = changeset_put_dir(&w->b, path, st.st_mode & 07777, opq, mt);
			if (r >= 0)
				r = vm_ws_seed_dir(w, sub, path);
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			r = changeset_put_file(&w->b, path, st.st_mode & 07777, mt, (uint64_t)st.st_size);
			for (uint64_t left = (uint64_t)st.st_size; r >= 0 && left;) {
				if (w->b.len >= VM_WS_SEED_CHUNK && (r = vm_ws_seed_flush(w, false)) < 0)
					break;
				size_t room = (size_t)MIN((uint64_t)(VM_WS_SEED_CHUNK - w->b.len), left);
				ssize_t k = read(fd, w->b.data + w->b.len, room);
				if (k <= 0) {
					/* Shorter than it was: zeros to its size. */
					memset(w->b.data + w->b.len, 0, room);
					k = (ssize_t)room;
				}
				w->b.len += (size_t)k;
				left -= (uint64_t)k;
			}
		} else if (S_ISLNK(st.st_mode)) {
			char t[CHANGESET_PATH_MAX + 1];
			ssize_t tl = readlinkat(dfd, de->d_name, t, sizeof(t));
			if (tl <= 0 || (size_t)tl > CHANGESET_PATH_MAX)
				continue;
			t[tl] = 0;
			r = changeset_put_link(&w->b, path, t);
		}
	}
	closedir(d);
	return r;
}

bool vm_ws_seed_wanted(const char *upper)
{
	_cleanup_closedir_ DIR *d = upper ? opendir(upper) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return true;
	return false;
}

int vm_ws_seed_send(int chan, const char *upper, struct err *e)
{
	struct vm_ws_seed w = { .chan = chan };
	w.b = (struct buf){ .data = malloc(VM_WS_SEED_CHUNK + 1), .alloc = VM_WS_SEED_CHUNK + 1, .cap = VM_WS_SEED_CHUNK };
	_cleanup_close_ int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = !w.b.data ? -ENOMEM : fd < 0 ? -errno : changeset_put_magic(&w.b);
	if (r >= 0)
		w.writer = wslayer_writer_of(fd);
	if (r >= 0)
		r = vm_ws_seed_dir(&w, fd, "");
	if (r >= 0 && (r = vm_ws_seed_room(&w)) >= 0 && (r = changeset_put_end(&w.b)) >= 0)
		r = vm_ws_seed_flush(&w, true);
	free(w.b.data);
	return r < 0 ? err_setc(e, r, "cannot send the workspace's changes %s to the new box", upper) : 0;
}
