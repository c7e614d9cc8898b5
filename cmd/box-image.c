#include "cmd/box-image.h"
#include "cmd/cmd.h"
#include "cmd/term.h"

#include <errno.h>
#include <stdio.h>

static void say_line(void *ud, const char *line)
{
	term_printf(stderr, "ward: %s\n", line);
}

int box_image_resolve(struct box_opts *o, bool trusted, bool quiet, struct box_image *h)
{
	*h = (struct box_image){ .held = { .hold_fd = -1 } };
	if (!o->image)
		return 0;
	const struct image_say say = { .say = say_line };
	struct err e = { 0 };
	int r = image_resolve(o->image, trusted, NULL, quiet ? NULL : &say, h->digest, &e);
	/* Held from here until the keeper holds it: no prune between. */
	if (r >= 0)
		r = image_find(h->digest, &h->held, &e);
	if (r < 0) {
		cmd_error("--image %s: %s", o->image, e.msg);
		return r == -EINVAL ? EXIT_USAGE : EXIT_NOBOX;
	}
	o->image = h->digest;
	return 0;
}

void box_image_release(struct box_image *h)
{
	image_info_release(&h->held);
}
