/* rootless.sh's handle on workspace/layersfuse.h: a layers image mounted
 * by fuse2fs in a user namespace of its own, as the user who runs it.
 * usage:
 *   layers-fuse mount IMAGE DIR SIZE   make IMAGE (SIZE bytes), mount it
 *                                      over DIR; print the holder's pid and
 *                                      where the host reaches DIR
 *   layers-fuse mounted PID DIR        exit 0 when PID holds DIR's mount
 *   layers-fuse unmount PID DIR        end the holder; exit 0 when gone */
#include "workspace/layersfuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

int main(int argc, char **argv)
{
	struct err e = { 0 };
	if (argc == 5 && !strcmp(argv[1], "mount")) {
		char why[160];
		if (!layersfuse_capable(why, sizeof(why))) {
			printf("incapable: %s\n", why);
			return 77;
		}
		pid_t pid;
		if (layersfuse_mkfs(argv[2], strtoull(argv[4], NULL, 10), &e) < 0 ||
		    layersfuse_mount(argv[2], argv[3], &pid, &e) < 0) {
			fprintf(stderr, "layers-fuse: %s\n", e.msg);
			return 1;
		}
		char p[PATH_MAX];
		layersfuse_path(pid, argv[3], p, sizeof(p));
		printf("%d %s\n", (int)pid, p);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "mounted"))
		return layersfuse_mounted(atoi(argv[2]), argv[3]) ? 0 : 1;
	if (argc == 4 && !strcmp(argv[1], "unmount")) {
		layersfuse_unmount(atoi(argv[2]), argv[3]);
		return layersfuse_mounted(atoi(argv[2]), argv[3]) ? 1 : 0;
	}
	fprintf(stderr, "usage: layers-fuse mount IMAGE DIR SIZE | mounted PID DIR | unmount PID DIR\n");
	return 2;
}
