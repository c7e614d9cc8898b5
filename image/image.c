/* The images here: found and held for a box, listed, removed. How they get
 * here is image/import.c's. */
#include "image/image.h"
#include "image/ref.h"
#include "image/store.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define INFO_MAX (1u << 20)

void image_limits_default(struct image_limits *l)
{
	*l = (struct image_limits){ .max_files = IMAGE_MAX_FILES, .max_bytes = IMAGE_MAX_BYTES };
}

/* The tree whose digest starts with prefix (hex digits): its hex. */
static int by_prefix(struct image_store *s, const char *prefix, char hex[65], struct err *e)
{
	int fd = openat(s->fd, "trees", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return err_setc(e, -errno, "cannot read %s/trees", s->dir);
	}
	size_t n = 0, pl = strlen(prefix);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strlen(de->d_name) == 64 && !strncmp(de->d_name, prefix, pl) && image_store_has(s, de->d_name)) {
			if (n++)
				break;
			snprintf(hex, 65, "%s", de->d_name);
		}
	closedir(d);
	if (n == 1)
		return 0;
	if (n)
		return err_set(e, -EINVAL, "sha256:%s names more than one image here; give more of the digest", prefix);
	return err_set(e, -ENOENT, "no image sha256:%s here", prefix);
}

/* A local ref's digest, in hex. */
static int lookup(struct image_store *s, const char *ref, char hex[65], struct err *e)
{
	if (image_ref_is_digest(ref))
		return by_prefix(s, ref + 7, hex, e);
	struct image_ref r;
	int k = image_ref_parse(ref, &r, e);
	if (k < 0)
		return k;
	cJSON *j = NULL;
	if ((k = image_store_names(s, &j, e)) < 0)
		return k;
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "names"), r.key);
	const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest"));
	k = 0;
	if (!d || !image_ref_digest_valid(d))
		k = err_set(e, -ENOENT, "no image %s here (ward image pull %s, or ward image import FILE)", r.key, ref);
	else if (!image_store_has(s, d + 7))
		k = err_set(e, -ENOENT, "%s names %.19s..., which is not unpacked here any more; pull or import it again", r.key, d);
	else
		snprintf(hex, 65, "%s", d + 7);
	cJSON_Delete(j);
	return k;
}

int image_lookup(const char *ref, char *ret_digest, struct err *e)
{
	struct image_store s;
	int r = image_store_open(&s, e);
	char hex[65];
	if (r >= 0 && (r = lookup(&s, ref, hex, e)) >= 0)
		snprintf(ret_digest, IMAGE_DIGEST_MAX, "sha256:%s", hex);
	image_store_close(&s);
	return r;
}

static cJSON *read_info(struct image_store *s, const char *hex, struct err *e)
{
	char p[128];
	snprintf(p, sizeof(p), "trees/%s/info.json", hex);
	_cleanup_free_ char *text = NULL;
	size_t n;
	cJSON *j = NULL;
	int r = fdio_read_file(s->fd, p, INFO_MAX, &text, &n);
	if (r < 0 || jsonstrict_parse(text, n, &j, NULL) < 0 || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		err_set(e, r < 0 ? r : -EINVAL, "%s/%s cannot be read; remove the image and import it again", s->dir, p);
		return NULL;
	}
	return j;
}

void image_info_release(struct image_info *img)
{
	for (size_t i = 0; i < img->nenv; i++)
		free(img->env[i]);
	free(img->env);
	free(img->workdir);
	free(img->user);
	if (img->hold_fd >= 0)
		close(img->hold_fd);
	*img = (struct image_info){ .hold_fd = -1 };
}

static int info_fill(struct image_info *img, const cJSON *info)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(info, "config");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env"), *v;
	size_t n = (size_t)cJSON_GetArraySize(env);
	if (!(img->env = calloc(n + 1, sizeof(*img->env))))
		return -ENOMEM;
	cJSON_ArrayForEach(v, env)
		if (cJSON_IsString(v) && !(img->env[img->nenv++] = strdup(v->valuestring)))
			return -ENOMEM;
	const char *wd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "workdir"));
	const char *user = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "user"));
	if ((wd && !(img->workdir = strdup(wd))) || (user && !(img->user = strdup(user))))
		return -ENOMEM;
	return 0;
}

