/* image/layout.c and image/ref.c: an OCI image layout read (the image
 * picked through indexes and docker manifest lists, each JSON blob checked
 * against its digest and size, the config's diff_ids matched to the
 * layers), what is refused and why; references brought to docker's normal
 * form, and which registries a pull for an untrusted source may reach. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/hash.h"
#include "image/layout.h"
#include "image/ref.h"
#include "image/unpack.h"
#include "tap.h"

static char tmpl[] = "/tmp/ward-imagelayout-XXXXXX";
static int dirfd_;

/* A blob written: its digest (static buffers, a few in turn). */
static const char *blob(const char *text)
{
	static char ring[8][IMAGE_DIGEST_MAX];
	static int i;
	char *d = ring[i++ % 8], hex[HASH_SHA256_HEX], p[128];
	hash_sha256_hex(text, strlen(text), hex);
	snprintf(d, IMAGE_DIGEST_MAX, "sha256:%s", hex);
	snprintf(p, sizeof(p), "blobs/sha256/%s", hex);
	int fd = openat(dirfd_, p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(fd, text, strlen(text));
	close(fd);
	return d;
}

static void put(const char *name, const char *text)
{
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(fd, text, strlen(text));
	close(fd);
}

#define L1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D1 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* An image's manifest for arch (a config with diff_ids of nd layers, the
 * manifest naming one layer of layer_type): its descriptor JSON. */
static char *manifest(const char *arch, int nd, const char *layer_type, const char *extra)
{
	char cfg[1024], man[2048], *desc;
	snprintf(cfg, sizeof(cfg),
		 "{\"architecture\":\"%s\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/bin\",\"X=1\"],\"WorkingDir\":\"/w\","
		 "\"User\":\"1000:1000\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[%s%s%s]}}",
		 arch, nd > 0 ? "\"" D1 "\"" : "", nd > 1 ? "," : "", nd > 1 ? "\"" D1 "\"" : "");
	const char *cd = blob(cfg);
	snprintf(man, sizeof(man),
		 "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":"
		 "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},\"layers\":[{\"mediaType\":\"%s\","
		 "\"digest\":\"" L1 "\",\"size\":10}]}",
		 cd, strlen(cfg), layer_type);
	const char *md = blob(man);
	if (asprintf(&desc, "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":%zu,"
			    "\"platform\":{\"architecture\":\"%s\",\"os\":\"linux\"}%s}",
		     md, strlen(man), arch, extra ? extra : "") < 0)
		return NULL;
	return desc;
}

static void index_of(const char *descs)
{
	char ix[8192];
	snprintf(ix, sizeof(ix), "{\"schemaVersion\":2,\"manifests\":[%s]}", descs);
	put("index.json", ix);
}

static int read_layout(struct image_layout *l, struct err *e)
{
	*e = (struct err){ 0 };
	return image_layout_read(dirfd_, l, e);
}

#define GZ "application/vnd.oci.image.layer.v1.tar+gzip"

static void test_layout(void)
{
	struct image_layout l;
	struct err e;
	put("oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
	char *one = manifest("amd64", 1, GZ,
			     ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"ghcr.io/o/n:1\",\"io.containerd.image.name\":\"n:2\"}");
	index_of(one);
	is_int(read_layout(&l, &e), 0, "one image: read (%s)", e.msg);
	is_int(l.nlayers, 1, "its layer");
	is_str(l.layers[0].digest, L1, "the layer's digest");
	is_str(l.layers[0].diff_id, D1, "and its diff_id, from the config");
	is_str(l.platform, "linux/amd64", "its platform, from the config");
	is_str(l.picked, "", "nothing to pick from");
	ok(l.nnames == 2, "the annotations name it twice");
	cJSON *rc = image_layout_run_config(&l);
	char *t = cJSON_PrintUnformatted(rc);
	is_str(t, "{\"env\":[\"PATH=/bin\",\"X=1\"],\"workdir\":\"/w\",\"user\":\"1000:1000\"}", "Env, WorkingDir and User, kept");
	free(t);
	cJSON_Delete(rc);
	image_layout_free(&l);

	/* An index of two platforms, as a docker manifest list. */
	char *arm = manifest("arm64", 1, GZ, NULL), *amd = manifest("amd64", 1, GZ, NULL);
	char list[8192], top[8192];
	snprintf(list, sizeof(list), "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.list.v2+json\","
		 "\"manifests\":[%s,%s,{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" L1 "\",\"size\":1,"
		 "\"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"}}]}", arm, amd);
	const char *ld = blob(list);
	snprintf(top, sizeof(top), "{\"mediaType\":\"application/vnd.docker.distribution.manifest.list.v2+json\",\"digest\":\"%s\","
		 "\"size\":%zu}", ld, strlen(list));
	index_of(top);
	is_int(read_layout(&l, &e), 0, "a manifest list of two platforms and an attestation: read (%s)", e.msg);
	is_str(l.picked, "linux/amd64 (of linux/arm64, linux/amd64)", "linux/amd64 is picked, and which of what said");
	image_layout_free(&l);
	char *arm32 = manifest("arm", 1, GZ, NULL);
	snprintf(list, sizeof(list), "{\"schemaVersion\":2,\"manifests\":[%s,%s]}", arm, arm32);
	free(arm32);
	ld = blob(list);
	snprintf(top, sizeof(top), "{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"%s\",\"size\":%zu}",
		 ld, strlen(list));
	index_of(top);
	ok(read_layout(&l, &e) == -ENOEXEC && strstr(e.msg, "no linux/amd64 variant (it has: linux/arm64, linux/arm)"),
	   "an index with no amd64 image: refused, saying what it has (%s)", e.msg);
	index_of(arm);
	ok(read_layout(&l, &e) == -ENOEXEC && strstr(e.msg, "the image is for linux/arm64"), "one arm64 image: refused (%s)", e.msg);

	/* Blobs that do not match, configs that do not fit. */
	char *d2 = manifest("amd64", 2, GZ, NULL);
	index_of(d2);
	ok(read_layout(&l, &e) < 0 && strstr(e.msg, "the config names 2 layers and the manifest 1"), "diff_ids that do not match the layers: refused (%s)", e.msg);
	char *enc = manifest("amd64", 1, "application/vnd.oci.image.layer.v1.tar+gzip+encrypted", NULL);
	index_of(enc);
	ok(read_layout(&l, &e) < 0 && strstr(e.msg, "an encrypted one"), "an encrypted layer: refused (%s)", e.msg);
	char tampered[1024];
	const char *dg = strstr(one, "sha256:");
	snprintf(tampered, sizeof(tampered), "%s", one);
	char *sz = strstr(tampered, "\"size\":");
	sz[7] = sz[7] == '9' ? '8' : '9';
	index_of(tampered);
	ok(read_layout(&l, &e) == -EBADMSG && strstr(e.msg, "does not match its digest or size"), "a descriptor whose size is not the blob's: refused (%s)", e.msg);
	(void)dg;
	char hexp[128];
	const char *md = strstr(one, "sha256:") + 7;
	snprintf(hexp, sizeof(hexp), "blobs/sha256/%.64s", md);
	unlinkat(dirfd_, hexp, 0);
	symlinkat("/etc/passwd", dirfd_, hexp);
	index_of(one);
	ok(read_layout(&l, &e) < 0 && strstr(e.msg, "is a symbolic link"), "a blob that is a symbolic link (to /etc/passwd): refused (%s)", e.msg);
	put("oci-layout", "{}");
	ok(read_layout(&l, &e) < 0 && strstr(e.msg, "not an OCI image layout"), "no layout version: refused");
	free(one);
	free(arm);
	free(amd);
	free(d2);
	free(enc);
}

