/* rootless.sh's handle on workspace/layersfuse.h: a layers image mounted
 * by fuse2fs in a user namespace of its own, as the user who runs it.
 * usage:
 *   layers-fuse mount IMAGE DIR SIZE   make IMAGE (SIZE bytes), mount it
 *                                      over DIR; print the holder's pid and
 *                                      where the host reaches DIR
 *   layers-fuse mounted PID DIR        exit 0 when PID holds DIR's mount
 *   layers-fuse unmount PID DIR        end the holder; exit 0 when gone
 *   layers-fuse cow IMAGE DIR SIZE LOWER MP CMD
 *                                      as a box's keeper does: enter a user
 *                                      and mount namespace of its own,
 *                                      serve IMAGE (SIZE bytes) over DIR
 *                                      and fuse-overlayfs over LOWER on MP
 *                                      (its changes in DIR/upper), run
 *                                      sh -c CMD in a user namespace below
 *                                      (where a box is), end both daemons,
 *                                      and print the changes read from the
 *                                      upper ("modified PATH" ...) and the
 *                                      daemons' pids ("daemons P1 P2") */
#include "workspace/layersfuse.h"
#include "workspace/wsdiff.h"
#include "workspace/wslayer.h"

#include <errno.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

static int cow(char **a)
{
	const char *image = a[0], *dir = a[1], *lower = a[3], *mp = a[4], *cmd = a[5];
	struct err e = { 0 };
	char up[PATH_MAX], wk[PATH_MAX];
	snprintf(up, sizeof(up), "%s/upper", dir);
	snprintf(wk, sizeof(wk), "%s/work", dir);
	pid_t fs = -1, ov = -1;
	if (layersfuse_mkfs(image, strtoull(a[2], NULL, 10), &e) < 0 || layersfuse_enter(&e) < 0 ||
	    layersfuse_serve(image, dir, &fs, &e) < 0 || (mkdir(up, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(wk, 0700) < 0 && errno != EEXIST) || wslayer_writer_claim(dir, WSLAYER_FUSE_OVERLAYFS, &e) < 0 ||
	    layersfuse_overlay(lower, up, wk, mp, &ov, &e) < 0) {
		fprintf(stderr, "layers-fuse: %s\n", e.msg[0] ? e.msg : strerror(errno));
		layersfuse_stop(ov);
		layersfuse_stop(fs);
		return 1;
	}
	printf("daemons %d %d\n", (int)fs, (int)ov);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		/* Where a box is: a user namespace below this one, mapped to it. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	layersfuse_stop(ov);
	struct ws_changes ch;
	int r = ws_changes_read(lower, up, &ch, &e);
	for (size_t i = 0; r >= 0 && i < ch.n; i++)
		printf("%s %s\n", ws_kind_name(ch.v[i].kind), ch.v[i].path);
	if (r >= 0)
		ws_changes_free(&ch);
	/* Which form fuse-overlayfs wrote its whiteouts in. */
	char find[PATH_MAX + 64];
	snprintf(find, sizeof(find), "find '%s' -name '.wh.*' | grep -q .", up);
	printf("wh-files %d\n", system(find) == 0);
	layersfuse_stop(fs);
	printf("cmd-exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
	return r < 0 ? 1 : 0;
}

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
	if (argc == 8 && !strcmp(argv[1], "cow"))
		return cow(argv + 2);
	fprintf(stderr, "usage: layers-fuse mount IMAGE DIR SIZE | mounted PID DIR | unmount PID DIR\n");
	return 2;
}
