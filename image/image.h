/* Images: OCI images, pulled from a registry (through skopeo) or imported
 * from an archive, each unpacked once per manifest digest into a
 * content-addressed, read-only cache that every box of the image shares.
 * A box names its image by that digest (struct box_opts's image), never by
 * a tag that can move.
 *
 * The store lives in $XDG_DATA_HOME/ward/images (else
 * ~/.local/share/ward/images), every directory of it 0700:
 *   names.json            name:tag -> digest, with when it was named
 *   trees/HEX/root        the unpacked tree (read-only; the box's lower layer)
 *   trees/HEX/info.json   what the unpack found: config, platform, counts
 *   trees/HEX/manifest.json, config.json   the image's own, verified
 *   trees/HEX/used        its mtime: when a box last took the image
 *   locks/HEX             the digest's lock: held shared while a box uses
 *                         the image, exclusive to unpack or remove it
 *   tmp/                  downloads and unpacks under way
 * (trees/HEX/ is also where image_erofs caches the vm's block image.)
 * A library: never prints, never exits. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* "sha256:" and 64 hex digits, and its NUL. */
#define IMAGE_DIGEST_MAX 72

/* Whether d is a whole digest: "sha256:" and 64 lowercase hex digits. */
bool image_ref_digest_valid(const char *d);
/* Whether s is a local image's digest, as image_find takes it:
 * "sha256:" and 12 to 64 lowercase hex digits. */
bool image_ref_is_digest(const char *s);

struct image_info {
	char digest[80];	/* "sha256:..." of the manifest */
	char root[PATH_MAX];	/* the unpacked tree: read-only, shared by every box of it */
	char **env;		/* the OCI config's Env, "K=V" each */
	size_t nenv;
	char *workdir;		/* WorkingDir, or NULL */
	char *user;		/* User as the config writes it ("1000", "node", "1000:1000"), or NULL */
	int hold_fd;		/* the digest's lock, held shared until image_info_release; -1 none */
};

/* A local image by digest ("sha256:HEX", or a unique prefix of at least
 * 12 hex digits), name or name:tag, unpacked (once per digest, under a
 * lock: two callers never unpack it twice) and held in use until
 * image_info_release (a prune never removes an image in use). Its last
 * use is recorded. -ENOENT: no such image here. */
int image_find(const char *ref, struct image_info *ret, struct err *e);
void image_info_release(struct image_info *img);
/* The vm backend's read-only block image of the tree, made once per
 * digest with mkfs.erofs and cached beside it (image/erofs.c). */
int image_erofs(const struct image_info *img, char *out, size_t n, struct err *e);

/* What an unpack allows, at most (defaults pinned in
 * tests/unit/test-defaults.c). Past any of them the image is refused with
 * one line naming the layer and the entry, and nothing of it is kept. */
#define IMAGE_MAX_FILES 1000000ULL		/* entries, all layers together */
#define IMAGE_MAX_BYTES (64ULL << 30)		/* the files' contents, all layers together */
#define IMAGE_MAX_LAYERS 128
/* A layer that expands more than this many times its compressed size,
 * past its first IMAGE_RATIO_FREE bytes, is a decompression bomb: gzip
 * cannot get there (its ceiling is about 1032), a layer of nearly nothing
 * but zeros can. */
#define IMAGE_MAX_RATIO 1000
#define IMAGE_RATIO_FREE (64ULL << 20)
struct image_limits {
	uint64_t max_files, max_bytes;
};
void image_limits_default(struct image_limits *l);

/* Lines an import or a pull tells as it goes ("pulling ...", "unpacked
 * ...", a device node not made); NULL: none. */
struct image_say {
	void (*say)(void *ud, const char *line);
	void *ud;
};

/* Import an archive (`docker save`'s, or an OCI archive: a tar of an OCI
 * image layout) or an OCI image layout directory: every blob verified,
 * the image unpacked, and named by the names the archive gives (docker's
 * RepoTags, the OCI ref name annotations) and by name, when not NULL.
 * ret_digest (IMAGE_DIGEST_MAX) gets the manifest's digest. */
int image_import(const char *file, const char *name, const struct image_limits *lim, const struct image_say *say,
		 char *ret_digest, struct err *e);

struct image_pull_opts {
	const char *authfile;	/* skopeo's --authfile; NULL: REGISTRY_AUTH_FILE or the containers default */
	int tls_verify;		/* 1, 0 (--tls-verify=false), or -1: skopeo's default */
	const struct image_limits *lim;	/* NULL: the defaults */
};
/* Pull ref from its registry (skopeo copy, linux/amd64), verify and
 * unpack it, and name it ref. */
int image_pull(const char *ref, const struct image_pull_opts *o, const struct image_say *say, char *ret_digest,
	       struct err *e);
/* ref's digest, found here or else pulled. A pull for a source that is
 * not trusted as the user (a project's file, a task line) is refused
 * (-EACCES) when the registry's host is not public (net/addr.h: loopback,
 * private, link-local, metadata...): the host would connect where the
 * source says. An image already here is found whoever names it. Two
 * callers resolving one ref pull it once. */
int image_resolve(const char *ref, bool trusted, const struct image_pull_opts *o, const struct image_say *say,
		  char *ret_digest, struct err *e);
/* ref's digest, if the image is here (nothing pulled, nothing held):
 * 0, or -ENOENT. */
int image_lookup(const char *ref, char *ret_digest, struct err *e);

/* Where the store is (nothing made): its path into out. 0, or <0. */
int image_store_where(char *out, size_t n, struct err *e);
/* The images here: [{digest, names:[...], size, files, platform,
 * unpacked, used (seconds since the epoch, or null), in_use}]. */
int image_list(cJSON **ret, struct err *e);
/* Remove ref: a name loses its name; the image goes once no name points
 * to it and no box uses it (*ret_removed says whether it went; else it
 * waits for a prune). A digest removes every name of it. */
int image_rm(const char *ref, bool *ret_removed, struct err *e);
/* Remove what no name points to and no box uses, and downloads left
 * behind by a ward that died: the digests removed go into ret (an array,
 * the callee's), and the bytes freed. */
int image_prune(cJSON **ret, uint64_t *ret_bytes, struct err *e);
