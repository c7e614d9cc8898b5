#include "workspace/wsmerge.h"
#include "workspace/wsfs.h"
#include "workspace/wslayer.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/hash.h"
#include "base/jsonprint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* An entry of a manifest: what it is, its identity on its file system
 * (the inode and what any change to it moves: ctime, which nobody can
 * set; mtime; size; mode) and, once something needs it, its content's
 * hash. */
struct ment {
	char *path;
	char kind;		/* 'f' file, 'l' symlink, 'w' whiteout */
	unsigned mode;
	uint64_t ino;
	int64_t size, mtime_ns, ctime_ns;
	char *target;		/* a symlink's */
	bool hashed;		/* hex was taken (empty: it could not be) */
	char hex[HASH_SHA256_HEX];
};

struct wsmerge_manifest {
	struct ment *v;
	size_t n, cap;
	bool base;		/* taken at a fork: its tree has changed since */
	/* For a merge: where a tree's entries are read (-1 for a base), the
	 * family of file systems its identities belong to, and, for a base,
	 * the trees that may still hold its files (by identity). */
	int root, lineage;
	struct wsmerge_manifest *holders[2];
};

static int ment_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ment *)a)->path, ((const struct ment *)b)->path);
}

static void ment_hash(int root, struct ment *m)
{
	m->hashed = true;
	int fd = ws_open_reg(root, m->path, NULL);
	if (fd < 0)
		return;
	if (hash_sha256_fd_hex(fd, m->hex) < 0)
		m->hex[0] = 0;
	close(fd);
}

static int ment_add(struct wsmerge_manifest *m, struct ment *x, const char *p, const char *target, struct err *e)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct ment *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return err_set(e, -ENOMEM, "out of memory");
		m->v = v;
		m->cap = cap;
	}
	x->path = strdup(p);
	x->target = target ? strdup(target) : NULL;
	if (!x->path || (target && !x->target)) {
		free(x->path);
		free(x->target);
		return err_set(e, -ENOMEM, "out of memory");
	}
	m->v[m->n++] = *x;
	return 0;
}

static int walk(enum wslayer_writer w, int root, const char *rel, bool hash, struct wsmerge_manifest *m,
		struct err *e)
{
	struct wslayer_name *names = NULL;
	size_t n = 0;
	int r = wslayer_list(w, root, rel, &names, &n);
	if (r < 0)
		return err_setc(e, r, "cannot list %s in a workspace layer", *rel ? rel : ".");
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", names[i].name) >= sizeof(p)) {
			r = err_set(e, -ENAMETOOLONG, "a path in a workspace layer is too long");
			break;
		}
		struct stat st;
		if (!names[i].whiteout && ws_lstat(root, p, &st) < 0)
			continue;
		if (m->n >= WSMERGE_ENTRIES_MAX) {
			r = err_set(e, -E2BIG, "a workspace layer has more than %d entries", WSMERGE_ENTRIES_MAX);
			break;
		}
		struct ment x = { 0 };
		char t[PATH_MAX];
		if (names[i].whiteout) {
			x.kind = 'w';
		} else if (S_ISDIR(st.st_mode)) {
			r = walk(w, root, p, hash, m, e);
			continue;
		} else if (S_ISREG(st.st_mode)) {
			x.kind = 'f';
		} else if (S_ISLNK(st.st_mode)) {
			if (ws_readlink(root, p, t, sizeof(t)) < 0)
				continue;
			x.kind = 'l';
		} else {
			continue;	/* sockets, FIFOs, devices: not merged */
		}
		if (!names[i].whiteout) {
			x.mode = st.st_mode & 0777;
			x.ino = st.st_ino;
			x.size = st.st_size;
			x.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
			x.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
		}
		if ((r = ment_add(m, &x, p, x.kind == 'l' ? t : NULL, e)) < 0)
			break;
		if (hash && x.kind == 'f')
			ment_hash(root, &m->v[m->n - 1]);
	}
	wslayer_list_free(names, n);
	return r;
}

void wsmerge_manifest_free(struct wsmerge_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].target);
	}
	free(m->v);
	free(m);
}

static int manifest(const char *upper, bool hash, struct wsmerge_manifest **ret, struct err *e)
{
	struct wsmerge_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return err_set(e, -ENOMEM, "out of memory");
	m->root = -1;
	int root = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 && errno != ENOENT) {
		free(m);
		return err_setc(e, -errno, "cannot open the workspace layer %s", upper);
	}
	int r = root >= 0 ? walk(wslayer_writer_of(root), root, "", hash, m, e) : 0;
	if (root >= 0)
		close(root);
	if (r < 0) {
		wsmerge_manifest_free(m);
		return r;
	}
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), ment_cmp);
	*ret = m;
	return 0;
}

