/* ward-keeper: the program a box's keeper runs, and its egress proxy.
 * box_create execs it as `ward-keeper NAME`, its options on a descriptor
 * (box-int.h, KEEPER_OPTS_FD) and its environment built (spawn-env.c);
 * the keeper execs the proxy from this same program as `ward-proxy NAME`
 * (egress.c). Neither holds anything of ward's memory: not its environment
 * (the API keys), not its command line (the task), not its heap. */
#include "sandbox/box-int.h"
#include "sandbox/box.h"
#include "sandbox/egress.h"
#include "base/state.h"
#include "base/fdio.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The options JSON at most: 256 host patterns and 32 labels, with room. */
#define KEEPER_OPTS_MAX (1u << 20)

static __attribute__((noreturn)) void keeper_fail(const char *msg)
{
	fdio_write_full(KEEPER_READY_FD, msg, strlen(msg));
	_exit(1);
}

static __attribute__((noreturn)) void keeper_start(const char *name)
{
	char *txt = NULL;
	size_t n = 0;
	int r = fdio_read_fd(KEEPER_OPTS_FD, KEEPER_OPTS_MAX, &txt, &n);
	close(KEEPER_OPTS_FD);
	if (r < 0)
		keeper_fail("the box's keeper got no options from ward");
	cJSON *j = cJSON_ParseWithLength(txt, n);
	free(txt);
	/* Its own and ward's idea of where the box lives agree, or the two
	 * see different environments. */
	static char boxdir[PATH_MAX];
	struct err e = { 0 };
	if (state_box_dir(name, boxdir, sizeof(boxdir), &e) < 0)
		keeper_fail(e.msg);
	const char *given = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "boxdir"));
	if (!given || strcmp(given, boxdir))
		keeper_fail("the box's keeper finds its runtime directory elsewhere than ward does "
			    "(XDG_RUNTIME_DIR did not reach it)");
	static struct box_opts o;
	if (box_opts_from_json(cJSON_GetObjectItemCaseSensitive(j, "opts"), &o, &e) < 0)
		keeper_fail(e.msg);
	cJSON_Delete(j);
	keeper_main(&o, name, boxdir, KEEPER_READY_FD);
}

int main(int argc, char **argv)
{
	fdio_std_open();
	if (argc == 2 && !strcmp(argv[0], EGRESS_ARGV0) && state_name_valid(argv[1]))
		return egress_main(argv[1]);
	/* By its whole path too: systemd-run (sandbox/sdscope.h) execs the
	 * keeper with the path it resolved as argv[0]. */
	const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
	if (argc == 2 && !strcmp(slash ? slash + 1 : argv[0], KEEPER_ARGV0) && state_name_valid(argv[1]))
		keeper_start(argv[1]);
	fprintf(stderr, "ward-keeper: ward starts this program for each of its boxes, and as %s for a box's "
		"egress proxy; it is not run by hand\n", EGRESS_ARGV0);
	return 64;
}
