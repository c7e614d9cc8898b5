#include "workspace/ckmanifest.h"
#include "base/array.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A manifest is read whole: about 200 bytes an entry, so a few million. */
#define CK_MANIFEST_MAX (1u << 30)
/* The overlay's own xattrs (user.* under userxattr, trusted.* as root):
 * an opaque directory's marker, and what it records of a copy-up. */
#define CK_XATTR_LIST_MAX 65536
#define CK_XATTR_VALUE_MAX 4096

void ckmanifest_free(struct ckmanifest *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].target);
		free(l->v[i].obj);
		cJSON_Delete(l->v[i].xattrs);
	}
	free(l->v);
	*l = (struct ckmanifest){ 0 };
}

int ckmanifest_push(struct ckmanifest *l, const struct ckmanifest_entry *x)
{
	if (array_grow(&l->v, &l->cap, l->n, sizeof(*l->v), 64) < 0)
		return -ENOMEM;
	l->v[l->n++] = *x;
	return 0;
}

int ckmanifest_path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ckmanifest_entry *)a)->path, ((const struct ckmanifest_entry *)b)->path);
}

static void i64_str(char *out, size_t n, int64_t v)
{
	snprintf(out, n, "%lld", (long long)v);
}

/* Numbers past 2^53 (inodes, nanoseconds) travel as strings. */
static bool str_i64(const cJSON *o, const char *k, int64_t *ret)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*end || errno)
		return false;
	*ret = v;
	return true;
}

static int64_t num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static cJSON *entry_json(const struct ckmanifest_entry *x)
{
	char b[32];
	cJSON *o = cJSON_CreateObject();
	char t[2] = { x->type, 0 };
	cJSON_AddStringToObject(o, "p", x->path);
	cJSON_AddStringToObject(o, "t", t);
	cJSON_AddNumberToObject(o, "m", x->mode & 07777);
	cJSON_AddNumberToObject(o, "u", x->uid);
	cJSON_AddNumberToObject(o, "g", x->gid);
	i64_str(b, sizeof(b), x->mtime_ns);
	cJSON_AddStringToObject(o, "mt", b);
	if (x->type == 'f') {
		i64_str(b, sizeof(b), (int64_t)x->stamp.ino);
		cJSON_AddStringToObject(o, "i", b);
		i64_str(b, sizeof(b), x->stamp.size);
		cJSON_AddStringToObject(o, "s", b);
		i64_str(b, sizeof(b), x->stamp.mtime_ns);
		cJSON_AddStringToObject(o, "smt", b);
		i64_str(b, sizeof(b), x->stamp.ctime_ns);
		cJSON_AddStringToObject(o, "sct", b);
		if (x->obj)
			cJSON_AddStringToObject(o, "o", x->obj);
		else
			cJSON_AddNumberToObject(o, "c", (double)x->copy);
	}
	if (x->target)
		cJSON_AddStringToObject(o, "l", x->target);
	if (x->xattrs)
		cJSON_AddItemToObject(o, "x", cJSON_Duplicate(x->xattrs, 1));
	return o;
}

static int entry_parse(const cJSON *o, struct ckmanifest_entry *ret)
{
	struct ckmanifest_entry x = { 0 };
	const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "p"));
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "t"));
	int64_t m = num(o, "m"), u = num(o, "u"), g = num(o, "g"), ino = 0, c = 0;
	/* A path is relative, with no "..": it is made beneath the new layer. */
	if (!p || !*p || *p == '/' || !t || !strchr("fdlw", t[0]) || !t[0] || t[1] || m < 0 || u < 0 || g < 0 ||
	    !strcmp(p, "..") || !strncmp(p, "../", 3) || strstr(p, "/../") ||
	    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")) || !str_i64(o, "mt", &x.mtime_ns))
		return -EBADMSG;
	x.type = t[0];
	x.mode = (mode_t)m;
	x.uid = (uid_t)u;
	x.gid = (gid_t)g;
	const char *obj = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "o"));
	if (x.type == 'f') {
		c = obj ? 0 : num(o, "c");
		if ((obj && !ckmanifest_obj_ok(obj)) || c < 0 || !str_i64(o, "i", &ino) || !str_i64(o, "s", &x.stamp.size) ||
		    !str_i64(o, "smt", &x.stamp.mtime_ns) || !str_i64(o, "sct", &x.stamp.ctime_ns))
			return -EBADMSG;
		x.stamp.ino = (uint64_t)ino;
		x.copy = (size_t)c;
	}
	const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "l"));
	if (x.type == 'l' && !l)
		return -EBADMSG;
	const cJSON *xa = cJSON_GetObjectItemCaseSensitive(o, "x");
	x.path = strdup(p);
	x.target = l ? strdup(l) : NULL;
	x.obj = x.type == 'f' && obj ? strdup(obj) : NULL;
	x.xattrs = cJSON_IsObject(xa) ? cJSON_Duplicate(xa, 1) : NULL;
	if (!x.path || (l && !x.target) || (x.type == 'f' && obj && !x.obj)) {
		free(x.path);
		free(x.target);
		free(x.obj);
		cJSON_Delete(x.xattrs);
		return -ENOMEM;
	}
	*ret = x;
	return 0;
}

