/* The workspace changes as a git patch: `git apply` of it on a copy of the
 * tree gives, byte for byte (contents, modes, symlink targets), the tree
 * that ward apply gives, once its notes are followed; and a patch that
 * cannot be complete is refused, never written short. */
#include <errno.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "workspace/wsdiff.h"
#include "workspace/wspatch.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-wspatch-XXXXXX";

static bool whiteout(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0;
}

static int write_patch(const char *lo, const char *up, const struct ws_changes *ch, const char *file, struct err *e)
{
	FILE *f = fopen(file, "we");
	if (!f)
		return -errno;
	int r = ws_patch(lo, up, ch, f, e);
	fclose(f);
	return r;
}

/* Do what the patch's notes say git apply leaves undone: mkdir, rmdir,
 * and the modes git cannot carry. */
static void follow_notes(const char *tree, const char *patch)
{
	for (const char *l = patch; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char path[PATH_MAX], line[PATH_MAX + 512];
		unsigned ward, git;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
		if (strncmp(line, "note: ", 6))
			continue;
		const char *mk = strstr(line, "after git apply: mkdir "), *rm = strstr(line, "after git apply: rmdir ");
		if (mk)
			sh("mkdir '%s/%s'", tree, mk + 23);
		else if (rm)
			sh("rmdir '%s/%s'", tree, rm + 23);
		else if (sscanf(line, "note: %4095[^:]: ward apply makes its mode %o, git apply %o", path, &ward, &git) == 3)
			sh("chmod %o '%s/%s'", ward, tree, path);
	}
}

