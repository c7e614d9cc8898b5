/* Checkpoints of a workspace layer: what counts as unchanged, what is
 * kept and what copied, that a checkpoint never shares a file with the
 * live layer, that an object no checkpoint names is removed and one that
 * is named never, and that restoring one gives back the layer entry for
 * entry (files, modes, symlinks, a whiteout, an opaque directory). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
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

/* The object path has in checkpoint k's manifest, into out ("" if none). */
static const char *obj_of(int k, const char *path, char *out, size_t n)
{
	char m[PATH_MAX + 32];
	snprintf(m, sizeof(m), "%s/%d/manifest", ck, k);
	_cleanup_fclose_ FILE *f = fopen(m, "re");
	char line[8192], want[PATH_MAX + 16];
	snprintf(want, sizeof(want), "{\"p\":\"%s\",", path);
	out[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *o = strstr(line, "\"o\":\"");
		if (!strncmp(line, want, strlen(want)) && o)
			snprintf(out, n, "%.*s", (int)strcspn(o + 5, "\""), o + 5);
	}
	return out;
}

/* How many objects there are, and whether every one is named by a
 * checkpoint's manifest and every name an object. */
static int objects(bool *consistent)
{
	char d[PATH_MAX + 16];
	snprintf(d, sizeof(d), "%s/objects", ck);
	_cleanup_closedir_ DIR *dd = opendir(d);
	struct dirent *de;
	int n = 0;
	*consistent = true;
	while (dd && (de = readdir(dd))) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		char cmd[PATH_MAX * 2];
		snprintf(cmd, sizeof(cmd), "grep -qs '\"o\":\"%s\"' %s/[0-9]*/manifest", de->d_name, ck);
		if (system(cmd) != 0)
			*consistent = false;
	}
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof(cmd), "for o in $(grep -ho '\"o\":\"[^\"]*' %s/[0-9]*/manifest | cut -d'\"' -f4); do "
		 "test -f %s/objects/$o || exit 1; done", ck, ck);
	if (system(cmd) != 0)
		*consistent = false;
	return n;
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
	snprintf(fmt, sizeof(fmt), "%s/objects", ck);
	char o1[64], o2[64];
	obj_of(1, "same.txt", o1, sizeof(o1));
	obj_of(2, "same.txt", o2, sizeof(o2));
	ok(o1[0] && !strcmp(o1, o2), "the unchanged file is checkpoint 1's object, named again: nothing copied or linked");
	struct stat os;
	snprintf(p, sizeof(p), "%s/same.txt", upper);
	struct stat ls;
	char op[PATH_MAX + 80];
	snprintf(op, sizeof(op), "%s/objects/%s", ck, o2);
	ok(lstat(p, &ls) == 0 && lstat(op, &os) == 0 && ls.st_ino != os.st_ino && ls.st_nlink == 1,
	   "and never a link to the live layer's file");
	obj_of(1, "grow.txt", o1, sizeof(o1));
	_cleanup_free_ char *old = get(fmt, o1);
	is_str(old, "one\n", "checkpoint 1's copy of the file changed in place is as it was");
	bool cons;
	is_int(objects(&cons), 4 + 2, "six objects: checkpoint 1's four and the two checkpoint 2 copied");
	ok(cons, "every object is named by a checkpoint, every name is an object");

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
	is_int(st.copied, 0, "the restored layer is all kept: checkpoint 1 was renewed to its files");
	is_int(objects(&cons), 4, "drop_after(1): the objects only checkpoint 2 named are gone");
	ok(cons, "and every one left is named");
	sh("echo three >> %s/grow.txt", upper);
	is_int(checkpoint_take(ck, upper, 2, &st, &e), 0, "checkpoint 2 replaced (%s)", e.msg);
	is_int(st.copied, 1, "a write after the restore is seen");
	sh("echo four >> %s/grow.txt", upper);
	is_int(checkpoint_take(ck, upper, 2, &st, &e), 0, "checkpoint 2 replaced again (%s)", e.msg);
	is_int(objects(&cons), 5, "the object only the replaced checkpoint 2 named is gone");
	ok(cons, "and the ones the new checkpoint 2 names from checkpoint 1 are kept");
	is_int(checkpoint_restore(ck, 2, upper, &st, &e), 0, "checkpoint 2 restored (%s)", e.msg);
	snprintf(p, sizeof(p), "%s", upper);
	_cleanup_free_ char *g = get(p, "grow.txt");
	is_str(g, "one\nthree\nfour\n", "from the objects of both checkpoints");

	/* A take killed half-way leaves N.tmp and objects no manifest names:
	 * the next take of N removes them; its twin, an object a manifest
	 * names, stays. */
	sh("mkdir -p %s/3.tmp && echo x > %s/objects/dead-1", ck, ck);
	is_int(checkpoint_take(ck, upper, 3, &st, &e), 0, "checkpoint 3 taken after a killed take (%s)", e.msg);
	snprintf(p, sizeof(p), "%s/objects/dead-1", ck);
	ok(access(p, F_OK) < 0, "the killed take's object is removed");
	is_int(objects(&cons), 5, "the named ones stay");
	ok(cons, "each named");

	/* A checkpoint made before objects were shared: its own files. */
	sh("mkdir -p %s/9/files && printf 'legacy\\n' > %s/9/files/0 && "
	   "printf '{\"p\":\"old.txt\",\"t\":\"f\",\"m\":420,\"u\":%d,\"g\":%d,\"mt\":\"0\",\"i\":\"1\",\"s\":\"7\",\"smt\":\"0\",\"sct\":\"0\",\"c\":0}\\n' > %s/9/manifest",
	   ck, ck, (int)getuid(), (int)getgid(), ck);
	char other[PATH_MAX + 16];
	snprintf(other, sizeof(other), "%s/other", root);
	is_int(checkpoint_restore(ck, 9, other, &st, &e), 0, "a checkpoint of the old form restores (%s)", e.msg);
	_cleanup_free_ char *lg = get(other, "old.txt");
	is_str(lg, "legacy\n", "from its own files");
	checkpoint_drop_after(ck, 3);
	is_int(objects(&cons), 5, "dropping it keeps the objects the others name");
	ok(cons, "each named");

	/* A manifest that names an object by a path is refused. */
	sh("mkdir -p %s/8 && printf '{\"p\":\"x\",\"t\":\"f\",\"m\":420,\"u\":0,\"g\":0,\"mt\":\"0\",\"i\":\"1\",\"s\":\"1\",\"smt\":\"0\",\"sct\":\"0\",\"o\":\"../../etc/passwd\"}\\n' > %s/8/manifest", ck, ck);
	ok(checkpoint_restore(ck, 8, other, NULL, &e) < 0 && strstr(e.msg, "damaged"), "an object named by a path is refused (%s)", e.msg);
	checkpoint_drop_after(ck, 3);

	/* Dropped down to a checkpoint of an empty layer (no object named at
	 * all): every object goes. */
	char ck2[PATH_MAX + 16];
	snprintf(ck2, sizeof(ck2), "%s/ck2", root);
	is_int(checkpoint_take(ck2, NULL, 1, &st, &e), 0, "a checkpoint of no layer (%s)", e.msg);
	is_int(checkpoint_take(ck2, upper, 2, &st, &e), 0, "then one of the layer (%s)", e.msg);
	checkpoint_drop_after(ck2, 1);
	is_int(sh("test -z \"$(ls -A %s/objects)\"", ck2), 0, "drop_after(1): no object is left");
	ok(checkpoint_has(ck2, 1) && !checkpoint_has(ck2, 2), "checkpoint 1 is");

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