int image_find(const char *ref, struct image_info *ret, struct err *e)
{
	struct image_store s;
	char hex[65];
	int r = image_store_open(&s, e);
	if (r >= 0)
		r = lookup(&s, ref, hex, e);
	if (r < 0) {
		image_store_close(&s);
		return r;
	}
	struct image_info img = { .hold_fd = -1 };
	/* Held shared: a prune or an rm takes it exclusively to remove. */
	img.hold_fd = image_store_lock(&s, hex, LOCK_SH, e);
	if (img.hold_fd < 0) {
		image_store_close(&s);
		return img.hold_fd;
	}
	cJSON *info = NULL;
	if (!image_store_has(&s, hex))
		r = err_set(e, -ENOENT, "image sha256:%.12s was removed while it was being taken", hex);
	else if (!(info = read_info(&s, hex, e)))
		r = -EINVAL;
	else if (info_fill(&img, info) < 0)
		r = err_set(e, -ENOMEM, "out of memory");
	cJSON_Delete(info);
	if (r >= 0) {
		snprintf(img.digest, sizeof(img.digest), "sha256:%s", hex);
		snprintf(img.root, sizeof(img.root), "%s/trees/%s/root", s.dir, hex);
		/* When a box last took it: ward image ls shows it. */
		char p[128];
		snprintf(p, sizeof(p), "trees/%s/used", hex);
		int fd = openat(s.fd, p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			futimens(fd, NULL);
			close(fd);
		}
	}
	image_store_close(&s);
	if (r < 0) {
		image_info_release(&img);
		return r;
	}
	*ret = img;
	return 0;
}

/* Whether a box (or anyone) holds the image: its lock is not free. */
static bool in_use(struct image_store *s, const char *hex)
{
	int fd = image_store_lock(s, hex, LOCK_EX | LOCK_NB, NULL);
	if (fd >= 0)
		close(fd);
	return fd == -EWOULDBLOCK;
}

int image_list(cJSON **ret, struct err *e)
{
	struct image_store s;
	int r = image_store_open(&s, e);
	cJSON *names = NULL;
	if (r >= 0)
		r = image_store_names(&s, &names, e);
	int fd = r >= 0 ? openat(s.fd, "trees", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (r >= 0)
			r = err_setc(e, -errno, "cannot read %s/trees", s.dir);
		if (fd >= 0)
			close(fd);
		cJSON_Delete(names);
		image_store_close(&s);
		return r;
	}
	cJSON *a = cJSON_CreateArray();
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(names, "names"), *n;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 64 || !image_store_has(&s, de->d_name))
			continue;
		cJSON *info = read_info(&s, de->d_name, NULL);
		cJSON *o = cJSON_CreateObject();
		char dg[IMAGE_DIGEST_MAX];
		snprintf(dg, sizeof(dg), "sha256:%s", de->d_name);
		cJSON_AddStringToObject(o, "digest", dg);
		cJSON *ns = cJSON_AddArrayToObject(o, "names");
		cJSON_ArrayForEach(n, nm)
			if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest")) ?: "", dg))
				cJSON_AddItemToArray(ns, cJSON_CreateString(n->string));
		static const char *const keys[] = { "platform", "bytes", "files", "layers", "unpacked" };
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(info, keys[i]);
			if (v)
				cJSON_AddItemToObject(o, !strcmp(keys[i], "bytes") ? "size" : keys[i], cJSON_Duplicate(v, 1));
		}
		char p[128];
		struct stat st;
		snprintf(p, sizeof(p), "trees/%s/used", de->d_name);
		if (fstatat(s.fd, p, &st, 0) == 0)
			cJSON_AddNumberToObject(o, "used", (double)st.st_mtime);
		else
			cJSON_AddNullToObject(o, "used");
		cJSON_AddBoolToObject(o, "in_use", in_use(&s, de->d_name));
		cJSON_AddItemToArray(a, o);
		cJSON_Delete(info);
	}
	closedir(d);
	cJSON_Delete(names);
	image_store_close(&s);
	*ret = a;
	return 0;
}

/* The image goes, if nobody holds it: 1 gone, 0 in use; its bytes. */
static int remove_tree(struct image_store *s, const char *hex, uint64_t *ret_bytes, struct err *e)
{
	int fd = image_store_lock(s, hex, LOCK_EX | LOCK_NB, e);
	if (fd == -EWOULDBLOCK)
		return 0;
	if (fd < 0)
		return fd;
	cJSON *info = read_info(s, hex, NULL);
	if (ret_bytes)
		*ret_bytes = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(info, "bytes"));
	cJSON_Delete(info);
	/* Out of trees/ at once (a rename), then removed at leisure: nobody
	 * finds half a tree. */
	char from[128], to[160];
	snprintf(from, sizeof(from), "trees/%s", hex);
	snprintf(to, sizeof(to), "tmp/%d-rm-%s", (int)getpid(), hex);
	int r = renameat(s->fd, from, s->fd, to) < 0 ? -errno : 0;
	if (r == 0)
		image_store_rm(s, to);
	else if (r != -ENOENT)
		err_setc(e, r, "cannot remove %s/%s", s->dir, from);
	image_store_lock_drop(s, hex);
	close(fd);
	return r < 0 && r != -ENOENT ? r : 1;
}

struct rm_ctx {
	const char *key;	/* a name to remove, or NULL: every name of digest */
	char digest[IMAGE_DIGEST_MAX];
	bool left;		/* another name still points to digest */
	size_t removed;
};