static void test_git_apply(void)
{
	char lo[PATH_MAX], up[PATH_MAX], ward[PATH_MAX], git[PATH_MAX], pf[PATH_MAX], p[PATH_MAX + 32];
	snprintf(lo, sizeof(lo), "%s/lower", root);
	snprintf(up, sizeof(up), "%s/upper", root);
	snprintf(ward, sizeof(ward), "%s/ward", root);
	snprintf(git, sizeof(git), "%s/git", root);
	snprintf(pf, sizeof(pf), "%s/changes.patch", root);
	mkdir(lo, 0755);
	mkdir(up, 0755);

	/* The tree. */
	put(lo, "text.txt", "one\ntwo\nthree\n");
	put_n(lo, "bin.dat", "ab\0cd\1\2", 7, 0644);
	put(lo, "mode.sh", "echo mode\n");
	put(lo, "both.sh", "echo both\n");
	ln(lo, "link", "old-target");
	put_n(lo, "gone.bin", "\0\1\2\3gone", 8, 0644);
	put(lo, "gone.txt", "bye\n");
	ln(lo, "gone-link", "somewhere");
	put(lo, "file2link", "was a file\n");
	ln(lo, "link2file", "was-a-link");
	mk(lo, "emptied");
	put(lo, "emptied/only.txt", "the only file\n");
	mk(lo, "deldir");
	mk(lo, "deldir/a");
	put(lo, "deldir/a/b.txt", "deep\n");
	put_n(lo, "deldir/a/c.bin", "\0c", 2, 0644);
	mk(lo, "deldir/empty");
	mk(lo, "olddir");
	put(lo, "olddir/x.txt", "x\n");
	mk(lo, "opq");
	put(lo, "opq/a.txt", "a\n");
	mk(lo, "opq/sub");
	put(lo, "opq/sub/c.txt", "c\n");
	mk(lo, "keepempty");
	put(lo, "private.txt", "private\n");

	/* What the box left. */
	put(up, "text.txt", "one\n2\nthree\nfour");
	put_n(up, "bin.dat", "ab\0CD\1\2\3", 8, 0644);
	put_n(up, "mode.sh", "echo mode\n", 10, 0755);
	put_n(up, "both.sh", "echo both, changed\n", 19, 0755);
	ln(up, "link", "new-target");
	bool wo = whiteout(up, "gone.bin") && whiteout(up, "gone.txt") && whiteout(up, "gone-link");
	ln(up, "file2link", "now-a-link");
	put(up, "link2file", "now a file\n");
	mk(up, "emptied");
	wo = wo && whiteout(up, "emptied/only.txt") && whiteout(up, "deldir");
	put(up, "olddir", "a file where a directory was\n");
	mk(up, "opq");
	snprintf(p, sizeof(p), "%s/opq", up);
	setxattr(p, "user.overlay.opaque", "y", 1, 0);
	put(up, "opq/new.txt", "new in an opaque dir\n");
	put(up, "we ird\tname \"q\".txt", "odd name\n");
	put(up, "empty.txt", "");
	mk(up, "newdir");
	mk(up, "newdir/inner");
	mk(up, "newtree");
	mk(up, "newtree/sub");
	put_n(up, "newtree/sub/file.bin", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, 0644);
	put_n(up, "setuid.sh", "#!/bin/sh\n", 10, 04755);
	put_n(up, "secret.key", "key\n", 4, 0600);
	put_n(up, "private.txt", "private\n", 8, 0600);
	if (!wo) {
		printf("ok %d # SKIP a whiteout needs mknod (root)\n", ++tap_n);
		return;
	}

	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "the changes are read (%s)", e.msg);
	is_int(write_patch(lo, up, &ch, pf, &e), 0, "the patch is written (%s)", e.msg);
	_cleanup_free_ char *patch = get(root, "changes.patch");
	like(patch, "diff --git a/bin.dat b/bin.dat\nindex ", "a binary file has a git block");
	like(patch, "GIT binary patch\nliteral 8\n", "with a literal hunk of its new content");
	unlike(patch, "Binary files", "never \"Binary files differ\"");
	like(patch, "diff --git a/mode.sh b/mode.sh\nold mode 100644\nnew mode 100755\ndiff", "a mode change alone");
	like(patch, "diff --git a/link b/link\nindex ", "a retargeted symlink");
	like(patch, "-old-target\n\\ No newline at end of file\n+new-target\n", "as git writes it");
	like(patch, "diff --git a/file2link b/file2link\nnew file mode 120000", "a file that became a symlink");
	like(patch, "diff --git a/gone.bin b/gone.bin\ndeleted file mode 100644", "a deleted binary file");
	like(patch, "diff --git a/deldir/a/c.bin b/deldir/a/c.bin\ndeleted file mode 100644",
	     "a binary file in a deleted directory");
	like(patch, "diff --git \"a/we ird\\tname \\\"q\\\".txt\" \"b/we ird\\tname \\\"q\\\".txt\"", "an odd name is quoted as git does");
	like(patch, "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n",
	     "an empty new file, with git's id for it");
	like(patch, "note: setuid.sh: the box set a setuid/setgid bit", "a setuid bit is a note");
	unlike(patch, "104755", "and never a mode in the patch");
	like(patch, "note: secret.key: ward apply makes its mode 0600, git apply 0644", "a mode git cannot carry is a note");
	like(patch, "note: private.txt: ward apply makes its mode 0600, git apply 0644", "so is a mode change it cannot carry");
	like(patch, "after git apply: mkdir newdir\n", "an empty directory the box made is a note");
	like(patch, "after git apply: mkdir newdir/inner\n", "and one inside it");
	like(patch, "after git apply: mkdir emptied\n", "a directory the box emptied and kept is a note");
	like(patch, "after git apply: rmdir deldir/empty\n", "an empty directory the box deleted is a note");
	like(patch, "after git apply: rmdir deldir\n", "and the deleted directory it keeps");
	unlike(patch, "rmdir deldir/a\n", "twin: a directory git apply empties is not");
	unlike(patch, "mkdir newtree", "twin: nor a new directory that holds a file");

	sh("cp -a '%s' '%s' && cp -a '%s' '%s'", lo, ward, lo, git);
	ok(ws_apply(ward, up, &ch, &e) == 0, "ward apply (%s)", e.msg);
	is_int(sh("cd '%s' && git apply --whitespace=nowarn '%s'", git, pf), 0, "git apply takes the patch");
	_cleanup_free_ char *tw = tree_list(ward);
	_cleanup_free_ char *tg0 = tree_list(git);
	ok(strcmp(tw, tg0) != 0, "before its notes are followed, the trees differ (the notes matter)");
	follow_notes(git, patch);
	_cleanup_free_ char *tg = tree_list(git);
	is_str(tg, tw, "git apply and the notes give ward apply's tree: contents, modes, links");
	like(tw, "bin.dat f 0644 ", "(the binary file is in it)");
	like(tw, "link l 0777 new-target\n", "(the symlink, retargeted)");
	like(tw, "mode.sh f 0755 ", "(the new mode)");
	unlike(tw, "gone.bin", "(the deleted binary is not)");

	ws_changes_free(&ch);
}

/* A file over the bound: the patch is refused, naming it; under the
 * bound the same change is written. */