int ckmanifest_read(const char *p, struct ckmanifest *ret, struct err *e)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, p, CK_MANIFEST_MAX, &data, &len);
	if (r < 0)
		return err_setc(e, r, "cannot read the checkpoint %s", p);
	struct ckmanifest l = { 0 };
	for (char *s = data, *nl; s < data + len; s = nl + 1) {
		nl = memchr(s, '\n', (size_t)(data + len - s));
		if (!nl)
			nl = data + len;
		cJSON *o = cJSON_ParseWithLength(s, (size_t)(nl - s));
		struct ckmanifest_entry x;
		r = o ? entry_parse(o, &x) : -EBADMSG;
		cJSON_Delete(o);
		if (r >= 0)
			r = ckmanifest_push(&l, &x);
		if (r < 0) {
			ckmanifest_free(&l);
			return err_setc(e, r, "the checkpoint %s is damaged", p);
		}
	}
	*ret = l;
	return 0;
}

/* Written beside and renamed over: a manifest is whole or absent. */
int ckmanifest_write(const char *path, const struct ckmanifest *l)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* The workspace's file names: the owner's only, whatever the umask. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd < 0 || fchmod(fd, 0600) < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		int r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	int r = 0;
	for (size_t i = 0; i < l->n && r >= 0; i++) {
		cJSON *o = entry_json(&l->v[i]);
		_cleanup_free_ char *s = o ? cJSON_PrintUnformatted(o) : NULL;
		cJSON_Delete(o);
		if (!s || fprintf(f, "%s\n", s) < 0)
			r = s ? -EIO : -ENOMEM;
	}
	if (fclose(f) != 0 && r >= 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

bool ckmanifest_obj_ok(const char *name)
{
	size_t n = strlen(name);
	return n && n <= CKMANIFEST_OBJ_MAX && strspn(name, "0123456789abcdef-") == n;
}

/* fuse-overlayfs's own too (workspace/wslayer.h): kept as they are; only
 * a layer of its writes is read by them. */
static bool overlay_xattr(const char *name)
{
	return !strncmp(name, "user.overlay.", 13) || !strncmp(name, "trusted.overlay.", 16) ||
	       !strncmp(name, "user.fuseoverlayfs.", 19);
}

/* The overlay's xattrs on fd, hex-encoded; NULL when it has none. */
cJSON *ckmanifest_xattrs_read(int fd)
{
	char names[CK_XATTR_LIST_MAX];
	ssize_t n = flistxattr(fd, names, sizeof(names));
	cJSON *o = NULL;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		if (!overlay_xattr(names + i))
			continue;
		unsigned char v[CK_XATTR_VALUE_MAX];
		ssize_t k = fgetxattr(fd, names + i, v, sizeof(v));
		if (k < 0)
			continue;
		char hex[2 * CK_XATTR_VALUE_MAX + 1];
		hash_hex(v, (size_t)k, hex);
		if (!o)
			o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, names + i, hex);
	}
	return o;
}

int ckmanifest_xattrs_write(int fd, const cJSON *xa)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, xa) {
		const char *hex = cJSON_GetStringValue(it);
		size_t hl = hex ? strlen(hex) : 1;
		if (!it->string || !overlay_xattr(it->string) || hl % 2 || hl / 2 > CK_XATTR_VALUE_MAX)
			return -EBADMSG;
		unsigned char v[CK_XATTR_VALUE_MAX];
		for (size_t j = 0; j < hl / 2; j++) {
			unsigned int b;
			if (sscanf(hex + 2 * j, "%2x", &b) != 1)
				return -EBADMSG;
			v[j] = (unsigned char)b;
		}
		if (fsetxattr(fd, it->string, v, hl / 2, 0) < 0)
			return -errno;
	}
	return 0;
}
