/* skopeo, the program that talks to registries and reads docker's
 * archives for ward: `skopeo copy SRC oci:DIR:ward`, with an environment
 * built for it (the containers auth file, proxies, CAs; none of ward's API
 * keys). */
#pragma once
#include <stddef.h>

#include "base/err.h"
#include "image/image.h"

/* src ("docker://REF", "docker-archive:FILE") into the OCI layout dir
 * (made). tmpdir: where skopeo keeps what it downloads meanwhile. o (or
 * NULL): the auth file and TLS choice of a pull. 0, or <0 with skopeo's
 * own words in e. */
int image_skopeo_copy(const char *src, const char *dir, const char *tmpdir, const struct image_pull_opts *o,
		      struct err *e);
/* Where skopeo is in PATH (out, n bytes): 0, or -ENOENT. */
int image_skopeo_find(char *out, size_t n);
/* The variables skopeo is given from ward's environment, NULL-ended, for
 * tests/unit/test-defaults.c's pin. */
extern const char *const image_skopeo_env[];
