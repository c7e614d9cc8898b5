/* A box's --image REF made its root: REF resolved to the image's digest
 * before the box is created (found here, or pulled), so that the box is
 * tied to that digest and never to a tag that moves. */
#pragma once
#include <stdbool.h>

#include "image/image.h"
#include "sandbox/box.h"

struct box_image {
	char digest[IMAGE_DIGEST_MAX];
	struct image_info held;
};

/* o->image (a reference, or NULL: nothing to do) resolved: found here or
 * pulled (one line on stderr unless quiet), o->image then naming its
 * digest (in h), and the image held by this process until
 * box_image_release (after box_create: the box's keeper holds it from
 * then on). trusted: REF is the user's (a flag, their own config file),
 * not a project's file's or a task line's, whose pull may reach only a
 * public registry (image_resolve). 0, or an exit code after an error
 * line. */
int box_image_resolve(struct box_opts *o, bool trusted, bool quiet, struct box_image *h);
void box_image_release(struct box_image *h);