static void test_ref(void)
{
	static const struct {
		const char *in, *key, *registry;
	} good[] = {
		{ "busybox", "docker.io/library/busybox:latest", "docker.io" },
		{ "debian:bookworm", "docker.io/library/debian:bookworm", "docker.io" },
		{ "ward-test/busybox", "docker.io/ward-test/busybox:latest", "docker.io" },
		{ "index.docker.io/library/x:1", "docker.io/library/x:1", "docker.io" },
		{ "localhost/a", "localhost/a:latest", "localhost" },
		{ "127.0.0.1:5000/a/b:t", "127.0.0.1:5000/a/b:t", "127.0.0.1:5000" },
		{ "[::1]:5000/a", "[::1]:5000/a:latest", "[::1]:5000" },
		{ "ghcr.io/o/n:v1.2-rc_3", "ghcr.io/o/n:v1.2-rc_3", "ghcr.io" },
		{ "x/a__b.c-d@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  "docker.io/x/a__b.c-d@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "docker.io" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		struct image_ref r;
		struct err e = { 0 };
		ok(image_ref_parse(good[i].in, &r, &e) == 0 && !strcmp(r.key, good[i].key) && !strcmp(r.registry, good[i].registry),
		   "%s is %s, at %s (%s)", good[i].in, good[i].key, good[i].registry, e.msg[0] ? e.msg : r.key);
	}
	static const char *const bad[] = { "", "Busybox", "a//b", "a/", "-a", "a:", "a:-t", "a b", "a@sha256:12",
					   "bad_host:5000x/a", "a/B", "a..b" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct image_ref r;
		struct err e = { 0 };
		ok(image_ref_parse(bad[i], &r, &e) == -EINVAL && e.msg[0], "\"%s\" is refused: %s", bad[i], e.msg);
	}
	ok(image_ref_is_digest("sha256:0123456789ab") && !image_ref_is_digest("sha256:0123456789a") &&
	   !image_ref_is_digest("busybox"), "a digest of 12 hex digits and up names a local image");

	/* Registries a pull for an untrusted source may not reach. */
	static const struct {
		const char *ref, *want;
	} closed[] = {
		{ "127.0.0.1:5000/a", "is a loopback address" },
		{ "[::1]:5000/a", "is a loopback address" },
		{ "10.1.2.3/a", "is a private" },
		{ "169.254.169.254/latest", "is a link-local address" },
		{ "localhost:5000/a", "resolves to" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(closed); i++) {
		struct image_ref r;
		struct err e = { 0 };
		image_ref_parse(closed[i].ref, &r, NULL);
		ok(image_ref_public(&r, &e) == -EACCES && strstr(e.msg, closed[i].want), "a pull from %s is not public: %s",
		   closed[i].ref, e.msg);
	}
	struct image_ref r;
	struct err e = { 0 };
	image_ref_parse("203.0.113.7:5000/a", &r, NULL);
	ok(image_ref_public(&r, &e) == -EACCES, "a documentation address is not public either (%s)", e.msg);
	image_ref_parse("8.8.8.8/a", &r, NULL);
	is_int(image_ref_public(&r, &e), 0, "the twin: a public address is (%s)", e.msg);
}

int main(void)
{
	if (!mkdtemp(tmpl))
		return 99;
	dirfd_ = open(tmpl, O_RDONLY | O_DIRECTORY);
	mkdirat(dirfd_, "blobs", 0755);
	mkdirat(dirfd_, "blobs/sha256", 0755);
	test_layout();
	test_ref();
	close(dirfd_);
	image_unpack_rm(AT_FDCWD, tmpl);
	return tap_done();
}
