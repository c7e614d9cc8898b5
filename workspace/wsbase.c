#include "workspace/wsbase.h"
#include "base/array.h"
#include "workspace/wsfs.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The record file: "ward-base 1", then "since NS" while a moment is
 * pending, then "STATE PATH" per path; each item ends with a NUL (a path
 * holds any byte but NUL). It is ward's own, in the user's state dir, and
 * still read with a ceiling. */
#define WS_BASE_MAGIC "ward-base 1"
#define WS_BASE_MAX (64u << 20)

/* "-" absent, "?" unknown, "f", "l", "d", "o" (a FIFO, socket or device)
 * and 64 hex digits, or "!" and an errno (a symlink or a file on the
 * way: not reachable without following one). */
#define WS_STATE_MAX (2 + 2 * HASH_SHA256_LEN)

struct ws_state {
	char s[WS_STATE_MAX];
	int64_t ctime_ns;	/* the latest ctime in it (a directory: of everything below) */
};

struct ws_record {
	char *path;
	char state[WS_STATE_MAX];
};

struct ws_records {
	struct ws_record *v;
	size_t n, cap;
	int64_t since_ns;	/* -1: none pending */
};

static int64_t ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static void put_digest(struct hash_sha256 *h, char kind, char *out)
{
	uint8_t d[HASH_SHA256_LEN];
	hash_sha256_final(h, d);
	out[0] = kind;
	hash_hex(d, sizeof(d), out + 1);
}

/* Every entry below rel (a directory of the tree), sorted, into h. */
static int hash_dir(int root, const char *rel, size_t skip, struct hash_sha256 *h, int64_t *ctime_max, int depth)
{
	char **names;
	size_t n;
	if (depth > 256)
		return -ELOOP;
	int r = ws_list_dir(root, rel, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s/%s", rel, names[i]) >= (int)sizeof(p)) {
			r = -ENAMETOOLONG;
			break;
		}
		struct stat st;
		if ((r = ws_lstat(root, p, &st)) < 0)
			break;
		*ctime_max = MAX(*ctime_max, ctime_ns(&st));
		/* An array, not a struct: no padding bytes to hash. */
		int64_t meta[3] = { st.st_mode, S_ISDIR(st.st_mode) ? 0 : (int64_t)st.st_size,
				    S_ISDIR(st.st_mode) ? 0 : (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec };
		hash_sha256_update(h, p + skip, strlen(p + skip) + 1);
		hash_sha256_update(h, &meta, sizeof(meta));
		if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			int k = ws_readlink(root, p, t, sizeof(t));
			if ((r = k) < 0)
				break;
			hash_sha256_update(h, t, (size_t)k);
		}
		if (S_ISDIR(st.st_mode))
			r = hash_dir(root, p, skip, h, ctime_max, depth + 1);
	}
	ws_free_list(names, n);
	return r < 0 ? r : 0;
}

/* The tree's state at rel. */
static void state_of(int root, const char *rel, struct ws_state *ret)
{
	*ret = (struct ws_state){ .s = "-" };
	struct stat st;
	int r = ws_lstat(root, rel, &st);
	if (r == -ENOENT)
		return;
	if (r < 0) {
		snprintf(ret->s, sizeof(ret->s), "!%d", -r);
		return;
	}
	ret->ctime_ns = ctime_ns(&st);
	struct hash_sha256 h;
	hash_sha256_init(&h);
	uint32_t mode = st.st_mode;
	hash_sha256_update(&h, &mode, sizeof(mode));
	char kind = 'o';
	if (S_ISREG(st.st_mode)) {
		kind = 'f';
		_cleanup_close_ int fd = ws_open_reg(root, rel, NULL);
		char b[65536];
		ssize_t n = 0;
		while (fd >= 0 && (n = fdio_read_some(fd, b, sizeof(b))) > 0)
			hash_sha256_update(&h, b, (size_t)n);
		r = fd < 0 ? fd : (int)MIN(n, 0);
	} else if (S_ISLNK(st.st_mode)) {
		kind = 'l';
		char t[PATH_MAX];
		r = ws_readlink(root, rel, t, sizeof(t));
		if (r >= 0)
			hash_sha256_update(&h, t, (size_t)r);
	} else if (S_ISDIR(st.st_mode)) {
		kind = 'd';
		r = hash_dir(root, rel, strlen(rel) + 1, &h, &ret->ctime_ns, 0);
	} else {
		hash_sha256_update(&h, &st.st_rdev, sizeof(st.st_rdev));
	}
	if (r < 0)
		snprintf(ret->s, sizeof(ret->s), "!%d", -r);
	else
		put_digest(&h, kind, ret->s);
}