int wsmerge_manifest(const char *upper, bool hash, struct wsmerge_manifest **ret, struct err *e)
{
	int r = manifest(upper, hash, ret, e);
	if (r >= 0)
		(*ret)->base = true;
	return r;
}

size_t wsmerge_manifest_count(const struct wsmerge_manifest *m)
{
	return m ? m->n : 0;
}

static struct ment *find(const struct wsmerge_manifest *m, const char *p)
{
	struct ment key = { .path = (char *)p };
	return m && m->n ? bsearch(&key, m->v, m->n, sizeof(*m->v), ment_cmp) : NULL;
}

char wsmerge_manifest_kind(const struct wsmerge_manifest *m, const char *p)
{
	const struct ment *x = find(m, p);
	return x ? x->kind : 0;
}

static bool same_identity(const struct ment *a, const struct ment *b)
{
	return a->ino == b->ino && a->ctime_ns == b->ctime_ns && a->mtime_ns == b->mtime_ns && a->size == b->size &&
	       a->mode == b->mode;
}

/* x's content hash (x a file of m), or NULL where it cannot be known: a
 * base's file is read from a tree that still holds it unchanged. */
static const char *hash_of(struct wsmerge_manifest *m, struct ment *x)
{
	if (!x->hashed && m->root >= 0) {
		ment_hash(m->root, x);
	} else if (!x->hashed) {
		x->hashed = true;
		for (size_t i = 0; i < ARRAY_SIZE(m->holders); i++) {
			struct wsmerge_manifest *h = m->holders[i];
			struct ment *y = h && h->lineage == m->lineage ? find(h, x->path) : NULL;
			const char *hx = y && y->kind == 'f' && same_identity(x, y) ? hash_of(h, y) : NULL;
			if (hx) {
				snprintf(x->hex, sizeof(x->hex), "%s", hx);
				break;
			}
		}
	}
	return x->hex[0] ? x->hex : NULL;
}

/* Whether a (of A) and b (of B) are the same version: absent in both,
 * or of one kind with the same target, or the same mode and bytes. Where
 * one side is a base and both are of one family (a tree and its base, or
 * a fork's copy of its parent's image, which keeps every inode and
 * time), the same identity is the same version: the file was not
 * touched since the fork, as any change moves its ctime past it. Else
 * the bytes are compared by hash; a hash that cannot be known is a
 * difference (a conflict, never a silent overwrite). */
static bool same(struct wsmerge_manifest *A, struct ment *a, struct wsmerge_manifest *B, struct ment *b)
{
	if (!a || !b)
		return !a && !b;
	if (a->kind != b->kind)
		return false;
	if (a->kind == 'w')
		return true;
	if (a->kind == 'l')
		return !strcmp(a->target, b->target);
	if (a->mode != b->mode)
		return false;
	if ((A->base || B->base) && A->lineage == B->lineage && same_identity(a, b))
		return true;
	if (a->size != b->size)
		return false;
	const char *ha = hash_of(A, a), *hb = hash_of(B, b);
	return ha && hb && !strcmp(ha, hb);
}

/* A version as the model is shown it: a file's first bytes (marked when
 * cut), a symlink's target, or what it is. */
static char *show(int root, int lower, const char *p, const struct ment *x)
{
	struct buf b;
	buf_init(&b, WSMERGE_SHOW_MAX + 256);
	int from = root;
	if (!x) {
		/* Not in the layer: the tree's file under it, if any. */
		from = lower;
		struct stat st;
		if (lower < 0 || ws_lstat(lower, p, &st) < 0) {
			buf_printf(&b, "(no such file)");
			goto out;
		}
		if (!S_ISREG(st.st_mode)) {
			buf_printf(&b, "(not a regular file)");
			goto out;
		}
	} else if (x->kind == 'w') {
		buf_printf(&b, "(deleted)");
		goto out;
	} else if (x->kind == 'l') {
		buf_printf(&b, "(a symlink to %s)", x->target);
		goto out;
	}
	int fd = ws_open_reg(from, p, NULL);
	if (fd < 0) {
		buf_printf(&b, "(unreadable: %s)", strerror(-fd));
		goto out;
	}
	char data[WSMERGE_SHOW_MAX + 1];
	ssize_t n = pread(fd, data, sizeof(data), 0);
	close(fd);
	if (n < 0)
		n = 0;
	if (memchr(data, 0, (size_t)n)) {
		buf_printf(&b, "(binary)");
		goto out;
	}
	buf_append(&b, data, (size_t)(n > WSMERGE_SHOW_MAX ? WSMERGE_SHOW_MAX : n));
	if (n > WSMERGE_SHOW_MAX)
		buf_printf(&b, "\n[... cut at %d bytes]", WSMERGE_SHOW_MAX);
out:
	buf_cstr(&b);
	char *s = strdup(b.data ? b.data : "");
	buf_free(&b);
	return s;
}

