#include "image/layout.h"
#include "image/ref.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/hash.h"
#include "base/jsonstrict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Indexes inside indexes, at most. */
#define INDEX_DEPTH 4

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"

static const char *const config_types[] = {
	"application/vnd.oci.image.config.v1+json",
	"application/vnd.docker.container.image.v1+json",
};
/* Filesystem layers: plain, gzip or zstd tars (the bytes say which). */
static const char *const layer_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.oci.image.layer.nondistributable.v1.tar",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
};

static bool one_of(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

const char *image_layout_platform(void)
{
	static char p[64];
	if (!p[0]) {
		struct utsname u;
		const char *m = uname(&u) == 0 ? u.machine : "x86_64";
		const char *arch = !strcmp(m, "x86_64") ? "amd64" : !strcmp(m, "aarch64") ? "arm64"
				 : !strncmp(m, "arm", 3) ? "arm" : !strcmp(m, "i686") ? "386" : m;
		snprintf(p, sizeof(p), "linux/%s", arch);
	}
	return p;
}

int image_layout_blob(int dirfd, const char *digest, struct err *e)
{
	if (!image_ref_digest_valid(digest))
		return err_set(e, -EINVAL, "\"%.80s\" is not a sha256 digest (the only kind ward reads)", digest);
	char p[128];
	snprintf(p, sizeof(p), "blobs/sha256/%s", digest + 7);
	int fd = fdio_open_beneath(dirfd, p);
	if (fd < 0)
		return err_set(e, fd, "blob %.19s... %s", digest,
			       fd == -ENOENT ? "is missing from the image" : fd == -ELOOP ? "is a symbolic link" : strerror(-fd));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, -EINVAL, "blob %.19s... is not a regular file", digest);
	}
	/* Opened non-blocking (a FIFO would not hang it); a file reads the
	 * same either way. */
	fdio_set_nonblock(fd, false);
	return fd;
}

/* A JSON blob, checked against its descriptor: bytes and parse. */
static int json_blob(int dirfd, const cJSON *desc, const char *what, char **ret_text, size_t *ret_len, cJSON **ret,
		     struct err *e)
{
	const char *digest = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(desc, "digest"));
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(desc, "size");
	if (!digest || !cJSON_IsNumber(size) || size->valuedouble < 0)
		return err_set(e, -EINVAL, "the %s's descriptor has no digest or size", what);
	if (size->valuedouble > IMAGE_JSON_MAX)
		return err_set(e, -EFBIG, "the %s is %.0f bytes (at most %u)", what, size->valuedouble, IMAGE_JSON_MAX);
	_cleanup_close_ int fd = image_layout_blob(dirfd, digest, e);
	if (fd < 0)
		return fd;
	char *text = NULL;
	size_t n = 0;
	int r = fdio_read_fd(fd, IMAGE_JSON_MAX, &text, &n);
	if (r < 0)
		return err_set(e, r, "the %s %.19s...: %s", what, digest, r == -EFBIG ? "too big" : strerror(-r));
	char hex[HASH_SHA256_HEX];
	hash_sha256_hex(text, n, hex);
	if (strcmp(hex, digest + 7) || (double)n != size->valuedouble) {
		free(text);
		return err_set(e, -EBADMSG, "the %s %.19s... does not match its digest or size (a damaged or altered image)",
			       what, digest);
	}
	cJSON *j = NULL;
	struct err pe = { 0 };
	if ((r = jsonstrict_parse(text, n, &j, &pe)) < 0 || !cJSON_IsObject(j)) {
		free(text);
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "the %s %.19s... is not a JSON object%s%s", what, digest, pe.msg[0] ? ": " : "", pe.msg);
	}
	*ret = j;
	if (ret_text) {
		*ret_text = text;
		*ret_len = n;
	} else {
		free(text);
	}
	return 0;
}

static const char *str_of(const cJSON *j, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, k));
}

