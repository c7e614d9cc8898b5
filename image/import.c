/* How an image gets here: imported from an archive or a layout, or pulled
 * from a registry (skopeo), then verified and unpacked once into the
 * store (under the digest's lock) and named. */
#include "image/archive.h"
#include "image/image.h"
#include "image/layout.h"
#include "image/ref.h"
#include "image/skopeo.h"
#include "image/store.h"
#include "image/stream.h"
#include "image/unpack.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/jsonprint.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void say(const struct image_say *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct image_say *s, const char *fmt, ...)
{
	if (!s || !s->say)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->say(s->ud, line);
}

/* A directory image_store_tmp made, removed. */
static void rm_tmp(struct image_store *s, const char *abs)
{
	size_t n = strlen(s->dir);
	if (!strncmp(abs, s->dir, n) && abs[n] == '/')
		image_store_rm(s, abs + n + 1);
}

struct names_ctx {
	char *const *names;
	size_t n;
	const char *digest;
};

static int set_names(cJSON *names, void *ud)
{
	const struct names_ctx *c = ud;
	for (size_t i = 0; i < c->n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "digest", c->digest);
		cJSON_AddNumberToObject(o, "at", (double)time(NULL));
		if (cJSON_GetObjectItemCaseSensitive(names, c->names[i]))
			cJSON_ReplaceItemInObjectCaseSensitive(names, c->names[i], o);
		else
			cJSON_AddItemToObject(names, c->names[i], o);
	}
	return c->n ? 1 : 0;
}

static int write_json(int dfd, const char *name, const char *text, size_t n)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fdio_write_full(fd, text, n);
}

