/* Checkpoints of a workspace layer: what counts as unchanged, what is
 * linked and what copied, that a checkpoint never shares a file with the
 * live layer, and that restoring one gives back the layer entry for entry
 * (files, modes, symlinks, a whiteout, an opaque directory). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "workspace/checkpoint.h"
#include "base/state.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-checkpoint-XXXXXX";
static char upper[PATH_MAX], ck[PATH_MAX];

static ino_t ino_of(const char *fmt, int k, const char *name)
{
	char p[PATH_MAX], f[PATH_MAX];
	snprintf(f, sizeof(f), fmt, k);
	snprintf(p, sizeof(p), "%s/%s", f, name);
	struct stat st;
	return lstat(p, &st) == 0 ? st.st_ino : 0;
}

/* The copy number of path in checkpoint k's manifest, or -1. */
static long copy_of(int k, const char *path)
{
	char m[PATH_MAX + 32];
	snprintf(m, sizeof(m), "%s/%d/manifest", ck, k);
	_cleanup_fclose_ FILE *f = fopen(m, "re");
	char line[8192], want[PATH_MAX + 16];
	snprintf(want, sizeof(want), "{\"p\":\"%s\",", path);
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strstr(line, "\"c\":");
		if (!strncmp(line, want, strlen(want)) && c)
			return strtol(c + 4, NULL, 10);
	}
	return -1;
}

static void test_stamps(void)
{
	struct stat a = { .st_ino = 7, .st_size = 5, .st_mtim = { 100, 1 }, .st_ctim = { 100, 2 } };
	struct checkpoint_stamp x = checkpoint_stamp_of(&a), y = x;
	ok(checkpoint_unchanged(&x, &y), "the same stamp: unchanged");
	is_int(x.mtime_ns, 100000000001LL, "mtime to the nanosecond");
	y = x, y.ino++;
	ok(!checkpoint_unchanged(&x, &y), "another inode (a rename over it): changed");
	y = x, y.size++;
	ok(!checkpoint_unchanged(&x, &y), "another size: changed");
	y = x, y.mtime_ns++;
	ok(!checkpoint_unchanged(&x, &y), "mtime one nanosecond on: changed");
	y = x, y.ctime_ns++;
	ok(!checkpoint_unchanged(&x, &y), "only ctime (chmod, a link): changed");
}