/* "os/arch[/variant]" of a descriptor's platform, or "". */
static void platform_of(const cJSON *desc, char *out, size_t n)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(desc, "platform");
	const char *os = str_of(p, "os"), *arch = str_of(p, "architecture"), *v = str_of(p, "variant");
	if (!os || !arch)
		snprintf(out, n, "%s", "");
	else
		snprintf(out, n, "%.20s/%.20s%s%.20s", os, arch, v ? "/" : "", v ? v : "");
}

static bool platform_ours(const char *p)
{
	const char *mine = image_layout_platform();
	size_t l = strlen(mine);
	return !strncmp(p, mine, l) && (p[l] == 0 || p[l] == '/');
}

/* From an index's manifests, the one for this machine (attestations, whose
 * platform is unknown/unknown, are no images). */
static int pick(const cJSON *list, struct image_layout *l, const cJSON **ret, struct err *e)
{
	const cJSON *d, *mine = NULL;
	char all[300] = "", p[64];
	size_t n = 0, nplat = 0;
	cJSON_ArrayForEach(d, list) {
		platform_of(d, p, sizeof(p));
		if (!strcmp(p, "unknown/unknown"))
			continue;
		n++;
		if (p[0]) {
			size_t k = strlen(all);
			snprintf(all + k, sizeof(all) - k, "%s%s", nplat++ ? ", " : "", p);
		}
		if (!mine && platform_ours(p))
			mine = d;
	}
	if (!n)
		return err_set(e, -ENOENT, "the image index lists no image");
	/* One image: its config says what it is for (read_config). */
	if (!mine && n == 1)
		cJSON_ArrayForEach(d, list) {
			platform_of(d, p, sizeof(p));
			if (strcmp(p, "unknown/unknown"))
				mine = d;
		}
	if (!mine)
		return err_set(e, -ENOEXEC, "the image has no %s variant (it has: %s); ward runs %s images only",
			       image_layout_platform(), nplat ? all : "images that name no platform", image_layout_platform());
	if (n > 1) {
		platform_of(mine, p, sizeof(p));
		snprintf(l->picked, sizeof(l->picked), "%s (of %s)", p, all);
	}
	*ret = mine;
	return 0;
}