static void records_free(struct ws_records *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->v[i].path);
	free(rs->v);
	*rs = (struct ws_records){ .since_ns = -1 };
}

static int record_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ws_record *)a)->path, ((const struct ws_record *)b)->path);
}

static struct ws_record *records_find(const struct ws_records *rs, const char *path)
{
	struct ws_record key = { .path = (char *)path };
	return rs->n ? bsearch(&key, rs->v, rs->n, sizeof(*rs->v), record_cmp) : NULL;
}

/* Added at the end: sort before the next records_find. */
static int records_add(struct ws_records *rs, const char *path, const char *state)
{
	if (array_grow(&rs->v, &rs->cap, rs->n, sizeof(*rs->v), 64) < 0)
		return -ENOMEM;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	rs->v[rs->n].path = p;
	snprintf(rs->v[rs->n].state, sizeof(rs->v[rs->n].state), "%s", state);
	rs->n++;
	return 0;
}

static void records_sort(struct ws_records *rs)
{
	if (rs->n)
		qsort(rs->v, rs->n, sizeof(*rs->v), record_cmp);
}

/* No file: no records and nothing pending. */
static int records_load(const char *file, struct ws_records *ret, struct err *e)
{
	*ret = (struct ws_records){ .since_ns = -1 };
	_cleanup_free_ char *b = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, file, WS_BASE_MAX, &b, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_setc(e, r, "cannot read the base of the workspace changes, %s", file);
	if (len < sizeof(WS_BASE_MAGIC) || memcmp(b, WS_BASE_MAGIC, sizeof(WS_BASE_MAGIC)) || b[len - 1])
		return err_set(e, -EINVAL, "%s is not a record of ward's (the base of the workspace changes)", file);
	for (size_t off = sizeof(WS_BASE_MAGIC); off < len && r >= 0;) {
		char *item = b + off;
		off += strlen(item) + 1;
		char *sp = strchr(item, ' ');
		if (!sp || (size_t)(sp - item) >= WS_STATE_MAX) {
			r = err_set(e, -EINVAL, "%s: a malformed record", file);
			break;
		}
		*sp = 0;
		if (!strcmp(item, "since"))
			ret->since_ns = strtoll(sp + 1, NULL, 10);
		else
			r = records_add(ret, sp + 1, item);
	}
	if (r < 0) {
		records_free(ret);
		return r == -ENOMEM ? err_setc(e, r, "%s", file) : r;
	}
	records_sort(ret);
	return 0;
}

/* Written whole, then renamed over the old one. */
static int records_save(const char *file, const struct ws_records *rs, struct err *e)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.%d", file, getpid()) >= (int)sizeof(tmp))
		return err_set(e, -ENAMETOOLONG, "%s: name too long", file);
	FILE *f = NULL;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && !(f = fdopen(fd, "w")))
		close(fd);
	if (!f)
		return err_setc(e, -errno, "cannot write %s", tmp);
	fwrite(WS_BASE_MAGIC, 1, sizeof(WS_BASE_MAGIC), f);
	if (rs->since_ns >= 0)
		fprintf(f, "since %lld%c", (long long)rs->since_ns, 0);
	for (size_t i = 0; i < rs->n; i++)
		fprintf(f, "%s %s%c", rs->v[i].state, rs->v[i].path, 0);
	bool bad = ferror(f);
	if (fclose(f) != 0 || bad || rename(tmp, file) < 0) {
		int r = -(errno ? errno : EIO);
		unlink(tmp);
		return err_setc(e, r, "cannot write %s", file);
	}
	return 0;
}

