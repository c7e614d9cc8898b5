#include "workspace/checkpoint.h"
#include "workspace/ckmanifest.h"
#include "base/array.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "workspace/layers.h"
#include "base/state.h"
#include "workspace/wsfs.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* Restored modes: never setuid or setgid. */
#define CK_MODE_MASK 01777

struct checkpoint_stamp checkpoint_stamp_of(const struct stat *st)
{
	return (struct checkpoint_stamp){
		.ino = st->st_ino,
		.size = st->st_size,
		.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
		.ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec,
	};
}

bool checkpoint_unchanged(const struct checkpoint_stamp *a, const struct checkpoint_stamp *b)
{
	return a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static void ck_path(char *out, size_t n, const char *dir, int k, const char *what)
{
	snprintf(out, n, "%s/%d%s%s", dir, k, what ? "/" : "", what ? what : "");
}

static int ck_manifest_read(const char *dir, int k, struct ckmanifest *ret, struct err *e)
{
	char p[PATH_MAX];
	ck_path(p, sizeof(p), dir, k, "manifest");
	return ckmanifest_read(p, ret, e);
}

/* Taking one: the layer's root, the previous checkpoint (its entries
 * sorted by path), the objects directory, and the objects this take made
 * (removed again if it fails). */
struct ck_take {
	int uroot;
	struct ckmanifest prev;
	int objs;
	char id[24];		/* this take's prefix of the objects it makes */
	struct ckmanifest cur;
	char **made;
	size_t nmade, made_cap;
	struct checkpoint_stats st;
};

/* A copy of the live file (name in the directory dfd) as a new object,
 * x->obj. */
static int ck_copy_in(struct ck_take *t, int dfd, const char *name, struct ckmanifest_entry *x)
{
	struct stat st;
	_cleanup_close_ int src = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (src < 0)
		return -errno;
	if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	/* The stamp of what is copied, taken before the bytes: a change
	 * during the copy is copied again next time. */
	x->stamp = checkpoint_stamp_of(&st);
	x->xattrs = ckmanifest_xattrs_read(src);
	char obj[CKMANIFEST_OBJ_MAX + 1];
	snprintf(obj, sizeof(obj), "%s-%zx", t->id, x->copy);
	if (!(x->obj = strdup(obj)) || array_grow(&t->made, &t->made_cap, t->nmade, sizeof(*t->made), 16) < 0)
		return -ENOMEM;
	_cleanup_close_ int dst = openat(t->objs, obj, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return -errno;
	if (!(t->made[t->nmade] = strdup(obj)))
		return -ENOMEM;
	t->nmade++;
	int r = ws_clone_or_copy(src, dst, st.st_size);
	if (r < 0)
		return r;
	t->st.copied++;
	t->st.bytes_copied += (uint64_t)st.st_size;
	return 0;
}

/* An unchanged file keeps the previous checkpoint's object: nothing is
 * copied or linked, the new manifest names the same one. */
static bool ck_same_as_prev(struct ck_take *t, const struct stat *st, struct ckmanifest_entry *x)
{
	if (!t->prev.n)
		return false;
	struct ckmanifest_entry key = { .path = x->path };
	const struct ckmanifest_entry *old = bsearch(&key, t->prev.v, t->prev.n, sizeof(key), ckmanifest_path_cmp);
	struct checkpoint_stamp now = checkpoint_stamp_of(st);
	if (!old || old->type != 'f' || !old->obj || !checkpoint_unchanged(&old->stamp, &now))
		return false;
	if (!(x->obj = strdup(old->obj)))
		return false;
	x->stamp = now;
	x->xattrs = old->xattrs ? cJSON_Duplicate(old->xattrs, 1) : NULL;
	return true;
}

/* Each directory is reached beneath the layer's root with no symlink on
 * the way (wsfs.h); its entries by name from there, one component each. */
static int ck_walk(struct ck_take *t, const char *rel)
{
	char **names;
	size_t n;
	_cleanup_close_ int dfd = ws_open(t->uroot, rel, O_PATH | O_DIRECTORY);
	if (dfd < 0)
		return dfd;
	int r = ws_list_dir(t->uroot, rel, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s%s%s", rel, rel[0] ? "/" : "", names[i]) >= (int)sizeof(p)) {
			r = -ENAMETOOLONG;
			break;
		}
		struct stat st;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* gone meanwhile */
		struct ckmanifest_entry x = { .mode = st.st_mode & 07777, .uid = st.st_uid, .gid = st.st_gid,
				      .mtime_ns = checkpoint_stamp_of(&st).mtime_ns };
		if (S_ISDIR(st.st_mode))
			x.type = 'd';
		else if (S_ISREG(st.st_mode))
			x.type = 'f';
		else if (S_ISLNK(st.st_mode))
			x.type = 'l';
		else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
			x.type = 'w';
		else {
			t->st.skipped++;
			continue;
		}
		if (!(x.path = strdup(p))) {
			r = -ENOMEM;
			break;
		}
		if (x.type == 'd') {
			_cleanup_close_ int fd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				x.xattrs = ckmanifest_xattrs_read(fd);
		} else if (x.type == 'l') {
			char tg[PATH_MAX];
			ssize_t k = readlinkat(dfd, names[i], tg, sizeof(tg) - 1);
			r = k < 0 ? -errno : 0;
			if (k >= 0)
				tg[k] = 0;
			if (r >= 0 && !(x.target = strdup(tg)))
				r = -ENOMEM;
		} else if (x.type == 'f') {
			x.copy = t->cur.n;
			t->st.files++;
			if (!ck_same_as_prev(t, &st, &x))
				r = ck_copy_in(t, dfd, names[i], &x);
		}
		if (r >= 0)
			r = ckmanifest_push(&t->cur, &x);
		if (r < 0) {
			free(x.path);
			free(x.target);
			free(x.obj);
			cJSON_Delete(x.xattrs);
			break;
		}
		t->st.entries++;
		if (x.type == 'd')
			r = ck_walk(t, p);
	}
	ws_free_list(names, n);
	return r;
}

/* The highest-numbered checkpoint in dir, or 0. */
static int ck_latest(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int best = 0;
	while (d && (de = readdir(d))) {
		uint64_t k;
		char m[PATH_MAX];
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || parse_u64(de->d_name, &k) < 0 || k > INT_MAX)
			continue;
		ck_path(m, sizeof(m), dir, (int)k, "manifest");
		if ((int)k > best && access(m, F_OK) == 0)
			best = (int)k;
	}
	return best;
}