static void test_bound(void)
{
	char lo[PATH_MAX], up[PATH_MAX], pf[PATH_MAX], p[PATH_MAX + 16];
	snprintf(lo, sizeof(lo), "%s/big-lower", root);
	snprintf(up, sizeof(up), "%s/big-upper", root);
	snprintf(pf, sizeof(pf), "%s/big.patch", root);
	mkdir(lo, 0755);
	mkdir(up, 0755);
	snprintf(p, sizeof(p), "%s/big.img", up);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok(fd >= 0 && ftruncate(fd, (off_t)WS_PATCH_FILE_MAX + 1) == 0, "a sparse file one byte over the bound");
	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "bound: the changes are read");
	is_int(write_patch(lo, up, &ch, pf, &e), -EFBIG, "the patch is refused");
	like(e.msg, "big.img: 67108865 bytes, over the patch's bound of 64 MiB", "the error names the file and the bound");
	ok(ftruncate(fd, 1 << 20) == 0, "twin: the same file at 1 MiB");
	e = (struct err){ 0 };
	is_int(write_patch(lo, up, &ch, pf, &e), 0, "is put in the patch (%s)", e.msg);
	ws_changes_free(&ch);

	/* A FIFO of the tree that the box replaced: git cannot say it. */
	snprintf(p, sizeof(p), "%s/pipe", lo);
	mkfifo(p, 0644);
	put(up, "pipe", "now a file\n");
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "fifo: the changes are read");
	is_int(write_patch(lo, up, &ch, pf, &e), -EINVAL, "a FIFO's change refuses the patch");
	like(e.msg, "pipe: a FIFO, socket or device", "and says why");
	ws_changes_free(&ch);
}

/* Changes in a git directory are not put in a patch (git apply refuses
 * such paths anyway): a note line names each; the rest is the patch, and
 * git apply of it gives ward apply's tree. Allowed, they are in it. */
static void test_git_left_out(void)
{
	char lo[PATH_MAX], up[PATH_MAX], t1[PATH_MAX], t2[PATH_MAX], pf[PATH_MAX];
	snprintf(lo, sizeof(lo), "%s/git-lower", root);
	snprintf(up, sizeof(up), "%s/git-upper", root);
	snprintf(t1, sizeof(t1), "%s/git-ward", root);
	snprintf(t2, sizeof(t2), "%s/git-git", root);
	snprintf(pf, sizeof(pf), "%s/git.patch", root);
	sh("mkdir -p '%s/.git/hooks' '%s/.git/hooks' '%s/sub/.git' && echo a > '%s/a.txt' && echo cfg > '%s/.git/config' && "
	   "echo hook > '%s/.git/hooks/pre-commit' && echo c > '%s/sub/.git/config' && echo s > '%s/sub/s.txt' && "
	   "echo b > '%s/a.txt'", lo, up, up, lo, lo, up, up, up, up);
	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "git: the changes are read");
	is_int(write_patch(lo, up, &ch, pf, &e), 0, "the patch is written (%s)", e.msg);
	_cleanup_free_ char *pt = get(root, "git.patch");
	like(pt, "note: not in this patch (under .git): added .git/hooks/pre-commit\n", "a note names the hook");
	like(pt, "note: not in this patch (under .git): added sub/.git/config\n", "and the new repository's config");
	unlike(pt, "diff --git a/.git", "no block of the patch is under .git");
	like(pt, "diff --git a/sub/s.txt b/sub/s.txt", "twin: the other files are in it");
	sh("cp -a '%s' '%s' && cp -a '%s' '%s'", lo, t1, lo, t2);
	ok(ws_apply(t1, up, &ch, &e) == 0, "ward apply (%s)", e.msg);
	ok(sh("cd '%s' && git apply '%s'", t2, pf) == 0, "git apply of it works");
	_cleanup_free_ char *l1 = tree_list(t1), *l2 = tree_list(t2);
	is_str(l2, l1, "and gives ward apply's tree");
	ch.apply_git = true;
	is_int(write_patch(lo, up, &ch, pf, &e), 0, "allowed: the patch is written");
	_cleanup_free_ char *pt2 = get(root, "git.patch");
	like(pt2, "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit", "allowed: the hook is in it");
	unlike(pt2, "not in this patch", "and no note leaves one out");
	ws_changes_free(&ch);
}

int main(void)
{
	umask(022);	/* what the notes assume, and the directories both make */
	if (!mkdtemp(root)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 77;
	}
	if (sh("git --version >/dev/null 2>&1") != 0) {
		printf("1..0 # SKIP no git to apply the patch with\n");
		return 77;
	}
	test_git_apply();
	test_bound();
	test_git_left_out();
	if (sh("rm -rf '%s'", root) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
