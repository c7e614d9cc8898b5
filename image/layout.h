/* An OCI image layout (oci-layout, index.json, blobs/sha256/HEX), as an
 * archive holds it or skopeo writes it: the image picked (through image
 * indexes and docker manifest lists: the platform this machine runs), its
 * manifest and config read, each checked against its descriptor's digest
 * and size. Layers are only named here: their bytes are checked as they
 * are unpacked (image/stream.h). Both OCI's and docker's (schema 2) media
 * types are read. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "image/image.h"

/* An index, a manifest or a config, at most. */
#define IMAGE_JSON_MAX (4u << 20)

struct image_layer_desc {
	char digest[IMAGE_DIGEST_MAX];	/* the blob's */
	char diff_id[IMAGE_DIGEST_MAX];	/* the config's for it: the tar's, uncompressed */
	uint64_t size;
};

struct image_layout {
	char digest[IMAGE_DIGEST_MAX];	/* the manifest's */
	char *manifest, *config;	/* their bytes, as the blobs hold them */
	size_t manifest_len, config_len;
	struct image_layer_desc *layers;
	size_t nlayers;
	char platform[64];	/* "linux/amd64" */
	/* When an index offered several: "linux/amd64 (of linux/amd64,
	 * linux/arm64)"; else "". */
	char picked[400];
	char **names;		/* what index.json names it (ref name annotations) */
	size_t nnames;
};

/* The platform this machine runs: "linux/amd64", "linux/arm64". */
const char *image_layout_platform(void);
int image_layout_read(int dirfd, struct image_layout *ret, struct err *e);
/* A blob's file, opened beneath the layout (no link, no ".." on the way):
 * an fd, or <0. */
int image_layout_blob(int dirfd, const char *digest, struct err *e);
void image_layout_free(struct image_layout *l);
/* The config's Env, WorkingDir and User ({"env":[...],"workdir","user"}),
 * as image_find hands them on. */
cJSON *image_layout_run_config(const struct image_layout *l);
