#include "workspace/wspatch.h"
#include "base/array.h"
#include "workspace/wsfs.h"
#include "workspace/wslayer.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GIT_NULL_OID "0000000000000000000000000000000000000000"
#define GIT_OID_HEX (2 * HASH_SHA1_LEN)
/* A quoted path: every byte may take four characters, plus "a/" and quotes. */
#define QUOTED_MAX (4 * PATH_MAX + 8)
/* git's binary hunks: lines of at most 52 bytes of zlib data, in base85. */
#define B85_LINE 52

/* A sorted set of paths (sort, then look up). */
struct strs {
	char **v;
	size_t n, cap;
};

static int strs_add(struct strs *s, const char *p)
{
	return ws_strv_add(&s->v, &s->n, &s->cap, p);
}

static void strs_sort(struct strs *s)
{
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), ws_name_cmp);
	size_t k = 1;
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[i], s->v[k - 1]))
			s->v[k++] = s->v[i];
		else
			free(s->v[i]);
	}
	s->n = k;
}

/* The index of the first path >= p. */
static size_t strs_lower_bound(const struct strs *s, const char *p)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(s->v[mid], p) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static ssize_t strs_find(const struct strs *s, const char *p)
{
	size_t i = strs_lower_bound(s, p);
	return i < s->n && !strcmp(s->v[i], p) ? (ssize_t)i : -1;
}

/* Some path of s is below dir. */
static bool strs_below(const struct strs *s, const char *dir)
{
	char pre[PATH_MAX + 1];
	int l = snprintf(pre, sizeof(pre), "%s/", dir);
	size_t i = strs_lower_bound(s, pre);
	return i < s->n && !strncmp(s->v[i], pre, (size_t)l);
}

static void strs_free(struct strs *s)
{
	ws_free_list(s->v, s->n);
	*s = (struct strs){ 0 };
}

/* One path of the patch: its tree side (old), its box side (new). */
struct op {
	char *path;
	bool old, new;
	bool setid_dropped;
};

struct plan {
	struct op *ops;
	size_t nops, capops;
	struct strs del, add;		/* files git apply deletes, creates */
	struct strs gone_dirs;		/* directories of the tree the box deleted */
	struct strs added_dirs;		/* directories the box made */
};

static void plan_free(struct plan *pl)
{
	for (size_t i = 0; i < pl->nops; i++)
		free(pl->ops[i].path);
	free(pl->ops);
	strs_free(&pl->del);
	strs_free(&pl->add);
	strs_free(&pl->gone_dirs);
	strs_free(&pl->added_dirs);
}

static int plan_op(struct plan *pl, const char *path, bool old, bool new, bool setid)
{
	if (array_grow(&pl->ops, &pl->capops, pl->nops, sizeof(*pl->ops), 32) < 0)
		return -ENOMEM;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	pl->ops[pl->nops++] = (struct op){ .path = p, .old = old, .new = new, .setid_dropped = setid };
	int r = old && !new ? strs_add(&pl->del, path) : 0;
	return r < 0 ? r : !old && new ? strs_add(&pl->add, path) : 0;
}

/* A tree entry git can carry: a regular file or a symlink. */
static int carried(int root, const char *p, struct stat *ret, struct err *e)
{
	int r = ws_lstat(root, p, ret);
	if (r < 0)
		return err_setc(e, r, "%s", p);
	if (!S_ISREG(ret->st_mode) && !S_ISLNK(ret->st_mode))
		return err_set(e, -EINVAL, "%s: a FIFO, socket or device: a git patch cannot carry its change", p);
	return 0;
}

