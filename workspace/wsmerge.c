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

static int walk(enum wslayer_writer w, int root, const char *rel, cJSON *m, struct err *e)
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
		if (cJSON_GetArraySize(m) >= WSMERGE_ENTRIES_MAX) {
			r = err_set(e, -E2BIG, "a workspace layer has more than %d entries", WSMERGE_ENTRIES_MAX);
			break;
		}
		char sig[PATH_MAX + 8];
		if (names[i].whiteout) {
			snprintf(sig, sizeof(sig), "w");
		} else if (S_ISDIR(st.st_mode)) {
			r = walk(w, root, p, m, e);
			continue;
		} else if (S_ISREG(st.st_mode)) {
			int fd = ws_open_reg(root, p, NULL);
			char hex[HASH_SHA256_HEX] = "";
			if (fd >= 0) {
				hash_sha256_fd_hex(fd, hex);
				close(fd);
			}
			snprintf(sig, sizeof(sig), "f %o %s", (unsigned)(st.st_mode & 0777), hex);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			if (ws_readlink(root, p, t, sizeof(t)) < 0)
				continue;
			snprintf(sig, sizeof(sig), "l %s", t);
		} else {
			continue;	/* sockets, FIFOs, devices: not merged */
		}
		cJSON_AddStringToObject(m, p, sig);
	}
	wslayer_list_free(names, n);
	return r;
}

int wsmerge_manifest(const char *upper, cJSON **ret, struct err *e)
{
	cJSON *m = cJSON_CreateObject();
	int root = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 && errno != ENOENT) {
		cJSON_Delete(m);
		return err_setc(e, -errno, "cannot open the workspace layer %s", upper);
	}
	int r = root >= 0 ? walk(wslayer_writer_of(root), root, "", m, e) : 0;
	if (root >= 0)
		close(root);
	if (r < 0) {
		cJSON_Delete(m);
		return r;
	}
	*ret = m;
	return 0;
}

static const char *sig_of(const cJSON *m, const char *p)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, p));
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A version as the model is shown it: a file's first bytes (marked when
 * cut), a symlink's target, or what it is. */
static char *show(int root, int lower, const char *p, const char *sig)
{
	struct buf b;
	buf_init(&b, WSMERGE_SHOW_MAX + 256);
	int from = root;
	if (!sig) {
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
	} else if (sig[0] == 'w') {
		buf_printf(&b, "(deleted)");
		goto out;
	} else if (sig[0] == 'l') {
		buf_printf(&b, "(a symlink to %s)", sig + 2);
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
static int take(enum wslayer_writer pw, int proot, int croot, const char *p, const char *sig)
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
	if (!sig) {
		/* The child removed an entry the layer had (a file the parent
		 * made before the fork, with nothing under it). */
		return unlinkat(d, base, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
	struct stat st;
	bool had = fstatat(d, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (had && S_ISDIR(st.st_mode))
		return -EISDIR;
	if (sig[0] == 'w') {
		if (had && unlinkat(d, base, 0) < 0)
			return -errno;
		return mknodat(d, base, S_IFCHR | 0600, makedev(0, 0)) < 0 ? -errno : 0;
	}
	if (sig[0] == 'l') {
		if (had && unlinkat(d, base, 0) < 0)
			return -errno;
		return symlinkat(sig + 2, d, base) < 0 ? -errno : 0;
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

static void add_change(cJSON *a, const char *p, const char *base, const char *sig)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", p);
	cJSON_AddStringToObject(o, "change", !sig || sig[0] == 'w' ? "deleted" : base ? "modified" : "added");
	cJSON_AddItemToArray(a, o);
}

static void add_conflict(cJSON *a, const char *p, const char *why, int proot, int lower, const char *psig, int croot,
			 const char *csig)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", p);
	cJSON_AddStringToObject(o, "why", why);
	_cleanup_free_ char *yours = show(proot, lower, p, psig);
	_cleanup_free_ char *theirs = show(croot, -1, p, csig);
	cJSON_AddStringToObject(o, "yours", yours ? yours : "");
	cJSON_AddStringToObject(o, "theirs", theirs ? theirs : "");
	cJSON_AddItemToArray(a, o);
}

int wsmerge_apply(const char *parent_upper, const char *lower, struct wsmerge_child *c, size_t n, struct err *e)
{
	int r = 0;
	cJSON *pm = NULL;
	cJSON **cm = calloc(n ? n : 1, sizeof(*cm));
	int *croot = calloc(n ? n : 1, sizeof(*croot));
	int proot = -1, lroot = -1;
	if (!cm || !croot) {
		r = err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		croot[i] = -1;
	if ((r = wsmerge_manifest(parent_upper, &pm, e)) < 0)
		goto out;
	proot = open(parent_upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proot < 0) {
		r = err_setc(e, -errno, "cannot open the parent's workspace layer");
		goto out;
	}
	enum wslayer_writer pw = wslayer_writer_of(proot);
	lroot = lower ? open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	for (size_t i = 0; i < n; i++) {
		if ((r = wsmerge_manifest(c[i].upper, &cm[i], e)) < 0)
			goto out;
		croot[i] = open(c[i].upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
		c[i].out = cJSON_CreateObject();
		cJSON_AddArrayToObject(c[i].out, "merged");
		cJSON_AddArrayToObject(c[i].out, "conflicts");
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *merged = cJSON_GetObjectItemCaseSensitive(c[i].out, "merged");
		cJSON *conf = cJSON_GetObjectItemCaseSensitive(c[i].out, "conflicts");
		/* The paths the child's entry differs at: its own, and the
		 * base's it no longer has. */
		for (int pass = 0; pass < 2; pass++) {
			const cJSON *it;
			const cJSON *list = pass ? c[i].base : (const cJSON *)cm[i];
			cJSON_ArrayForEach(it, list) {
				const char *p = it->string;
				const char *bsig = sig_of(c[i].base, p), *csig = sig_of(cm[i], p);
				if (pass && csig)
					continue;	/* seen in the first pass */
				if (same(bsig, csig))
					continue;
				const char *psig = sig_of(pm, p);
				/* Another child of this merge changed it otherwise. */
				bool other = false;
				for (size_t k = 0; k < n && !other; k++)
					other = k != i && !same(sig_of(c[k].base, p), sig_of(cm[k], p)) &&
						!same(sig_of(cm[k], p), csig);
				if (other) {
					add_conflict(conf, p, "another subagent changed it too", proot, lroot, psig, croot[i], csig);
				} else if (same(psig, csig)) {
					add_change(merged, p, bsig, csig);	/* the same change: nothing to do */
				} else if (!same(psig, bsig)) {
					add_conflict(conf, p, "the workspace changed it after the subagent began", proot, lroot,
						     psig, croot[i], csig);
				} else {
					int k = take(pw, proot, croot[i], p, csig);
					if (k < 0) {
						char why[128];
						snprintf(why, sizeof(why), "it could not be written: %s", strerror(-k));
						add_conflict(conf, p, why, proot, lroot, psig, croot[i], csig);
					} else {
						add_change(merged, p, bsig, csig);
					}
				}
			}
		}
	}
	/* Taken into the layer: the manifest changed, and a later child of
	 * this merge compares with what it was (its base), as it should. */
out:
	for (size_t i = 0; cm && i < n; i++) {
		cJSON_Delete(cm[i]);
		if (croot && croot[i] >= 0)
			close(croot[i]);
	}
	free(cm);
	free(croot);
	cJSON_Delete(pm);
	if (proot >= 0)
		close(proot);
	if (lroot >= 0)
		close(lroot);
	return r;
}
