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

/* The host's upper's marks, as its writer made them (workspace/wslayer.h). */
static enum changeset_mark vm_ws_entry(void *arg, const char *name, const struct stat *st, const char **gone)
{
	enum wslayer_kind k = wslayer_entry(*(enum wslayer_writer *)arg, name, st, gone);
	return k == WSLAYER_MARK ? CHANGESET_MARK_SKIP : k == WSLAYER_WHITEOUT ? CHANGESET_MARK_WHITEOUT : CHANGESET_MARK_NONE;
}

static bool vm_ws_opaque(void *arg, int dfd, const char *name, int fd)
{
	(void)fd;
	return wslayer_opaque(*(enum wslayer_writer *)arg, dfd, name);
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
	_cleanup_close_ int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_setc(e, -errno, "cannot open the workspace's changes %s for the new box", upper);
	enum wslayer_writer writer = wslayer_writer_of(fd);
	const struct changeset_marks marks = { .entry = vm_ws_entry, .opaque = vm_ws_opaque, .arg = &writer };
	struct changeset_writer *w = NULL;
	struct buf b = { .data = malloc(VM_WS_SEED_CHUNK + 1), .alloc = VM_WS_SEED_CHUNK + 1, .cap = VM_WS_SEED_CHUNK };
	int r = !b.data ? -ENOMEM : changeset_writer_new(fd, &marks, INT64_MIN, &w);
	for (int last = 0; r >= 0 && !last;) {
		b.len = 0;
		if ((r = last = changeset_writer_fill(w, &b)) >= 0)
			r = proto_send(chan, PROTO_CHANGES, last ? PROTO_F_EOF : 0, 0, b.data, b.len);
	}
	changeset_writer_free(w);
	free(b.data);
	return r < 0 ? err_setc(e, r, "cannot send the workspace's changes %s to the new box", upper) : 0;
}