/* Every file below rel, a directory of the tree the box deleted. */
static int plan_gone_dir(struct plan *pl, int lroot, const char *rel, int depth, struct err *e)
{
	char **names;
	size_t n;
	if (depth > 256)
		return err_set(e, -ELOOP, "%s: too deep", rel);
	int r = ws_list_dir(lroot, rel, &names, &n);
	if (r < 0)
		return err_setc(e, r, "%s", rel);
	r = strs_add(&pl->gone_dirs, rel);
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s/%s", rel, names[i]) >= (int)sizeof(p)) {
			r = err_set(e, -ENAMETOOLONG, "%s/%s: name too long", rel, names[i]);
			break;
		}
		struct stat st;
		if (ws_lstat(lroot, p, &st) == 0 && S_ISDIR(st.st_mode))
			r = plan_gone_dir(pl, lroot, p, depth + 1, e);
		else if ((r = carried(lroot, p, &st, e)) >= 0)
			r = plan_op(pl, p, true, false, false);
	}
	ws_free_list(names, n);
	return r;
}

static int plan_make(struct plan *pl, int lroot, int uroot, const struct ws_changes *c, struct err *e)
{
	int r = 0;
	for (size_t i = 0; i < c->n && r >= 0; i++) {
		const struct ws_change *ch = &c->v[i];
		struct stat ls, us;
		if (ws_change_left_out(c, ch))
			continue;
		if (ch->dir && ch->kind == WS_DELETED)
			r = plan_gone_dir(pl, lroot, ch->path, 0, e);
		else if (ch->dir)
			r = strs_add(&pl->added_dirs, ch->path);
		else if (ch->kind == WS_ADDED)
			r = plan_op(pl, ch->path, false, true, ch->setid_dropped);
		else if ((r = carried(lroot, ch->path, &ls, e)) < 0)
			break;
		else if (ch->kind == WS_DELETED)
			r = plan_op(pl, ch->path, true, false, false);
		else if ((r = carried(uroot, ch->path, &us, e)) >= 0) {
			r = plan_op(pl, ch->path, true, true, ch->setid_dropped);
			/* A file that became a symlink, or the other way: git
			 * deletes one and creates the other. */
			if (r >= 0 && (ls.st_mode & S_IFMT) != (us.st_mode & S_IFMT))
				r = strs_add(&pl->del, ch->path) < 0 ? -ENOMEM : strs_add(&pl->add, ch->path);
		}
	}
	if (r == -ENOMEM)
		return err_setc(e, r, "the patch");
	strs_sort(&pl->del);
	strs_sort(&pl->add);
	strs_sort(&pl->gone_dirs);
	strs_sort(&pl->added_dirs);
	return r;
}

/* git's quoting of a path (quote_c_style): as it is, or in double quotes
 * with C escapes when it holds a control character, a quote, a backslash
 * or a byte over 0x7e. */
static void quote(const char *prefix, const char *p, char *out, size_t n)
{
	char raw[PATH_MAX + 4];
	snprintf(raw, sizeof(raw), "%s%s", prefix, p);
	bool plain = true;
	for (const unsigned char *s = (const unsigned char *)raw; *s && plain; s++)
		plain = *s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\';
	if (plain) {
		snprintf(out, n, "%s", raw);
		return;
	}
	static const char esc[] = "\a\b\t\n\v\f\r", letter[] = "abtnvfr";
	size_t k = 0;
	out[k++] = '"';
	for (const unsigned char *s = (const unsigned char *)raw; *s && k + 6 < n; s++) {
		const char *x = *s ? strchr(esc, *s) : NULL;
		if (*s == '"' || *s == '\\') {
			out[k++] = '\\';
			out[k++] = (char)*s;
		} else if (x) {
			out[k++] = '\\';
			out[k++] = letter[x - esc];
		} else if (*s < 0x20 || *s >= 0x7f) {
			k += (size_t)snprintf(out + k, n - k, "\\%03o", *s);
		} else {
			out[k++] = (char)*s;
		}
	}
	out[k++] = '"';
	out[k] = 0;
}

/* Which directories differ between the box's tree and what git apply
 * makes of the tree: it creates a file's missing directories, and after
 * deleting a file removes each directory above it that is then empty. */

