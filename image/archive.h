/* Image archives, as `ward image import` takes them: `docker save`'s (a
 * tar of manifest.json and its layers; docker 25 and later also write an
 * OCI layout in it) and OCI archives (a tar of an OCI image layout),
 * plain or compressed. */
#pragma once
#include <stddef.h>

#include "base/err.h"
#include "image/image.h"

enum image_archive_kind {
	IMAGE_ARCHIVE_OCI,	/* its layout was written out */
	IMAGE_ARCHIVE_DOCKER,	/* docker's own format only: skopeo reads it */
};

struct image_archive {
	enum image_archive_kind kind;
	char **names;		/* docker's RepoTags, as names.json keys them */
	size_t nnames;
};

/* Read file: an OCI layout in it is written into the empty directory
 * dirfd (only its oci-layout, index.json and blobs/sha256/HEX: nothing
 * else of the archive is made, whatever its entries say); a docker
 * manifest.json is read for its names. lim bounds the bytes written. */
int image_archive_read(const char *file, int dirfd, const struct image_limits *lim, struct image_archive *ret,
		       struct err *e);
void image_archive_free(struct image_archive *a);