int ws_base_begin(const char *file, int64_t since_ns, struct err *e)
{
	struct ws_records rs;
	int r = records_load(file, &rs, e);
	if (r < 0)
		return r;
	if (rs.since_ns < 0 || since_ns < rs.since_ns)
		rs.since_ns = since_ns;
	r = records_save(file, &rs, e);
	records_free(&rs);
	return r;
}

/* A state for path, unless it has a record (and is not being renewed).
 * rs->v[0..old) is sorted; a path comes twice only in a row (a directory
 * deleted and a file added in its place). */
static int record_one(struct ws_records *rs, size_t old, int root, const char *path, bool renew)
{
	struct ws_record key = { .path = (char *)path }, *had = NULL;
	if (old)
		had = bsearch(&key, rs->v, old, sizeof(*rs->v), record_cmp);
	if (!had && rs->n > old && !strcmp(rs->v[rs->n - 1].path, path))
		had = &rs->v[rs->n - 1];
	if (had && !renew)
		return 0;
	struct ws_state st;
	state_of(root, path, &st);
	/* Changed after a box may have taken its copy: the copy may predate it. */
	if (!renew && strcmp(st.s, "-") && (rs->since_ns < 0 || st.ctime_ns >= rs->since_ns))
		snprintf(st.s, sizeof(st.s), "?");
	if (had) {
		snprintf(had->state, sizeof(had->state), "%s", st.s);
		return 0;
	}
	return records_add(rs, path, st.s);
}

/* The records, and the tree's root: an fd, or -errno with nothing held. */
static int records_and_tree(const char *file, const char *lower, struct ws_records *rs, struct err *e)
{
	int r = records_load(file, rs, e);
	if (r < 0)
		return r;
	int root = open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		r = err_setc(e, -errno, "cannot open %s", lower);
		records_free(rs);
	}
	return root < 0 ? r : root;
}

int ws_base_record(const char *file, const char *lower, const struct ws_changes *c, bool applied, struct err *e)
{
	struct ws_records rs;
	_cleanup_close_ int root = records_and_tree(file, lower, &rs, e);
	if (root < 0)
		return root;
	int r = 0;
	size_t old = rs.n;
	for (size_t i = 0; i < c->n && r >= 0; i++)
		if (!applied || !ws_change_left_out(c, &c->v[i]))
			r = record_one(&rs, old, root, c->v[i].path, applied);
	for (size_t i = 0; i < c->nsame && r >= 0 && !applied; i++)
		r = record_one(&rs, old, root, c->same[i], false);
	if (r < 0) {
		records_free(&rs);
		return err_setc(e, r, "cannot record the base of the workspace changes");
	}
	records_sort(&rs);
	if (!applied)
		rs.since_ns = -1;
	r = records_save(file, &rs, e);
	records_free(&rs);
	return r;
}

int ws_base_check(const char *file, const char *lower, struct ws_changes *c, struct err *e)
{
	struct ws_records rs;
	_cleanup_close_ int root = records_and_tree(file, lower, &rs, e);
	if (root < 0)
		return root;
	int n = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct ws_change *ch = &c->v[i];
		struct ws_state now;
		ch->conflict = NULL;
		if (ws_change_left_out(c, ch))
			continue;	/* not applied: nothing of the tree's is lost */
		state_of(root, ch->path, &now);
		const struct ws_record *rec = records_find(&rs, ch->path);
		if (rec && !strcmp(rec->state, "?"))
			ch->conflict = "it changed in the tree while the run had its own copy";
		else if (rec && strcmp(rec->state, now.s))
			ch->conflict = "it changed in the tree since the run";
		else if (!rec && strcmp(now.s, "-") && rs.since_ns < 0)
			ch->conflict = "no base was recorded for it (ward cannot tell whether the tree changed)";
		else if (!rec && strcmp(now.s, "-") && now.ctime_ns >= rs.since_ns)
			ch->conflict = "no base was recorded for it (the run was cut off), and it changed since the run began";
		n += ch->conflict != NULL;
	}
	records_free(&rs);
	return n;
}