/* A directory in the box's view (the overlay's merge of the layers). */
static bool box_dir(enum wslayer_writer w, int lroot, int uroot, const char *p)
{
	if (!*p)
		return true;
	struct stat st;
	int k = wslayer_lookup(w, uroot, p, &st);
	if (k >= 0)
		return k == WSLAYER_ENTRY && S_ISDIR(st.st_mode);
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", p);
	char *slash = strrchr(parent, '/');
	*(slash ? slash : parent) = 0;
	if (!box_dir(w, lroot, uroot, parent) || wslayer_opaque(w, uroot, parent))
		return false;
	return ws_lstat(lroot, p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool tree_dir(int lroot, const char *p)
{
	struct stat st;
	return ws_lstat(lroot, p, &st) == 0 && S_ISDIR(st.st_mode);
}

static size_t depth(const char *p)
{
	size_t d = 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int depth_cmp(const void *a, const void *b, void *set)
{
	char *const *v = ((const struct strs *)set)->v;
	size_t x = depth(v[*(const size_t *)a]), y = depth(v[*(const size_t *)b]);
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The directories above deleted files that git apply removes (sorted). */
static int removed_dirs(int lroot, const struct plan *pl, struct strs *ret)
{
	struct strs chain = { 0 };
	int r = 0;
	for (size_t i = 0; i < pl->del.n && r >= 0; i++) {
		char d[PATH_MAX];
		snprintf(d, sizeof(d), "%s", pl->del.v[i]);
		for (char *s = strrchr(d, '/'); s && r >= 0; s = strrchr(d, '/')) {
			*s = 0;
			r = strs_add(&chain, d);
		}
	}
	strs_sort(&chain);
	_cleanup_free_ size_t *order = malloc((chain.n + 1) * sizeof(*order));
	_cleanup_free_ bool *gone = calloc(chain.n + 1, sizeof(*gone));
	if (!order || !gone)
		r = -ENOMEM;
	for (size_t i = 0; i < chain.n && r >= 0; i++)
		order[i] = i;
	/* Deepest first: a directory's subdirectories are decided before it. */
	if (r >= 0 && chain.n)
		qsort_r(order, chain.n, sizeof(*order), depth_cmp, &chain);
	for (size_t i = 0; i < chain.n && r >= 0; i++) {
		const char *d = chain.v[order[i]];
		char **names;
		size_t n;
		if (ws_list_dir(lroot, d, &names, &n) < 0)
			continue;
		bool empties = true;
		for (size_t k = 0; k < n && empties; k++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/%s", d, names[k]);
			ssize_t sub = tree_dir(lroot, p) ? strs_find(&chain, p) : -1;
			empties = sub >= 0 ? gone[sub] : strs_find(&pl->del, p) >= 0;
		}
		ws_free_list(names, n);
		gone[order[i]] = empties;
	}
	for (size_t i = 0; i < chain.n && r >= 0; i++)
		if (gone[i])
			r = strs_add(ret, chain.v[i]);
	strs_free(&chain);
	return r;
}

static int put_dir_notes(FILE *out, int lroot, int uroot, const struct plan *pl, struct err *e)
{
	struct strs removed = { 0 }, cand = { 0 }, mk = { 0 }, rm = { 0 };
	enum wslayer_writer w = wslayer_writer_of(uroot);
	int r = removed_dirs(lroot, pl, &removed);
	for (size_t i = 0; i < removed.n && r >= 0; i++)
		r = strs_add(&cand, removed.v[i]);
	for (size_t i = 0; i < pl->gone_dirs.n && r >= 0; i++)
		r = strs_add(&cand, pl->gone_dirs.v[i]);
	for (size_t i = 0; i < pl->added_dirs.n && r >= 0; i++)
		r = strs_add(&cand, pl->added_dirs.v[i]);
	strs_sort(&cand);
	for (size_t i = 0; i < cand.n && r >= 0; i++) {
		const char *d = cand.v[i];
		bool git = (tree_dir(lroot, d) && strs_find(&removed, d) < 0) || strs_below(&pl->add, d);
		bool box = box_dir(w, lroot, uroot, d);
		if (box != git)
			r = strs_add(box ? &mk : &rm, d);
	}
	char q[QUOTED_MAX];
	for (size_t i = 0; i < mk.n && r >= 0; i++) {
		quote("", mk.v[i], q, sizeof(q));
		r = ws_put(out, "note: an empty directory is in the box's tree; a git patch cannot make one; "
			   "after git apply: mkdir %s\n", q);
	}
	for (size_t i = rm.n; i-- > 0 && r >= 0;) {
		quote("", rm.v[i], q, sizeof(q));
		r = ws_put(out, "note: a directory is gone from the box's tree; git apply removes only the "
			   "directories it empties; after git apply: rmdir %s\n", q);
	}
	strs_free(&removed);
	strs_free(&cand);
	strs_free(&mk);
	strs_free(&rm);
	return r == -ENOMEM ? err_setc(e, r, "the patch") : r;
}

/* One side of a path: its content (a symlink's target in a memfd), its
 * git object id, and whether it holds a NUL (then its hunk is binary). */
struct side {
	bool exists, binary;
	mode_t mode;
	off_t size;
	int fd;
	char oid[GIT_OID_HEX + 1];
};

static unsigned git_mode(const struct side *s)
{
	return S_ISLNK(s->mode) ? 0120000 : s->mode & S_IXUSR ? 0100755 : 0100644;
}

static void blob_hash_start(struct hash_sha1 *h, off_t size)
{
	char hdr[32];
	int n = snprintf(hdr, sizeof(hdr), "blob %lld", (long long)size);
	hash_sha1_init(h);
	hash_sha1_update(h, hdr, (size_t)n + 1);
}

static void blob_hash_end(struct hash_sha1 *h, char *oid)
{
	uint8_t d[HASH_SHA1_LEN];
	hash_sha1_final(h, d);
	hash_hex(d, sizeof(d), oid);
}

/* size bytes of s->fd from the start into fn(ud, chunk), then the id. */
static int side_read(const struct side *s, int (*fn)(void *ud, const uint8_t *p, size_t n), void *ud, char *oid)
{
	struct hash_sha1 h;
	blob_hash_start(&h, s->size);
	uint8_t b[65536];
	int r = 0;
	for (off_t off = 0; off < s->size && r >= 0;) {
		ssize_t n = pread(s->fd, b, (size_t)MIN((off_t)sizeof(b), s->size - off), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;	/* shorter than it was */
		hash_sha1_update(&h, b, (size_t)n);
		r = fn ? fn(ud, b, (size_t)n) : 0;
		off += n;
	}
	blob_hash_end(&h, oid);
	return r;
}

static int note_nul(void *ud, const uint8_t *p, size_t n)
{
	*(bool *)ud |= memchr(p, 0, n) != NULL;
	return 0;
}

static void side_close(struct side *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* The side at p beneath root; absent is a side too. */
static int side_open(int root, const char *p, struct side *s, struct err *e)
{
	*s = (struct side){ .fd = -1, .oid = GIT_NULL_OID };
	struct stat st;
	int r = carried(root, p, &st, e);
	if (r < 0)
		return r;
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		int n = ws_readlink(root, p, t, sizeof(t));
		if (n < 0)
			return err_setc(e, n, "%s", p);
		s->fd = memfd_create("ward-link", MFD_CLOEXEC);
		if (s->fd < 0 || fdio_write_full(s->fd, t, (size_t)n) < 0) {
			side_close(s);
			return err_setc(e, -errno, "%s", p);
		}
		s->size = n;
	} else {
		s->fd = ws_open_reg(root, p, &st);
		if (s->fd < 0)
			return err_setc(e, s->fd, "%s", p);
		s->size = st.st_size;
		if (st.st_size > WS_PATCH_FILE_MAX) {
			side_close(s);
			return err_set(e, -EFBIG, "%s: %lld bytes, over the patch's bound of %d MiB for one file", p,
				       (long long)st.st_size, WS_PATCH_FILE_MAX >> 20);
		}
	}
	s->exists = true;
	s->mode = st.st_mode;
	r = side_read(s, note_nul, &s->binary, s->oid);
	if (r < 0) {
		side_close(s);
		return err_setc(e, r, "%s: changed while it was read", p);
	}
	return 0;
}

/* git's base85 (base85.c): big-endian groups of four bytes, five digits. */
static const char b85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

static int put_b85_line(FILE *out, const uint8_t *p, size_t n)
{
	char line[2 + 5 * (B85_LINE / 4) + 1];
	size_t k = 0;
	line[k++] = (char)(n <= 26 ? 'A' + n - 1 : 'a' + n - 27);
	for (size_t i = 0; i < n; i += 4, k += 5) {
		uint32_t acc = 0;
		for (size_t j = 0; j < 4; j++)
			acc = acc << 8 | (i + j < n ? p[i + j] : 0);
		for (int j = 4; j >= 0; j--, acc /= 85)
			line[k + (size_t)j] = b85[acc % 85];
	}
	line[k++] = '\n';
	return fwrite(line, 1, k, out) == k ? 0 : errno == EPIPE ? -EPIPE : -EIO;
}

struct deflater {
	z_stream z;
	FILE *out;
	uint8_t buf[65536];
	size_t len;		/* compressed bytes not yet written as a line */
};

/* Feed p (NULL at the end) through zlib; whole lines out as they fill. */
static int deflater_feed(struct deflater *d, const uint8_t *p, size_t n, bool end)
{
	d->z.next_in = (Bytef *)p;
	d->z.avail_in = (uInt)n;
	int zr, r = 0;
	do {
		d->z.next_out = d->buf + d->len;
		d->z.avail_out = (uInt)(sizeof(d->buf) - d->len);
		zr = deflate(&d->z, end ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		d->len = sizeof(d->buf) - d->z.avail_out;
		size_t done = 0;
		for (; r >= 0 && (d->len - done >= B85_LINE || (end && zr == Z_STREAM_END && done < d->len));
		     done += MIN((size_t)B85_LINE, d->len - done))
			r = put_b85_line(d->out, d->buf + done, MIN((size_t)B85_LINE, d->len - done));
		memmove(d->buf, d->buf + done, d->len - done);
		d->len -= done;
	} while (r >= 0 && (d->z.avail_out == 0 || (end && zr != Z_STREAM_END)));
	return r;
}

static int deflate_chunk(void *ud, const uint8_t *p, size_t n)
{
	return deflater_feed(ud, p, n, false);
}

/* "literal SIZE", the side's content deflated in base85 lines, a blank
 * line. The content is read again: it must still be what was hashed. */
static int put_literal(FILE *out, const struct side *s)
{
	struct deflater *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->out = out;
	if (deflateInit(&d->z, Z_DEFAULT_COMPRESSION) != Z_OK) {
		free(d);
		return -ENOMEM;
	}
	fprintf(out, "literal %lld\n", (long long)s->size);
	char oid[GIT_OID_HEX + 1] = GIT_NULL_OID;
	int r = s->exists ? side_read(s, deflate_chunk, d, oid) : 0;
	if (r >= 0)
		r = deflater_feed(d, NULL, 0, true);
	deflateEnd(&d->z);
	free(d);
	if (r >= 0 && strcmp(oid, s->oid))
		r = -ESTALE;
	return r < 0 ? r : ws_put(out, "\n");
}

/* One "diff --git" block from a to b (either may be absent), after the
 * notes for what git cannot carry of it. */
static int put_block(FILE *out, const char *path, const struct side *a, const struct side *b, bool setid,
		     struct err *e)
{
	char qa[QUOTED_MAX], qb[QUOTED_MAX], qp[QUOTED_MAX];
	quote("a/", path, qa, sizeof(qa));
	quote("b/", path, qb, sizeof(qb));
	quote("", path, qp, sizeof(qp));
	bool content = strcmp(a->oid, b->oid);
	bool block = content || git_mode(a) != git_mode(b) || a->exists != b->exists;
	int r = 0;
	if (setid)
		r = ws_put(out, "note: %s: the box set a setuid/setgid bit; neither ward apply nor this patch carries it\n", qp);
	if (r >= 0 && b->exists && S_ISREG(b->mode)) {
		/* git apply writes what it changes afresh: 0666 or 0777 less the umask. */
		unsigned ward = b->mode & 01777, git = !block ? a->mode & 07777 : git_mode(b) == 0100755 ? 0755 : 0644;
		if (ward != git)
			r = ws_put(out, "note: %s: ward apply makes its mode %04o, git apply %04o (a git patch carries "
				   "only 100644 and 100755; umask 022)\n", qp, ward, git);
	}
	if (r < 0 || !block)
		return r;
	fprintf(out, "diff --git %s %s\n", qa, qb);
	if (!a->exists)
		fprintf(out, "new file mode %06o\n", git_mode(b));
	else if (!b->exists)
		fprintf(out, "deleted file mode %06o\n", git_mode(a));
	else if (git_mode(a) != git_mode(b))
		fprintf(out, "old mode %06o\nnew mode %06o\n", git_mode(a), git_mode(b));
	if (content) {
		fprintf(out, "index %s..%s", a->oid, b->oid);
		if (a->exists && b->exists && git_mode(a) == git_mode(b))
			fprintf(out, " %06o", git_mode(a));
		fputc('\n', out);
		if (a->binary || b->binary) {
			fputs("GIT binary patch\n", out);
			r = put_literal(out, b);
			if (r >= 0)
				r = put_literal(out, a);
		} else if (a->size || b->size) {
			r = ws_run_diff(out, a->exists ? qa : "/dev/null", b->exists ? qb : "/dev/null", a->fd, b->fd, true);
		}
	}
	if (r >= 0)
		r = ws_put(out, "%s", "");
	if (r == -ESTALE)
		return err_set(e, r, "%s: changed while the patch was written", path);
	if (r < 0 && r != -EPIPE)
		return err_setc(e, r, "%s: writing its patch", path);
	return r;
}

static int put_op(FILE *out, int lroot, int uroot, const struct op *op, struct err *e)
{
	struct side a = { .fd = -1, .oid = GIT_NULL_OID }, b = { .fd = -1, .oid = GIT_NULL_OID };
	int r = op->old ? side_open(lroot, op->path, &a, e) : 0;
	if (r >= 0 && op->new)
		r = side_open(uroot, op->path, &b, e);
	if (r >= 0 && a.exists && b.exists && (a.mode & S_IFMT) != (b.mode & S_IFMT)) {
		struct side none = { .fd = -1, .oid = GIT_NULL_OID };
		r = put_block(out, op->path, &a, &none, false, e);
		if (r >= 0)
			r = put_block(out, op->path, &none, &b, op->setid_dropped, e);
	} else if (r >= 0) {
		r = put_block(out, op->path, &a, &b, op->setid_dropped, e);
	}
	side_close(&a);
	side_close(&b);
	return r;
}

int ws_patch(const char *lower, const char *upper, const struct ws_changes *c, FILE *out, struct err *e)
{
	_cleanup_close_ int lroot = -1, uroot = -1;
	int r = ws_roots(lower, upper, &lroot, &uroot, e);
	if (r < 0)
		return r;
	struct plan pl = { 0 };
	r = plan_make(&pl, lroot, uroot, c, e);
	/* What the patch leaves out: each change in a git directory. */
	for (size_t i = 0; i < c->n && r >= 0; i++) {
		const struct ws_change *ch = &c->v[i];
		char q[QUOTED_MAX];
		quote("", ch->path, q, sizeof(q));
		if (ws_change_left_out(c, ch) && (r = ws_put(out, "note: not in this patch (under .git): %s %s\n",
							     ws_kind_name(ch->kind), q)) < 0 && r != -EPIPE)
			r = err_setc(e, r, "writing the patch");
	}
	if (r >= 0)
		r = put_dir_notes(out, lroot, uroot, &pl, e);
	for (size_t i = 0; i < pl.nops && r >= 0; i++)
		r = put_op(out, lroot, uroot, &pl.ops[i], e);
	plan_free(&pl);
	if (r >= 0 && fflush(out) == EOF)
		r = errno == EPIPE ? -EPIPE : err_setc(e, -errno, "writing the patch");
	return r;
}