static int rm_names(cJSON *names, void *ud)
{
	struct rm_ctx *c = ud;
	if (c->key) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(names, c->key);
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest"));
		if (!d)
			return 0;
		snprintf(c->digest, sizeof(c->digest), "%s", d);
		cJSON_DeleteItemFromObjectCaseSensitive(names, c->key);
		c->removed++;
	}
	for (cJSON *n = names->child, *next; n; n = next) {
		next = n->next;
		const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest"));
		if (!d || strcmp(d, c->digest))
			continue;
		if (c->key) {
			c->left = true;
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(names, n->string);
			c->removed++;
		}
	}
	return c->removed ? 1 : 0;
}

int image_rm(const char *ref, bool *ret_removed, struct err *e)
{
	struct image_store s;
	struct rm_ctx c = { 0 };
	struct image_ref r;
	char hex[65];
	*ret_removed = false;
	int k = image_store_open(&s, e);
	if (k < 0)
		return k;
	if (image_ref_is_digest(ref)) {
		if ((k = by_prefix(&s, ref + 7, hex, e)) < 0)
			goto out;
		snprintf(c.digest, sizeof(c.digest), "sha256:%s", hex);
	} else {
		if ((k = image_ref_parse(ref, &r, e)) < 0)
			goto out;
		c.key = r.key;
	}
	if ((k = image_store_names_edit(&s, rm_names, &c, e)) < 0)
		goto out;
	if (c.key && !c.removed) {
		k = err_set(e, -ENOENT, "no image named %s here (ward image ls lists them)", r.key);
		goto out;
	}
	if (!c.left && (k = remove_tree(&s, c.digest + 7, NULL, e)) >= 0)
		*ret_removed = k == 1;
out:
	image_store_close(&s);
	return k < 0 ? k : 0;
}

static bool pid_gone(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);
	return pid > 0 && *end == '-' && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int image_prune(cJSON **ret, uint64_t *ret_bytes, struct err *e)
{
	struct image_store s;
	cJSON *names = NULL;
	int r = image_store_open(&s, e);
	if (r >= 0)
		r = image_store_names(&s, &names, e);
	if (r < 0) {
		image_store_close(&s);
		return r;
	}
	cJSON *out = cJSON_CreateArray();
	uint64_t total = 0;
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(names, "names"), *n;
	int fd = openat(s.fd, "trees", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		const char *h = de->d_name;
		/* An unpack whose ward died (one under way holds the lock). */
		if (!strncmp(h, ".part-", 6) && strlen(h) > 71) {
			char hex[65], p[128];
			snprintf(hex, sizeof(hex), "%.64s", h + 6);
			int lfd = image_store_lock(&s, hex, LOCK_EX | LOCK_NB, NULL);
			if (lfd >= 0) {
				snprintf(p, sizeof(p), "trees/%s", h);
				image_store_rm(&s, p);
				close(lfd);
			}
			continue;
		}
		if (strlen(h) != 64)
			continue;
		bool named = false;
		cJSON_ArrayForEach(n, nm)
			named |= !strncmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest")) ?: "", "sha256:", 7) &&
				 !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "digest")) + 7, h);
		if (named)
			continue;
		uint64_t bytes = 0;
		if (remove_tree(&s, h, &bytes, NULL) == 1) {
			char dg[IMAGE_DIGEST_MAX];
			snprintf(dg, sizeof(dg), "sha256:%s", h);
			cJSON_AddItemToArray(out, cJSON_CreateString(dg));
			total += bytes;
		}
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	/* Locks nothing needs: a pull's that no pull holds, a digest's whose
	 * image is gone (taken exclusively first: image_store_lock sees a lock
	 * removed under it and takes the new one). */
	fd = openat(s.fd, "locks", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	while (d && (de = readdir(d))) {
		const char *l = de->d_name;
		bool ref = !strncmp(l, "ref-", 4), digest = strlen(l) == 64 && !image_store_has(&s, l);
		char p[128];
		snprintf(p, sizeof(p), "trees/%s", l);
		struct stat st;
		if (digest && fstatat(s.fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
			digest = false;	/* an unpack's part, or a tree being removed */
		if (!ref && !digest)
			continue;
		int lfd = image_store_lock(&s, l, LOCK_EX | LOCK_NB, NULL);
		if (lfd >= 0) {
			image_store_lock_drop(&s, l);
			close(lfd);
		}
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	/* Downloads and removals a ward left behind when it died. */
	fd = openat(s.fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	while (d && (de = readdir(d)))
		if (pid_gone(de->d_name)) {
			char p[300];
			snprintf(p, sizeof(p), "tmp/%s", de->d_name);
			image_store_rm(&s, p);
		}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	cJSON_Delete(names);
	image_store_close(&s);
	*ret = out;
	if (ret_bytes)
		*ret_bytes = total;
	return 0;
}
