#include "image/archive.h"
#include "image/layout.h"
#include "image/ref.h"
#include "image/stream.h"
#include "image/tar.h"
#include "image/unpack.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* An entry's path without "./" and leading slashes. */
static const char *plain(const char *p)
{
	for (;;) {
		if (p[0] == '/')
			p++;
		else if (p[0] == '.' && p[1] == '/')
			p += 2;
		else
			return p;
	}
}

/* The names the layout may hold: nothing else is ever made. */
static bool layout_file(const char *p)
{
	if (!strcmp(p, "oci-layout") || !strcmp(p, "index.json"))
		return true;
	if (strncmp(p, "blobs/sha256/", 13))
		return false;
	char d[IMAGE_DIGEST_MAX + 8];
	snprintf(d, sizeof(d), "sha256:%s", p + 13);
	return image_ref_digest_valid(d);
}

static int copy_out(struct image_tar *t, int fd, struct err *e)
{
	char buf[65536];
	ssize_t k;
	while ((k = image_tar_data(t, buf, sizeof(buf), e)) > 0) {
		int r = fdio_write_full(fd, buf, (size_t)k);
		if (r < 0)
			return err_setc(e, r, "cannot write the image's blob");
	}
	return (int)k;
}

static int docker_names(const char *text, size_t n, struct image_archive *a, struct err *e)
{
	cJSON *j = NULL;
	if (jsonstrict_parse(text, n, &j, NULL) < 0 || !cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "the archive's manifest.json is not a JSON array");
	}
	int r = 0;
	if (cJSON_GetArraySize(j) != 1)
		r = err_set(e, -EINVAL, "the archive holds %d images; ward imports one at a time", cJSON_GetArraySize(j));
	const cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j->child, "RepoTags")) {
		struct image_ref ref;
		if (r < 0 || !cJSON_IsString(v) || image_ref_parse(v->valuestring, &ref, NULL) < 0)
			continue;
		char **g = realloc(a->names, (a->nnames + 1) * sizeof(*g));
		if (!g || !(g[a->nnames] = strdup(ref.key))) {
			if (g)
				a->names = g;
			r = err_set(e, -ENOMEM, "out of memory");
			break;
		}
		a->names = g;
		a->nnames++;
	}
	cJSON_Delete(j);
	return r;
}

int image_archive_read(const char *file, int dirfd, const struct image_limits *lim, struct image_archive *ret,
		       struct err *e)
{
	struct image_archive a = { 0 };
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_setc(e, -errno, "cannot open %s", file);
	struct image_stream *s = NULL;
	int r = image_stream_open(fd, IMAGE_MAX_RATIO, &s, e);
	if (r < 0)
		return r;
	struct image_tar t;
	image_tar_init(&t, image_stream_read, s);
	const struct image_tar_entry *en;
	bool layout = false, index = false;
	_cleanup_free_ char *manifest = NULL;
	size_t manifest_len = 0;
	uint64_t bytes = 0;
	mkdirat(dirfd, "blobs", 0700);
	mkdirat(dirfd, "blobs/sha256", 0700);
	while ((r = image_tar_next(&t, &en, e)) > 0) {
		const char *p = plain(en->path);
		if (!strcmp(p, "manifest.json") && en->type == IMAGE_TAR_FILE) {
			if (en->size > IMAGE_JSON_MAX) {
				r = err_set(e, -EFBIG, "the archive's manifest.json is over %u bytes", IMAGE_JSON_MAX);
				break;
			}
			free(manifest);
			if (!(manifest = malloc((size_t)en->size + 1))) {
				r = err_set(e, -ENOMEM, "out of memory");
				break;
			}
			size_t got = 0;
			ssize_t k;
			while ((k = image_tar_data(&t, manifest + got, (size_t)en->size - got, e)) > 0)
				got += (size_t)k;
			if (k < 0) {
				r = (int)k;
				break;
			}
			manifest_len = got;
			continue;
		}
		if (!layout_file(p) || (en->type != IMAGE_TAR_FILE && en->type != IMAGE_TAR_HARDLINK))
			continue;
		layout |= !strcmp(p, "oci-layout");
		index |= !strcmp(p, "index.json");
		unlinkat(dirfd, p, 0);
		if (en->type == IMAGE_TAR_HARDLINK) {
			/* docker save links a blob it holds twice. */
			const char *l = plain(en->link);
			if (!layout_file(l) || linkat(dirfd, l, dirfd, p, 0) < 0) {
				r = err_set(e, -EINVAL, "the archive's %.100s links to %.100s, which it does not hold", p, l);
				break;
			}
			continue;
		}
		bytes += en->size;
		if (bytes > lim->max_bytes) {
			r = err_set(e, -EFBIG, "the archive's blobs are more than %llu bytes (ward image import --max-size "
					       "raises it)", (unsigned long long)lim->max_bytes);
			break;
		}
		struct statvfs sv;
		if (fstatvfs(dirfd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < en->size + IMAGE_UNPACK_RESERVE) {
			r = err_set(e, -ENOSPC, "the archive's %.100s is %llu bytes, more than the disk has free", p,
				    (unsigned long long)en->size);
			break;
		}
		_cleanup_close_ int out = openat(dirfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0) {
			r = err_setc(e, -errno, "cannot write the archive's %.100s", p);
			break;
		}
		if ((r = copy_out(&t, out, e)) < 0)
			break;
	}
	image_tar_free(&t);
	image_stream_free(s);
	if (r < 0) {
		err_wrap(e, "%s", file);
		return r;
	}
	if (layout && index) {
		a.kind = IMAGE_ARCHIVE_OCI;
	} else if (manifest) {
		a.kind = IMAGE_ARCHIVE_DOCKER;
	} else {
		return err_set(e, -EINVAL, "%s is neither an OCI archive (oci-layout, index.json) nor a `docker save` archive "
					   "(manifest.json)", file);
	}
	if (manifest && (r = docker_names(manifest, manifest_len, &a, e)) < 0) {
		image_archive_free(&a);
		return r;
	}
	*ret = a;
	return 0;
}

void image_archive_free(struct image_archive *a)
{
	for (size_t i = 0; i < a->nnames; i++)
		free(a->names[i]);
	free(a->names);
	*a = (struct image_archive){ 0 };
}
