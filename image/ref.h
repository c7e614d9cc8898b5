/* Image references as docker and skopeo read them: [REGISTRY/]PATH[:TAG][@DIGEST],
 * brought to one normal form (docker.io/library/busybox:latest), and
 * where a pull of one would connect. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "image/image.h"

/* A name is at most 255 characters (docker's limit), a tag 128. */
#define IMAGE_REF_NAME_MAX 256
#define IMAGE_REF_TAG_MAX 129

struct image_ref {
	char registry[IMAGE_REF_NAME_MAX];	/* "docker.io", "127.0.0.1:5000", "[::1]:5000" */
	char name[IMAGE_REF_NAME_MAX];	/* "docker.io/library/busybox": registry and path */
	char tag[IMAGE_REF_TAG_MAX];	/* "latest"; "" when only a digest is given */
	char digest[IMAGE_DIGEST_MAX];	/* "sha256:..." when given; else "" */
	/* The key of names.json and what skopeo is given: name:tag, or
	 * name@digest when a digest is given (a tag beside it is ignored, as
	 * docker does). */
	char key[IMAGE_REF_NAME_MAX + IMAGE_REF_TAG_MAX + IMAGE_DIGEST_MAX];
};

/* Parse s: 0, or -EINVAL with one line in e saying what is wrong. */
int image_ref_parse(const char *s, struct image_ref *ret, struct err *e);
/* Whether a pull of r would connect only to a public address: its
 * registry's host, an address or every address the name resolves to,
 * classed by net/addr.h (the host's own addresses too). 0, or -EACCES
 * with the one line saying what the host is (-EHOSTUNREACH: the name does
 * not resolve). */
int image_ref_public(const struct image_ref *r, struct err *e);