static int add_name(struct image_layout *l, const char *s)
{
	for (size_t i = 0; i < l->nnames; i++)
		if (!strcmp(l->names[i], s))
			return 0;
	char **g = realloc(l->names, (l->nnames + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	l->names = g;
	if (!(g[l->nnames] = strdup(s)))
		return -ENOMEM;
	l->nnames++;
	return 0;
}

/* The names index.json gives its image: a full reference in
 * io.containerd.image.name (docker's and containerd's), or a ref name that
 * is one (a bare tag, skopeo's oci:DIR:TAG, names no repository). */
static int names_of(const cJSON *desc, struct image_layout *l)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(desc, "annotations");
	const char *keys[] = { "io.containerd.image.name", "org.opencontainers.image.ref.name" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *v = str_of(a, keys[i]);
		struct image_ref r;
		if (v && (strchr(v, '/') || strchr(v, ':')) && image_ref_parse(v, &r, NULL) == 0 && add_name(l, r.key) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int read_config(int dirfd, const cJSON *man, struct image_layout *l, struct err *e)
{
	const cJSON *cd = cJSON_GetObjectItemCaseSensitive(man, "config");
	if (!one_of(str_of(cd, "mediaType"), config_types, ARRAY_SIZE(config_types)))
		return err_set(e, -EINVAL, "not a container image: its config is \"%.80s\"",
			       str_of(cd, "mediaType") ? str_of(cd, "mediaType") : "(none)");
	cJSON *cfg = NULL;
	int r = json_blob(dirfd, cd, "config", &l->config, &l->config_len, &cfg, e);
	if (r < 0)
		return r;
	const char *os = str_of(cfg, "os"), *arch = str_of(cfg, "architecture");
	char p[64];
	snprintf(p, sizeof(p), "%.20s/%.20s", os ? os : "?", arch ? arch : "?");
	snprintf(l->platform, sizeof(l->platform), "%s", p);
	if (!platform_ours(p)) {
		cJSON_Delete(cfg);
		return err_set(e, -ENOEXEC, "the image is for %s; this machine runs %s", p, image_layout_platform());
	}
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, "rootfs"), "diff_ids");
	int nids = cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : -1;
	if (nids < 0 || (size_t)nids != l->nlayers) {
		cJSON_Delete(cfg);
		return err_set(e, -EINVAL, "the config names %d layers and the manifest %zu", nids, l->nlayers);
	}
	size_t i = 0;
	const cJSON *id;
	cJSON_ArrayForEach(id, ids) {
		const char *s = cJSON_GetStringValue(id);
		if (!s || !image_ref_digest_valid(s)) {
			cJSON_Delete(cfg);
			return err_set(e, -EINVAL, "the config's diff_id %zu is not a sha256 digest", i + 1);
		}
		snprintf(l->layers[i++].diff_id, IMAGE_DIGEST_MAX, "%s", s);
	}
	cJSON_Delete(cfg);
	return 0;
}

static int read_manifest(int dirfd, const cJSON *desc, struct image_layout *l, struct err *e)
{
	cJSON *man = NULL;
	int r = json_blob(dirfd, desc, "manifest", &l->manifest, &l->manifest_len, &man, e);
	if (r < 0)
		return r;
	snprintf(l->digest, sizeof(l->digest), "%s", str_of(desc, "digest"));
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(man, "layers");
	int n = cJSON_GetArraySize(layers);
	if (!cJSON_IsArray(layers) || n < 1 || n > IMAGE_MAX_LAYERS) {
		cJSON_Delete(man);
		return err_set(e, -EINVAL, "the manifest has %d layers (1 to %d)", n, IMAGE_MAX_LAYERS);
	}
	if (!(l->layers = calloc((size_t)n, sizeof(*l->layers)))) {
		cJSON_Delete(man);
		return err_set(e, -ENOMEM, "out of memory");
	}
	l->nlayers = (size_t)n;
	size_t i = 0;
	const cJSON *d;
	cJSON_ArrayForEach(d, layers) {
		const char *mt = str_of(d, "mediaType"), *dg = str_of(d, "digest");
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(d, "size");
		if (!one_of(mt, layer_types, ARRAY_SIZE(layer_types))) {
			r = err_set(e, -EINVAL, "layer %zu is \"%.80s\", not a filesystem layer ward reads%s", i + 1, mt ? mt : "(none)",
				    mt && strstr(mt, "encrypted") ? " (an encrypted one)" : "");
			break;
		}
		if (!dg || !image_ref_digest_valid(dg) || !cJSON_IsNumber(sz) || sz->valuedouble < 0) {
			r = err_set(e, -EINVAL, "layer %zu has no sha256 digest or no size", i + 1);
			break;
		}
		snprintf(l->layers[i].digest, IMAGE_DIGEST_MAX, "%s", dg);
		l->layers[i++].size = (uint64_t)sz->valuedouble;
	}
	if (r >= 0)
		r = read_config(dirfd, man, l, e);
	cJSON_Delete(man);
	return r;
}

int image_layout_read(int dirfd, struct image_layout *ret, struct err *e)
{
	struct image_layout l = { 0 };
	_cleanup_free_ char *lay = NULL, *idx = NULL;
	size_t n;
	int r;
	_cleanup_close_ int lfd = fdio_open_beneath(dirfd, "oci-layout");
	if (lfd < 0 || fdio_read_fd(lfd, 4096, &lay, &n) < 0 || !strstr(lay, "\"imageLayoutVersion\""))
		return err_set(e, -EINVAL, "not an OCI image layout (no oci-layout file naming its version)");
	_cleanup_close_ int ifd = fdio_open_beneath(dirfd, "index.json");
	if (ifd < 0 || (r = fdio_read_fd(ifd, IMAGE_JSON_MAX, &idx, &n)) < 0)
		return err_set(e, -EINVAL, "the OCI image layout has no index.json of at most %u bytes", IMAGE_JSON_MAX);
	cJSON *top = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(idx, n, &top, &pe) < 0 || !cJSON_IsObject(top)) {
		cJSON_Delete(top);
		return err_set(e, -EINVAL, "the layout's index.json is not a JSON object%s%s", pe.msg[0] ? ": " : "", pe.msg);
	}
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(top, "manifests");
	/* Several images, each named: an archive of more than one image. */
	if (cJSON_GetArraySize(list) > 1) {
		const cJSON *d;
		size_t named = 0;
		cJSON_ArrayForEach(d, list)
			named += cJSON_GetObjectItemCaseSensitive(d, "annotations") != NULL;
		bool platforms = true;
		cJSON_ArrayForEach(d, list)
			platforms &= cJSON_GetObjectItemCaseSensitive(d, "platform") != NULL;
		if (named > 1 && !platforms) {
			cJSON_Delete(top);
			return err_set(e, -EINVAL, "the archive holds %d images; ward imports one at a time", cJSON_GetArraySize(list));
		}
	}
	cJSON *owned = NULL;
	const cJSON *desc = NULL;
	r = pick(list, &l, &desc, e);
	if (r >= 0 && (r = names_of(desc, &l)) < 0)
		err_set(e, r, "out of memory");
	for (int depth = 0; r >= 0; depth++) {
		const char *mt = str_of(desc, "mediaType");
		if (mt && (!strcmp(mt, MT_OCI_MANIFEST) || !strcmp(mt, MT_DOCKER_MANIFEST))) {
			r = read_manifest(dirfd, desc, &l, e);
			break;
		}
		if (!mt || (strcmp(mt, MT_OCI_INDEX) && strcmp(mt, MT_DOCKER_LIST))) {
			r = err_set(e, -EINVAL, "\"%.80s\" is neither an image manifest nor an image index", mt ? mt : "(no media type)");
			break;
		}
		if (depth == INDEX_DEPTH) {
			r = err_set(e, -ELOOP, "image indexes nested more than %d deep", INDEX_DEPTH);
			break;
		}
		cJSON *ix = NULL;
		if ((r = json_blob(dirfd, desc, "image index", NULL, NULL, &ix, e)) < 0)
			break;
		cJSON_Delete(owned);
		owned = ix;
		r = pick(cJSON_GetObjectItemCaseSensitive(ix, "manifests"), &l, &desc, e);
	}
	cJSON_Delete(owned);
	cJSON_Delete(top);
	if (r < 0) {
		image_layout_free(&l);
		return r;
	}
	*ret = l;
	return 0;
}

void image_layout_free(struct image_layout *l)
{
	free(l->manifest);
	free(l->config);
	free(l->layers);
	for (size_t i = 0; i < l->nnames; i++)
		free(l->names[i]);
	free(l->names);
	*l = (struct image_layout){ 0 };
}

cJSON *image_layout_run_config(const struct image_layout *l)
{
	cJSON *cfg = cJSON_ParseWithLength(l->config, l->config_len);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cfg, "config");
	cJSON *out = cJSON_CreateObject();
	cJSON *env = cJSON_AddArrayToObject(out, "env");
	const cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(c, "Env"))
		if (cJSON_IsString(v) && strchr(v->valuestring, '='))
			cJSON_AddItemToArray(env, cJSON_CreateString(v->valuestring));
	const char *wd = str_of(c, "WorkingDir"), *user = str_of(c, "User");
	if (wd && *wd)
		cJSON_AddStringToObject(out, "workdir", wd);
	if (user && *user)
		cJSON_AddStringToObject(out, "user", user);
	cJSON_Delete(cfg);
	return out;
}