/* Make rel's parent directories beneath root (0755; a symlink on the
 * way is refused, O_NOFOLLOW at each step): the parent's directory, open,
 * or -errno. */
static int parents(int root, const char *rel, const char **ret_base)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", rel);
	const char *sl = strrchr(rel, '/');
	*ret_base = sl ? sl + 1 : rel;
	int d = ws_open(root, "", O_RDONLY | O_DIRECTORY);
	if (d < 0 || !sl)
		return d;
	buf[sl - rel] = 0;
	for (char *comp = buf, *next; comp; comp = next) {
		next = strchr(comp, '/');
		if (next)
			*next++ = 0;
		if (!*comp)
			continue;
		if (mkdirat(d, comp, 0755) < 0 && errno != EEXIST) {
			int r = -errno;
			close(d);
			return r;
		}
		int nd = openat(d, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = -errno;
		close(d);
		if (nd < 0)
			return r;
		d = nd;
	}
	return d;
}

/* The child's entry p into the parent's layer (written by pw). 0 or
 * -errno. */
static int take(enum wslayer_writer pw, int proot, int croot, const char *p, const struct ment *x)
{
	const char *base;
	_cleanup_close_ int d = parents(proot, p, &base);
	if (d < 0)
		return d;
	/* fuse-overlayfs's whiteout of the name, if any, goes: what the child
	 * has there replaces it (a 0/0 one, which it reads as well, included). */
	char wh[NAME_MAX + 8];
	if (pw == WSLAYER_FUSE_OVERLAYFS && (size_t)snprintf(wh, sizeof(wh), WSLAYER_WH_PREFIX "%s", base) < sizeof(wh) &&
	    unlinkat(d, wh, 0) < 0 && errno != ENOENT)
		return -errno;
	if (!x) {
		/* The child removed an entry the layer had (a file the parent
		 * made before the fork, with nothing under it). */
		return unlinkat(d, base, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
	struct stat st;
	bool had = fstatat(d, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (had && S_ISDIR(st.st_mode))
		return -EISDIR;
	if (x->kind == 'w') {
		if (had && unlinkat(d, base, 0) < 0)
			return -errno;
		return mknodat(d, base, S_IFCHR | 0600, makedev(0, 0)) < 0 ? -errno : 0;
	}
	if (x->kind == 'l') {
		if (had && unlinkat(d, base, 0) < 0)
			return -errno;
		return symlinkat(x->target, d, base) < 0 ? -errno : 0;
	}
	struct stat cs;
	_cleanup_close_ int src = ws_open_reg(croot, p, &cs);
	if (src < 0)
		return src;
	if (had && !S_ISREG(st.st_mode) && unlinkat(d, base, 0) < 0)
		return -errno;
	/* Written in place where the layer has the file: the inode the
	 * parent's mounted overlay holds sees the new bytes. */
	_cleanup_close_ int dst = openat(d, base, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, cs.st_mode & 0777);
	if (dst < 0)
		return -errno;
	int r = ws_copy_sparse(src, dst, cs.st_size);
	if (r < 0)
		return r;
	if (fchmod(dst, cs.st_mode & 0777) < 0)
		return -errno;
	if (fchown(dst, cs.st_uid, cs.st_gid) < 0 && errno != EPERM)
		return -errno;
	return 0;
}

static void add_change(cJSON *a, const char *p, const struct ment *base, const struct ment *x)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", p);
	cJSON_AddStringToObject(o, "change", !x || x->kind == 'w' ? "deleted" : base ? "modified" : "added");
	cJSON_AddItemToArray(a, o);
}

static void add_conflict(cJSON *a, const char *p, const char *why, int proot, int lower, const struct ment *px,
			 int croot, const struct ment *cx)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", p);
	cJSON_AddStringToObject(o, "why", why);
	_cleanup_free_ char *yours = show(proot, lower, p, px);
	_cleanup_free_ char *theirs = show(croot, -1, p, cx);
	cJSON_AddStringToObject(o, "yours", yours ? yours : "");
	cJSON_AddStringToObject(o, "theirs", theirs ? theirs : "");
	cJSON_AddItemToArray(a, o);
}

int wsmerge_apply(const char *parent_upper, const char *lower, struct wsmerge_child *c, size_t n, struct err *e)
{
	int r = 0;
	struct wsmerge_manifest *pm = NULL;
	struct wsmerge_manifest **cm = calloc(n ? n : 1, sizeof(*cm));
	int proot = -1, lroot = -1;
	if (!cm) {
		r = err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if ((r = manifest(parent_upper, false, &pm, e)) < 0)
		goto out;
	proot = pm->root = open(parent_upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proot < 0) {
		r = err_setc(e, -errno, "cannot open the parent's workspace layer");
		goto out;
	}
	pm->lineage = 1;
	enum wslayer_writer pw = wslayer_writer_of(proot);
	lroot = lower ? open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	for (size_t i = 0; i < n; i++) {
		if ((r = manifest(c[i].upper, false, &cm[i], e)) < 0)
			goto out;
		cm[i]->root = open(c[i].upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
		/* A copy of the parent's image is of the parent's family; a copy
		 * file by file is a family of its own with its base. */
		cm[i]->lineage = c[i].base->lineage = c[i].image ? 1 : 2 + (int)i;
		c[i].base->holders[0] = cm[i];
		c[i].base->holders[1] = c[i].image ? pm : NULL;
		c[i].out = cJSON_CreateObject();
		cJSON_AddArrayToObject(c[i].out, "merged");
		cJSON_AddArrayToObject(c[i].out, "conflicts");
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *merged = cJSON_GetObjectItemCaseSensitive(c[i].out, "merged");
		cJSON *conf = cJSON_GetObjectItemCaseSensitive(c[i].out, "conflicts");
		struct wsmerge_manifest *bm = c[i].base;
		/* The paths the child's entry differs at: its own, and the
		 * base's it no longer has. */
		for (int pass = 0; pass < 2; pass++) {
			struct wsmerge_manifest *list = pass ? bm : cm[i];
			for (size_t j = 0; j < list->n; j++) {
				const char *p = list->v[j].path;
				struct ment *bx = pass ? &list->v[j] : find(bm, p), *cx = pass ? find(cm[i], p) : &list->v[j];
				if (pass && cx)
					continue;	/* seen in the first pass */
				if (same(bm, bx, cm[i], cx))
					continue;
				struct ment *px = find(pm, p);
				/* Another child of this merge changed it otherwise. */
				bool other = false;
				for (size_t k = 0; k < n && !other; k++) {
					if (k == i)
						continue;
					struct ment *kb = find(c[k].base, p), *kc = find(cm[k], p);
					other = !same(c[k].base, kb, cm[k], kc) && !same(cm[k], kc, cm[i], cx);
				}
				if (other) {
					add_conflict(conf, p, "another subagent changed it too", proot, lroot, px, cm[i]->root, cx);
				} else if (same(pm, px, cm[i], cx)) {
					add_change(merged, p, bx, cx);	/* the same change: nothing to do */
				} else if (!same(pm, px, bm, bx)) {
					add_conflict(conf, p, "the workspace changed it after the subagent began", proot, lroot,
						     px, cm[i]->root, cx);
				} else {
					int k = take(pw, proot, cm[i]->root, p, cx);
					if (k < 0) {
						char why[128];
						snprintf(why, sizeof(why), "it could not be written: %s", strerror(-k));
						add_conflict(conf, p, why, proot, lroot, px, cm[i]->root, cx);
					} else {
						add_change(merged, p, bx, cx);
					}
				}
			}
		}
	}
	/* Taken into the layer: pm is the parent's layer as it was before
	 * the merge, and a later child of this merge compares with what it
	 * was (its base), as it should. */
out:
	for (size_t i = 0; cm && i < n; i++) {
		if (cm[i] && cm[i]->root >= 0)
			close(cm[i]->root);
		wsmerge_manifest_free(cm[i]);
		c[i].base->holders[0] = c[i].base->holders[1] = NULL;
	}
	free(cm);
	wsmerge_manifest_free(pm);
	if (proot >= 0)
		close(proot);
	if (lroot >= 0)
		close(lroot);
	return r;
}