int main(void)
{
	test_stamps();
	if (!mkdtemp(root))
		return 99;
	snprintf(upper, sizeof(upper), "%s/upper", root);
	snprintf(ck, sizeof(ck), "%s/ck", root);
	mkdir(upper, 0755);
	put(upper, "same.txt", "never changes\n");
	put(upper, "grow.txt", "one\n");
	put_n(upper, "run.sh", "#!/bin/sh\n", 10, 0750);
	mk(upper, "dir");
	put(upper, "dir/in.txt", "inside\n");
	ln(upper, "link", "same.txt");
	mk(upper, "opaque");
	bool xattrs = setxattr(upper, "user.overlay.test", "", 0, 0) == 0 || errno != ENOTSUP;
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/opaque", upper);
	if (xattrs)
		setxattr(p, "user.overlay.opaque", "y", 1, 0);
	removexattr(upper, "user.overlay.test");
	snprintf(p, sizeof(p), "%s/gone.txt", upper);
	bool whiteout = mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0;
	snprintf(p, sizeof(p), "%s/fifo", upper);
	mkfifo(p, 0600);

	struct checkpoint_stats st;
	struct err e = { 0 };
	is_int(checkpoint_take(ck, upper, 1, &st, &e), 0, "checkpoint 1 taken (%s)", e.msg);
	is_int(st.files, 4, "four regular files");
	is_int(st.copied, 4, "all copied: there is no checkpoint before");
	is_int(st.skipped, 1, "the FIFO is not kept, and counted");
	is_int(st.entries, 6 + whiteout + 1, "every other entry is kept");
	struct stat cs;
	ok(stat(ck, &cs) == 0 && (cs.st_mode & 07777) == 0700, "the checkpoints' directory is 0700");
	snprintf(p, sizeof(p), "%s/fifo", upper);
	unlink(p);
	_cleanup_free_ char *before = tree_list(upper);

	/* Message 1 changes grow.txt in place (bash >>), chmods run.sh,
	 * removes dir/, leaves same.txt. */
	sh("echo two >> %s/grow.txt", upper);
	snprintf(p, sizeof(p), "%s/run.sh", upper);
	chmod(p, 0700);
	sh("rm -rf %s/dir", upper);
	is_int(checkpoint_take(ck, upper, 2, &st, &e), 0, "checkpoint 2 taken (%s)", e.msg);
	is_int(st.files, 3, "three regular files");
	is_int(st.copied, 2, "two copied: the one written and the one chmodded");
	is_int(st.bytes_copied, 8 + 10, "their bytes");
	char fmt[PATH_MAX + 16];
	snprintf(fmt, sizeof(fmt), "%s/%%d/files", ck);
	char n1[32], n2[32];
	snprintf(n1, sizeof(n1), "%ld", copy_of(1, "same.txt"));
	snprintf(n2, sizeof(n2), "%ld", copy_of(2, "same.txt"));
	ok(ino_of(fmt, 1, n1) && ino_of(fmt, 1, n1) == ino_of(fmt, 2, n2), "the unchanged file is a link to checkpoint 1's copy");
	snprintf(p, sizeof(p), "%s/same.txt", upper);
	struct stat ls;
	ok(lstat(p, &ls) == 0 && ls.st_ino != ino_of(fmt, 2, n2) && ls.st_nlink == 1,
	   "and never a link to the live layer's file");
	snprintf(n1, sizeof(n1), "%ld", copy_of(1, "grow.txt"));
	snprintf(p, sizeof(p), "%s/1/files", ck);
	_cleanup_free_ char *old = get(p, n1);
	is_str(old, "one\n", "checkpoint 1's copy of the file changed in place is as it was");

	/* Back to checkpoint 1, then what the next checkpoint costs. */
	is_int(checkpoint_restore(ck, 1, upper, &st, &e), 0, "checkpoint 1 restored (%s)", e.msg);
	_cleanup_free_ char *after = tree_list(upper);
	is_str(after, before, "the layer is entry for entry what it was (less the FIFO)");
	char v[4] = "";
	snprintf(p, sizeof(p), "%s/opaque", upper);
	if (xattrs)
		ok(getxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y', "the opaque directory is opaque again");
	snprintf(p, sizeof(p), "%s/gone.txt", upper);
	struct stat ws;
	if (whiteout)
		ok(lstat(p, &ws) == 0 && S_ISCHR(ws.st_mode) && ws.st_rdev == makedev(0, 0), "the whiteout is a whiteout again");
	snprintf(p, sizeof(p), "%s.rewind", upper);
	ok(access(p, F_OK) < 0, "nothing is left beside the layer");
	checkpoint_drop_after(ck, 1);
	ok(checkpoint_has(ck, 1) && !checkpoint_has(ck, 2), "drop_after(1): 2 is gone, 1 kept");
	is_int(checkpoint_take(ck, upper, 2, &st, &e), 0, "checkpoint 2 taken again (%s)", e.msg);
	is_int(st.copied, 0, "the restored layer is all linked: checkpoint 1 was renewed to its files");
	sh("echo three >> %s/grow.txt", upper);
	is_int(checkpoint_take(ck, upper, 2, &st, &e), 0, "checkpoint 2 replaced (%s)", e.msg);
	is_int(st.copied, 1, "a write after the restore is seen");

	/* Errors: nothing to restore, a number that is not one. */
	ok(checkpoint_restore(ck, 7, upper, NULL, &e) < 0 && strstr(e.msg, "7/manifest"), "restoring a checkpoint that is not there fails");
	_cleanup_free_ char *still = tree_list(upper);
	like(still, "grow.txt", "and leaves the layer as it was");
	ok(checkpoint_take(ck, upper, 0, NULL, &e) == -EINVAL, "checkpoint 0 is refused");
	checkpoint_drop_after(ck, 0);
	ok(access(ck, F_OK) < 0, "drop_after(0) removes them all");
	if (!xattrs)
		printf("# no user xattrs here: the opaque directory is not checked\n");
	if (!whiteout)
		printf("# mknod 0/0 refused here: the whiteout is not checked\n");
	sh("rm -rf %s", root);
	return tap_done();
}