/* The layers into part/root, checked as they go. */
static int unpack(struct image_store *s, int lfd, const struct image_layout *l, int pfd,
		  const struct image_limits *lim, const struct image_say *sy, struct image_unpack_stats *st,
		  struct err *e)
{
	if (mkdirat(pfd, "root", 0755) < 0)
		return err_setc(e, -errno, "cannot make the image's tree in %s", s->dir);
	_cleanup_close_ int root = openat(pfd, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return err_setc(e, -errno, "cannot open the image's tree");
	struct image_unpack *u = NULL;
	int r = image_unpack_new(root, lim, geteuid() == 0, sy, &u, e);
	for (size_t i = 0; r >= 0 && i < l->nlayers; i++) {
		const struct image_layer_desc *d = &l->layers[i];
		char what[128], dg[IMAGE_DIGEST_MAX], diff[IMAGE_DIGEST_MAX];
		snprintf(what, sizeof(what), "layer %zu of %zu (%.19s...)", i + 1, l->nlayers, d->digest);
		_cleanup_close_ int bfd = image_layout_blob(lfd, d->digest, e);
		if (bfd < 0) {
			r = bfd;
			break;
		}
		struct image_stream *str = NULL;
		if ((r = image_stream_open(bfd, IMAGE_MAX_RATIO, &str, e)) < 0)
			break;
		r = image_unpack_layer(u, what, image_stream_read, str, e);
		if (r >= 0 && (r = image_stream_end(str, dg, diff, e)) < 0)
			err_wrap(e, "%s", what);
		if (r >= 0 && (strcmp(dg, d->digest) || image_stream_in(str) != d->size))
			r = err_set(e, -EBADMSG, "%s: its bytes do not match its digest or size (a damaged or altered image)", what);
		else if (r >= 0 && strcmp(diff, d->diff_id))
			r = err_set(e, -EBADMSG, "%s: its tar does not match the config's diff_id (a damaged or altered image)",
				    what);
		image_stream_free(str);
	}
	if (r >= 0)
		r = image_unpack_finish(u, e);
	if (u)
		image_unpack_stats(u, st);
	image_unpack_free(u);
	return r;
}

static int write_meta(int pfd, const struct image_layout *l, const struct image_unpack_stats *st, struct err *e)
{
	cJSON *info = cJSON_CreateObject();
	cJSON_AddStringToObject(info, "digest", l->digest);
	cJSON_AddStringToObject(info, "platform", l->platform);
	if (l->picked[0])
		cJSON_AddStringToObject(info, "picked", l->picked);
	cJSON_AddNumberToObject(info, "layers", (double)l->nlayers);
	cJSON_AddNumberToObject(info, "files", (double)st->files);
	cJSON_AddNumberToObject(info, "bytes", (double)st->bytes);
	cJSON_AddNumberToObject(info, "unpacked", (double)time(NULL));
	cJSON_AddStringToObject(info, "owners", geteuid() == 0 && !st->owners_lost ? "the image's" : "ward's user");
	cJSON *nm = cJSON_AddObjectToObject(info, "not_made");
	cJSON_AddNumberToObject(nm, "devices", (double)st->devices);
	cJSON_AddNumberToObject(nm, "fifos", (double)st->fifos);
	cJSON_AddNumberToObject(nm, "setid_bits", (double)st->setid);
	cJSON_AddNumberToObject(nm, "xattrs", (double)st->xattrs);
	cJSON_AddItemToObject(info, "config", image_layout_run_config(l));
	_cleanup_free_ char *text = jsonprint_text(info);
	cJSON_Delete(info);
	int r = text ? 0 : -ENOMEM;
	if (r >= 0)
		r = write_json(pfd, "manifest.json", l->manifest, l->manifest_len);
	if (r >= 0)
		r = write_json(pfd, "config.json", l->config, l->config_len);
	/* Last: a tree with its info.json is a whole one. */
	if (r >= 0)
		r = write_json(pfd, "info.json", text, strlen(text));
	return r < 0 ? err_setc(e, r, "cannot write the image's record") : 0;
}

/* The layout's image unpacked into trees/HEX (once: under the digest's
 * lock, a second caller finds it done), and named. */
static int install(struct image_store *s, int lfd, const struct image_layout *l, const struct image_limits *lim,
		   char *const *names, size_t nnames, const struct image_say *sy, struct err *e)
{
	const char *hex = l->digest + 7;
	_cleanup_close_ int lock = image_store_lock(s, hex, LOCK_EX, e);
	if (lock < 0)
		return lock;
	struct names_ctx nc = { names, nnames, l->digest };
	if (image_store_has(s, hex)) {
		say(sy, "%.19s... is here already, unpacked", l->digest);
		return image_store_names_edit(s, set_names, &nc, e);
	}
	int64_t t0 = now_ms();
	char part[128];
	snprintf(part, sizeof(part), "trees/.part-%s-%d", hex, (int)getpid());
	image_store_rm(s, part);
	if (mkdirat(s->fd, part, 0700) < 0)
		return err_setc(e, -errno, "cannot make %s/%s", s->dir, part);
	_cleanup_close_ int pfd = openat(s->fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct image_unpack_stats st = { 0 };
	int r = pfd < 0 ? err_setc(e, -errno, "cannot open %s/%s", s->dir, part) : 0;
	if (r >= 0)
		r = unpack(s, lfd, l, pfd, lim, sy, &st, e);
	if (r >= 0)
		r = write_meta(pfd, l, &st, e);
	char dst[128];
	snprintf(dst, sizeof(dst), "trees/%s", hex);
	if (r >= 0 && renameat(s->fd, part, s->fd, dst) < 0)
		r = err_setc(e, -errno, "cannot move the unpacked image into %s/%s", s->dir, dst);
	if (r < 0) {
		/* Nothing half-unpacked is left. */
		image_store_rm(s, part);
		return r;
	}
	int64_t ms = now_ms() - t0;
	say(sy, "unpacked %.19s... (%llu files, %.1f MB) in %lld.%01lld s%s%s", l->digest,
	    (unsigned long long)st.files, (double)st.bytes / 1e6, (long long)(ms / 1000), (long long)(ms % 1000 / 100),
	    st.setid ? "; setuid and setgid bits cleared" : "",
	    st.xattrs ? "; extended attributes not applied" : "");
	return image_store_names_edit(s, set_names, &nc, e);
}

static int install_dir(struct image_store *s, const char *dir, char *const *names, size_t nnames,
		       const struct image_limits *lim, const struct image_say *sy, char *ret_digest, struct err *e)
{
	_cleanup_close_ int lfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return err_setc(e, -errno, "cannot open %s", dir);
	struct image_layout l;
	int r = image_layout_read(lfd, &l, e);
	if (r < 0)
		return r;
	if (l.picked[0])
		say(sy, "the image index offers several platforms: took %s", l.picked);
	/* The layout's own names, and the caller's. */
	char **all = calloc(nnames + l.nnames + 1, sizeof(*all));
	size_t n = 0;
	for (size_t i = 0; all && i < l.nnames; i++)
		all[n++] = l.names[i];
	for (size_t i = 0; all && i < nnames; i++)
		all[n++] = names[i];
	r = all ? install(s, lfd, &l, lim, all, n, sy, e) : err_set(e, -ENOMEM, "out of memory");
	if (r >= 0) {
		snprintf(ret_digest, IMAGE_DIGEST_MAX, "%s", l.digest);
		if (!n)
			say(sy, "warning: nothing names %.19s...: it is known by its digest alone, and the next ward image "
				"prune removes it (import it with --name NAME)", l.digest);
	}
	free(all);
	image_layout_free(&l);
	return r;
}

int image_import(const char *file, const char *name, const struct image_limits *lim, const struct image_say *sy,
		 char *ret_digest, struct err *e)
{
	struct image_limits dl;
	if (!lim) {
		image_limits_default(&dl);
		lim = &dl;
	}
	struct image_ref nref;
	if (name && image_ref_parse(name, &nref, e) < 0)
		return -EINVAL;
	struct stat st;
	if (stat(file, &st) < 0)
		return err_setc(e, -errno, "%s", file);
	struct image_store s;
	int r = image_store_open(&s, e);
	if (r < 0)
		return r;
	char *names[64];
	size_t nnames = 0;
	char tmp[PATH_MAX];
	tmp[0] = 0;
	struct image_archive a = { 0 };
	/* Before the first goto: its cleanup runs at out. */
	_cleanup_close_ int tfd = -1;
	if (S_ISDIR(st.st_mode)) {
		if (name)
			names[nnames++] = nref.key;
		r = install_dir(&s, file, names, nnames, lim, sy, ret_digest, e);
		goto out;
	}
	if ((r = image_store_tmp(&s, "import", tmp, sizeof(tmp), e)) < 0)
		goto out;
	char lay[PATH_MAX + 16];
	snprintf(lay, sizeof(lay), "%s/layout", tmp);
	if (mkdir(lay, 0700) < 0 || (tfd = open(lay, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = err_setc(e, -errno, "cannot make %s", lay);
		goto out;
	}
	if ((r = image_archive_read(file, tfd, lim, &a, e)) < 0)
		goto out;
	for (size_t i = 0; i < a.nnames && nnames < ARRAY_SIZE(names) - 1; i++)
		names[nnames++] = a.names[i];
	if (name)
		names[nnames++] = nref.key;
	if (a.kind == IMAGE_ARCHIVE_DOCKER) {
		/* docker's own format: skopeo makes it an OCI layout. */
		char src[PATH_MAX + 32], sk[PATH_MAX + 16];
		snprintf(src, sizeof(src), "docker-archive:%s", file);
		snprintf(sk, sizeof(sk), "%s/oci", tmp);
		if ((r = image_skopeo_copy(src, sk, tmp, NULL, e)) < 0)
			goto out;
		snprintf(lay, sizeof(lay), "%s", sk);
	}
	r = install_dir(&s, lay, names, nnames, lim, sy, ret_digest, e);
out:
	if (tmp[0])
		rm_tmp(&s, tmp);
	image_archive_free(&a);
	image_store_close(&s);
	return r;
}

int image_pull(const char *ref, const struct image_pull_opts *o, const struct image_say *sy, char *ret_digest,
	       struct err *e)
{
	struct image_ref r;
	int k = image_ref_parse(ref, &r, e);
	if (k < 0)
		return k;
	struct image_store s;
	if ((k = image_store_open(&s, e)) < 0)
		return k;
	char tmp[PATH_MAX], src[sizeof(r.key) + 16], lay[PATH_MAX + 16];
	if ((k = image_store_tmp(&s, "pull", tmp, sizeof(tmp), e)) < 0) {
		image_store_close(&s);
		return k;
	}
	say(sy, "pulling %s (%s)", r.key, image_layout_platform());
	snprintf(src, sizeof(src), "docker://%s", r.key);
	snprintf(lay, sizeof(lay), "%s/oci", tmp);
	k = image_skopeo_copy(src, lay, tmp, o, e);
	char *names[] = { r.key };
	if (k >= 0)
		k = install_dir(&s, lay, names, 1, o && o->lim ? o->lim : NULL, sy, ret_digest, e);
	rm_tmp(&s, tmp);
	image_store_close(&s);
	return k;
}

int image_resolve(const char *ref, bool trusted, const struct image_pull_opts *o, const struct image_say *sy,
		  char *ret_digest, struct err *e)
{
	int k = image_lookup(ref, ret_digest, e);
	if (k != -ENOENT)
		return k;
	if (image_ref_is_digest(ref))
		return err_set(e, -ENOENT, "no image %s here, and a digest alone names no registry to pull it from (give "
					   "NAME@%s)", ref, ref);
	struct image_ref r;
	if ((k = image_ref_parse(ref, &r, e)) < 0)
		return k;
	struct image_store s;
	if ((k = image_store_open(&s, e)) < 0)
		return k;
	/* One pull of a ref at a time: a second caller waits, then finds it. */
	char lname[80], hex[HASH_SHA256_HEX];
	hash_sha256_hex(r.key, strlen(r.key), hex);
	snprintf(lname, sizeof(lname), "ref-%.32s", hex);
	int lock = image_store_lock(&s, lname, LOCK_EX, e);
	if (lock < 0) {
		image_store_close(&s);
		return lock;
	}
	k = image_lookup(ref, ret_digest, e);
	if (k == -ENOENT && !trusted && (k = image_ref_public(&r, e)) < 0) {
		char m[sizeof(e->msg)];
		snprintf(m, sizeof(m), "%s", e->msg);
		k = err_set(e, -EACCES, "%s is not here, and a pull is refused: %s; an image a project's file or a task line "
					"names is pulled only from a public registry (pull it yourself first: ward image pull %s)",
			    r.key, m, ref);
	} else if (k == -ENOENT) {
		k = image_pull(ref, o, sy, ret_digest, e);
	}
	close(lock);
	image_store_close(&s);
	return k;
}