int checkpoint_dir(const char *name, char *out, size_t n, struct err *e)
{
	int r = layers_beside(name, ".ckpt", out, n, e);
	if (r < 0)
		return r;
	if (state_mkdir_p(out, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", out);
	chmod(out, 0700);
	return 0;
}

bool checkpoint_has(const char *dir, int n)
{
	char m[PATH_MAX];
	ck_path(m, sizeof(m), dir, n, "manifest");
	return n >= 1 && access(m, F_OK) == 0;
}

/* a and b swapped: at once (RENAME_EXCHANGE), or where the file system
 * takes no rename flags (fuse2fs over libfuse 2: layers on an image
 * without root) in three renames through a name beside b, so that a crash
 * between them leaves b's old entry there (B.swap). 0 or -errno. */
static int ck_exchange(const char *a, const char *b)
{
	if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	char side[PATH_MAX];
	if ((size_t)snprintf(side, sizeof(side), "%s.swap", b) >= sizeof(side))
		return -ENAMETOOLONG;
	state_rm_rf(side);
	if (rename(b, side) < 0)
		return -errno;
	if (rename(a, b) < 0) {
		int r = -errno;
		rename(side, b);
		return r;
	}
	return rename(side, a) < 0 ? -errno : 0;
}

/* tmp, made whole, becomes checkpoint n (replacing one of that number):
 * 1 when it replaced one, 0 when not, or -errno. */
static int ck_commit(const char *dir, const char *tmp, int n)
{
	char dst[PATH_MAX];
	ck_path(dst, sizeof(dst), dir, n, NULL);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
		return 0;
	/* A file system that takes no rename flags (fuse2fs over libfuse 2:
	 * a fork's copy on its layers image, without root): none there yet
	 * is a plain rename, as nobody else writes in dir meanwhile (a take
	 * holds the layers, or the checkpoints' lock). */
	if (errno == EINVAL && access(dst, F_OK) < 0 && errno == ENOENT)
		return rename(tmp, dst) < 0 ? -errno : 0;
	if (errno != EEXIST)
		return -errno;
	int r = ck_exchange(tmp, dst);
	if (r < 0)
		return r;
	state_rm_rf(tmp);
	return 1;
}

static int ck_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Remove the objects no checkpoint in dir names any more (one dropped or
 * replaced, or a take a killed ward left half-made). A manifest that
 * cannot be read keeps every object: nothing is removed on a guess. */
static void ck_collect(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/objects", dir);
	_cleanup_close_ int objs = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (objs < 0 || !d)
		return;
	char **keep = NULL;
	size_t nkeep = 0, cap = 0;
	bool all = false;
	struct dirent *de;
	while (!all && (de = readdir(d))) {
		uint64_t k;
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || parse_u64(de->d_name, &k) < 0 || k > INT_MAX)
			continue;
		struct ckmanifest l = { 0 };
		if (ck_manifest_read(dir, (int)k, &l, NULL) < 0) {
			ck_path(p, sizeof(p), dir, (int)k, "manifest");
			all = access(p, F_OK) == 0;	/* (a directory with no manifest is half-made) */
			continue;
		}
		for (size_t i = 0; i < l.n && !all; i++) {
			if (!l.v[i].obj)
				continue;
			if (array_grow(&keep, &cap, nkeep, sizeof(*keep), 256) < 0) {
				all = true;
				break;
			}
			keep[nkeep++] = l.v[i].obj;
			l.v[i].obj = NULL;
		}
		ckmanifest_free(&l);
	}
	if (!all) {
		if (nkeep)
			qsort(keep, nkeep, sizeof(*keep), ck_name_cmp);
		_cleanup_closedir_ DIR *od = fdopendir(dup(objs));
		while (od && (de = readdir(od))) {
			const char *name = de->d_name;
			if (name[0] == '.')
				continue;
			if (!nkeep || !bsearch(&name, keep, nkeep, sizeof(*keep), ck_name_cmp))
				unlinkat(objs, name, 0);
		}
	}
	for (size_t i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
}

int checkpoint_take(const char *dir, const char *upper, int n, struct checkpoint_stats *ret, struct err *e)
{
	int64_t t0 = now_ms();
	if (n < 1)
		return err_set(e, -EINVAL, "checkpoint %d: they count from 1", n);
	if (state_mkdir_p(dir, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", dir);
	struct ck_take t = { .uroot = -1, .objs = -1 };
	char tmp[PATH_MAX], p[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s/%d.tmp", dir, n);
	bool leftover = access(tmp, F_OK) == 0;
	state_rm_rf(tmp);	/* what a killed ward left */
	snprintf(p, sizeof(p), "%s/objects", dir);
	int r = 0;
	if (mkdir(tmp, 0700) < 0 || (mkdir(p, 0700) < 0 && errno != EEXIST) ||
	    (t.objs = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = err_setc(e, -errno, "cannot create the checkpoint %s", tmp);
		goto out;
	}
	if (leftover)
		ck_collect(dir);	/* the objects of the take that was killed */
	/* Unique among every take of dir: the time to the nanosecond. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(t.id, sizeof(t.id), "%llx", (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	int prev = ck_latest(dir);
	if (prev && ck_manifest_read(dir, prev, &t.prev, NULL) == 0 && t.prev.n)
		qsort(t.prev.v, t.prev.n, sizeof(*t.prev.v), ckmanifest_path_cmp);
	t.uroot = upper ? open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (t.uroot < 0 && upper && errno != ENOENT) {
		r = err_setc(e, -errno, "cannot open the workspace layer %s", upper);
		goto out;
	}
	if (t.uroot >= 0 && (r = ck_walk(&t, "")) < 0) {
		err_setc(e, r, "cannot checkpoint the workspace layer %s", upper);
		goto out;
	}
	snprintf(p, sizeof(p), "%s/manifest", tmp);
	if ((r = ckmanifest_write(p, &t.cur)) < 0 || (r = ck_commit(dir, tmp, n)) < 0) {
		err_setc(e, r, "cannot write the checkpoint %s", tmp);
		goto out;
	}
	if (r > 0)
		ck_collect(dir);	/* what only the replaced one named */
	r = 0;
	t.st.ms = now_ms() - t0;
	if (ret)
		*ret = t.st;
out:
	if (r < 0) {
		state_rm_rf(tmp);
		for (size_t i = 0; i < t.nmade && t.objs >= 0; i++)
			unlinkat(t.objs, t.made[i], 0);
	}
	for (size_t i = 0; i < t.nmade; i++)
		free(t.made[i]);
	free(t.made);
	if (t.uroot >= 0)
		close(t.uroot);
	if (t.objs >= 0)
		close(t.objs);
	ckmanifest_free(&t.prev);
	ckmanifest_free(&t.cur);
	return r;
}

/* The directory that will hold path's last component, beneath root. */
static int ck_parent(int root, const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (!slash)
		return fcntl(root, F_DUPFD_CLOEXEC, 3);
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%.*s", (int)(slash - path), path);
	return ws_open(root, d, O_PATH | O_DIRECTORY);
}

/* name NULL: dfd itself. */
static int ck_set_times(int dfd, const char *name, int64_t ns, int flags)
{
	struct timespec ts[2] = { { ns / 1000000000, ns % 1000000000 }, { ns / 1000000000, ns % 1000000000 } };
	int r = name ? utimensat(dfd, name, ts, flags) : futimens(dfd, ts);
	return r < 0 ? -errno : 0;
}

/* Owners are kept where this process may set them (root); else every
 * file is this user's already. */
static int ck_chown(int dfd, const char *name, const struct ckmanifest_entry *x, int flags)
{
	if (fchownat(dfd, name, x->uid, x->gid, flags) < 0 && errno != EPERM)
		return -errno;
	return 0;
}

/* The copies a restore reads: the objects, and (a checkpoint made before
 * objects were shared) its own files. */
struct ck_src {
	int objs, files;
};

/* link: the checkpoint is thrown away after (checkpoint_copy), so its
 * copy itself becomes the file where the file system allows (one copy in
 * all, not two). */
static int ck_restore_file(int parent, const char *base, const struct ck_src *cs, struct ckmanifest_entry *x, bool link)
{
	char name[32];
	snprintf(name, sizeof(name), "%zu", x->copy);
	int cfiles = x->obj ? cs->objs : cs->files;
	const char *from = x->obj ? x->obj : name;
	if (cfiles < 0)
		return -ENOENT;
	int r;
	_cleanup_close_ int dst = -1;
	if (link && linkat(cfiles, from, parent, base, 0) == 0) {
		if ((dst = openat(parent, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return -errno;
	} else {
		_cleanup_close_ int src = openat(cfiles, from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (src < 0)
			return -errno;
		struct stat sst;
		if (fstat(src, &sst) < 0)
			return -errno;
		dst = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (dst < 0)
			return -errno;
		if ((r = ws_clone_or_copy(src, dst, sst.st_size)) < 0)
			return r;
	}
	struct stat st;
	if (fchown(dst, x->uid, x->gid) < 0 && errno != EPERM)
		return -errno;
	if (fchmod(dst, x->mode & CK_MODE_MASK) < 0)
		return -errno;
	if (x->xattrs && (r = ckmanifest_xattrs_write(dst, x->xattrs)) < 0)
		return r;
	if ((r = ck_set_times(dst, NULL, x->mtime_ns, 0)) < 0)
		return r;
	/* The new file's stamp: the next checkpoint keeps this object. */
	if (fstat(dst, &st) < 0)
		return -errno;
	x->stamp = checkpoint_stamp_of(&st);
	return 0;
}

static int ck_restore_one(int root, const struct ck_src *cs, struct ckmanifest_entry *x, bool link)
{
	const char *base;
	_cleanup_close_ int parent = ck_parent(root, x->path, &base);
	if (parent < 0)
		return parent;
	int r = 0;
	switch (x->type) {
	case 'd': {
		/* Open to this process until every entry is in (its mode last). */
		if (mkdirat(parent, base, 0700) < 0)
			return -errno;
		if (x->xattrs) {
			_cleanup_close_ int fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = fd < 0 ? -errno : ckmanifest_xattrs_write(fd, x->xattrs);
		}
		return r;
	}
	case 'f':
		return ck_restore_file(parent, base, cs, x, link);
	case 'l':
		if (symlinkat(x->target, parent, base) < 0)
			return -errno;
		break;
	case 'w':
		/* A whiteout: a character device 0/0, which the kernel lets
		 * anyone make (Linux 5.8). */
		if (mknodat(parent, base, S_IFCHR | 0600, makedev(0, 0)) < 0)
			return -errno;
		if (fchmodat(parent, base, x->mode & CK_MODE_MASK, 0) < 0 && errno != EPERM)
			return -errno;
		break;
	}
	if ((r = ck_chown(parent, base, x, AT_SYMLINK_NOFOLLOW)) < 0)
		return r;
	return ck_set_times(parent, base, x->mtime_ns, AT_SYMLINK_NOFOLLOW);
}

/* Directories last, deepest first: their modes (one may be read-only) and
 * their times (which every entry made in them changed). */
static int ck_restore_dirs(int root, const struct ckmanifest *l)
{
	for (size_t i = l->n; i-- > 0;) {
		const struct ckmanifest_entry *x = &l->v[i];
		if (x->type != 'd')
			continue;
		const char *base;
		_cleanup_close_ int parent = ck_parent(root, x->path, &base);
		int r = parent < 0 ? parent : ck_chown(parent, base, x, AT_SYMLINK_NOFOLLOW);
		if (r >= 0 && fchmodat(parent, base, x->mode & CK_MODE_MASK, 0) < 0)
			r = -errno;
		if (r >= 0)
			r = ck_set_times(parent, base, x->mtime_ns, AT_SYMLINK_NOFOLLOW);
		if (r < 0)
			return r;
	}
	return 0;
}

static int ck_restore(const char *dir, int n, const char *upper, bool link, struct checkpoint_stats *ret,
		      struct err *e)
{
	int64_t t0 = now_ms();
	struct ckmanifest l = { 0 };
	int r = ck_manifest_read(dir, n, &l, e);
	if (r < 0)
		return r;
	char nu[PATH_MAX + 16], p[PATH_MAX];
	snprintf(nu, sizeof(nu), "%s.rewind", upper);
	state_rm_rf(nu);	/* what a killed ward left */
	struct stat ust;
	bool had = stat(upper, &ust) == 0;
	int root = -1;
	struct ck_src cs = { -1, -1 };
	struct checkpoint_stats st = { 0 };
	if (mkdir(nu, had ? ust.st_mode & 07777 : 0755) < 0 || (root = open(nu, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = err_setc(e, -errno, "cannot create %s", nu);
		goto out;
	}
	snprintf(p, sizeof(p), "%s/objects", dir);
	cs.objs = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_path(p, sizeof(p), dir, n, "files");
	cs.files = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < l.n; i++) {
		r = ck_restore_one(root, &cs, &l.v[i], link);
		if (r < 0) {
			err_setc(e, r, "cannot restore %s from checkpoint %d", l.v[i].path, n);
			goto out;
		}
		st.entries++;
		if (l.v[i].type == 'f') {
			st.files++;
			st.bytes_copied += (uint64_t)l.v[i].stamp.size;
		}
	}
	if ((r = ck_restore_dirs(root, &l)) < 0) {
		err_setc(e, r, "cannot restore the directories of checkpoint %d", n);
		goto out;
	}
	if (had && (ust.st_uid != geteuid() || ust.st_gid != getegid()))
		fchownat(root, "", ust.st_uid, ust.st_gid, AT_EMPTY_PATH);
	/* All at once: the layer is the old one or the new one. */
	r = had ? ck_exchange(nu, upper) : rename(nu, upper) < 0 ? -errno : 0;
	if (r < 0) {
		r = err_setc(e, r, "cannot put the rewound layer in place of %s", upper);
		goto out;
	}
	ck_path(p, sizeof(p), dir, n, "manifest");
	/* Not renewed (written beside, so the old one stands): the next
	 * checkpoint copies every file instead of keeping the objects. */
	ckmanifest_write(p, &l);
	st.copied = st.files;
	st.ms = now_ms() - t0;
	if (ret)
		*ret = st;
out:
	if (root >= 0)
		close(root);
	if (cs.objs >= 0)
		close(cs.objs);
	if (cs.files >= 0)
		close(cs.files);
	state_rm_rf(nu);	/* the old layer, or the half-made new one */
	ckmanifest_free(&l);
	return r;
}

int checkpoint_restore(const char *dir, int n, const char *upper, struct checkpoint_stats *ret, struct err *e)
{
	return ck_restore(dir, n, upper, false, ret, e);
}

int checkpoint_copy(const char *src, const char *dst, struct checkpoint_stats *ret, struct err *e)
{
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s.fork", dst) >= sizeof(dir))
		return err_set(e, -ENAMETOOLONG, "the layer's path %s is too long", dst);
	state_rm_rf(dir);	/* what a killed keeper left */
	struct checkpoint_stats took = { 0 }, put = { 0 };
	int r = checkpoint_take(dir, src, 1, &took, e);
	if (r >= 0)
		r = ck_restore(dir, 1, dst, true, &put, e);
	state_rm_rf(dir);
	if (r >= 0 && ret) {
		*ret = took;
		ret->ms = took.ms + put.ms;
	}
	return r;
}

void checkpoint_drop_after(const char *dir, int n)
{
	if (n <= 0) {
		state_rm_rf(dir);
		return;
	}
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char *dot = strchr(de->d_name, '.');
		char num[32];
		uint64_t k;
		snprintf(num, sizeof(num), "%.*s", dot ? (int)(dot - de->d_name) : (int)strlen(de->d_name), de->d_name);
		if (parse_u64(num, &k) < 0 || (k <= (uint64_t)n && !dot))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		state_rm_rf(p);
	}
	ck_collect(dir);
}
