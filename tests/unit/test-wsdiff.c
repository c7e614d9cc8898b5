/* The workspace changes: read from an overlay's upper layer, shown as a
 * diff, applied to the tree without ever writing through a symlink. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "workspace/wsdiff.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-wsdiff-XXXXXX";
static char lower[PATH_MAX], upper[PATH_MAX], victim[PATH_MAX];

/* The diff of ch, as text (written to a file under root named name). */
static char *diff_text(const char *lo, const char *up, const struct ws_changes *ch, const char *name, int *ret)
{
	char dp[PATH_MAX];
	snprintf(dp, sizeof(dp), "%s/%s", root, name);
	FILE *f = fopen(dp, "w");
	struct err e = { 0 };
	*ret = f ? ws_diff(lo, up, ch, f, &e) : -errno;
	if (f)
		fclose(f);
	return get(root, name);
}

static const struct ws_change *find(const struct ws_changes *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	return NULL;
}

static void fresh(const char *name, char *lo, char *up)
{
	snprintf(lo, PATH_MAX, "%s/%s-lower", root, name);
	snprintf(up, PATH_MAX, "%s/%s-upper", root, name);
	mkdir(lo, 0755);
	mkdir(up, 0755);
}

/* The tree has docs -> a host directory; the box removed the link and made
 * a directory there (opaque in the upper layer). The changes and the diff
 * are the link's deletion and the new directory: never the files of the
 * directory the link pointed to. */
static void test_no_follow(void)
{
	char lo[PATH_MAX], up[PATH_MAX], host[PATH_MAX], p[PATH_MAX + 16];
	fresh("nofollow", lo, up);
	snprintf(host, sizeof(host), "%s/host-dir", root);
	mkdir(host, 0755);
	put(host, "secret.txt", "host-secret-content\n");
	snprintf(p, sizeof(p), "%s/docs", lo);
	symlink(host, p);
	snprintf(p, sizeof(p), "%s/keep-link", lo);
	symlink("old-target", p);
	snprintf(p, sizeof(p), "%s/docs", up);
	mkdir(p, 0755);
	setxattr(p, "user.overlay.opaque", "y", 1, 0);
	put(up, "docs/x", "new\n");
	/* Positive twin: a symlink of the tree the box retargeted. */
	snprintf(p, sizeof(p), "%s/keep-link", up);
	symlink("new-target", p);

	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "no-follow: the changes are read");
	ok(!find(&ch, "docs/secret.txt"), "a host file behind a symlink of the tree is not listed as deleted");
	const struct ws_change *c = find(&ch, "docs/x");
	ok(c && c->kind == WS_ADDED, "the box's new file under the new directory is added");
	c = find(&ch, "keep-link");
	ok(c && c->kind == WS_MODIFIED, "twin: a retargeted symlink of the tree is a change");
	int dr;
	_cleanup_free_ char *d = diff_text(lo, up, &ch, "nofollow-diff", &dr);
	is_int(dr, 0, "the diff is written");
	unlike(d, "host-secret-content", "the diff never prints a file behind a symlink");
	like(d, "symlink docs deleted", "the link itself is shown deleted, as a link");
	like(d, "symlink keep-link modified -> new-target", "twin: a symlink is diffed as a symlink");
	ws_changes_free(&ch);
}

/* A file the box left setuid is applied without the bit, and says so. */
static void test_setid(void)
{
	char lo[PATH_MAX], up[PATH_MAX], p[PATH_MAX + 16];
	fresh("setid", lo, up);
	put(up, "sh", "#!/bin/sh\n");
	snprintf(p, sizeof(p), "%s/sh", up);
	chmod(p, 04755);
	put(up, "tool", "#!/bin/sh\n");
	snprintf(p, sizeof(p), "%s/tool", up);
	chmod(p, 0755);
	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "setid: the changes are read");
	const struct ws_change *c = find(&ch, "sh");
	ok(c && c->setid_dropped, "a setuid file is marked: the bit is dropped");
	c = find(&ch, "tool");
	ok(c && !c->setid_dropped, "twin: an executable without the bit is not");
	int dr;
	_cleanup_free_ char *d = diff_text(lo, up, &ch, "setid-diff", &dr);
	like(d, "note: sh: the box set a setuid/setgid bit; ward does not apply it", "the diff says so");
	ok(ws_apply(lo, up, &ch, &e) == 0, "the changes apply");
	struct stat st;
	snprintf(p, sizeof(p), "%s/sh", lo);
	ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0755, "the applied file has no setuid bit (mode %o)",
	   st.st_mode & 07777);
	snprintf(p, sizeof(p), "%s/tool", lo);
	ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0755, "twin: an executable keeps its mode");
	ws_changes_free(&ch);
}

/* A FIFO of the user's tree is never opened (the diff would wait for a
 * writer for ever); a sparse file and hard links the box made are applied
 * as what they are, not as gigabytes of zeros and copies. */
static void test_special_sparse_links(void)
{
	char lo[PATH_MAX], up[PATH_MAX], p[PATH_MAX + 16], q[PATH_MAX + 16];
	fresh("special", lo, up);
	snprintf(p, sizeof(p), "%s/pipe", lo);
	mkfifo(p, 0644);
	put(up, "pipe", "now a file\n");
	snprintf(p, sizeof(p), "%s/sparse", up);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok(fd >= 0 && ftruncate(fd, 1LL << 30) == 0 && pwrite(fd, "end", 3, (1LL << 30) - 3) == 3,
	   "a 1 GiB sparse file in the layer");
	snprintf(q, sizeof(q), "%s/hard2", up);
	ok(link(p, q) == 0, "and a second name for it");
	struct ws_changes ch;
	struct err e = { 0 };
	alarm(20);	/* a hang fails the test instead of stalling the suite */
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "special: the changes are read");
	int64_t t0 = now_ms();
	int dr;
	_cleanup_free_ char *d = diff_text(lo, up, &ch, "special-diff", &dr);
	ok(now_ms() - t0 < 5000, "the diff returns (a FIFO is not opened for reading)");
	like(d, "pipe modified: not a regular file", "and says the FIFO's change is not shown");
	like(d, "sparse added: 0 bytes -> 1073741824 bytes: over 8 MiB, not shown", "a file over 8 MiB is named, not shown");
	ok(ws_apply(lo, up, &ch, &e) == 0, "the changes apply (%s)", e.msg);
	alarm(0);
	struct stat a, b;
	snprintf(p, sizeof(p), "%s/sparse", lo);
	snprintf(q, sizeof(q), "%s/hard2", lo);
	ok(stat(p, &a) == 0 && a.st_size == 1LL << 30 && a.st_blocks < 1024,
	   "the applied sparse file keeps its holes (%lld blocks of 512 for 1 GiB)", (long long)a.st_blocks);
	ok(stat(q, &b) == 0 && a.st_ino == b.st_ino && b.st_nlink == 2, "the second name is a link to it, not a copy");
	_cleanup_free_ char *pipe = get(lo, "pipe");
	is_str(pipe, "now a file\n", "the FIFO was replaced by the box's file");
	ws_changes_free(&ch);
}


static bool wh(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0;
}

/* Changes in git directories (base/gitdir.h): below a .git in any of its
 * spellings, in a bare repository of the tree or of the box, and the
 * deletion of a directory that holds one, are left out of an apply and
 * only named in the diff, unless allowed; files the user's tools run
 * (workspace/wsexec.h) are applied and named. */
static void test_git(void)
{
	char lo[PATH_MAX], up[PATH_MAX];
	fresh("git", lo, up);
	sh("cd '%s' && mkdir -p .git/hooks .git/objects .git/refs sub/.git fixture/objects fixture/refs && "
	   "echo 'ref: refs/heads/main' > .git/HEAD && printf '[core]\\n' > .git/config && echo s > sub/.git/config && "
	   "echo s > sub/f && echo ref > fixture/HEAD && echo a > a.txt", lo);
	sh("cd '%s' && mkdir -p .git/hooks Sub2/.Git 'x/.git ' y/git~1 z/.g\xe2\x80\x8cit fixture/hooks "
	   "newbare/objects newbare/refs .vscode .husky docs && "
	   "printf '#!/bin/sh\\ntouch /tmp/ward-hook-ran\\n' > .git/hooks/pre-commit && echo c > Sub2/.Git/config && "
	   "echo c > 'x/.git /config' && echo c > y/git~1/config && echo c > z/.g\xe2\x80\x8cit/config && "
	   "echo h > fixture/hooks/post-checkout && echo ref > newbare/HEAD && echo c > newbare/config && "
	   "echo p > plain.txt && echo 'eval \"$(curl x)\"' > .envrc && echo '{}' > .vscode/tasks.json && "
	   "echo x > .husky/pre-commit && echo i > docs/.gitignore && echo e > .env.example && echo b >> a.txt", up);
	bool whiteout = wh(up, "sub");
	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "git: the changes are read (%s)", e.msg);
	static const char *const git[] = { ".git/hooks/pre-commit", "Sub2/.Git/config", "x/.git /config", "y/git~1/config",
					   "z/.g\xe2\x80\x8cit/config", "fixture/hooks/post-checkout", "newbare/config",
					   "newbare/HEAD" };
	bool all = true;
	for (size_t i = 0; i < ARRAY_SIZE(git); i++) {
		const struct ws_change *c = find(&ch, git[i]);
		if (!c || !c->git) {
			printf("#   %s: %s\n", git[i], c ? "not marked" : "no change");
			all = false;
		}
	}
	ok(all, "in a git directory: .git, .Git, '.git ', git~1, .g<U+200C>it, a bare repository of the tree's and one of the box's");
	static const char *const plain[] = { "plain.txt", ".envrc", ".vscode/tasks.json", ".husky/pre-commit",
					     "docs/.gitignore", ".env.example", "a.txt" };
	all = true;
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		const struct ws_change *c = find(&ch, plain[i]);
		if (!c || c->git) {
			printf("#   %s: %s\n", plain[i], c ? "marked" : "no change");
			all = false;
		}
	}
	ok(all, "twin: the other changes (.gitignore, .env.example among them) are not");
	if (whiteout) {
		const struct ws_change *c = find(&ch, "sub");
		ok(c && c->kind == WS_DELETED && c->git, "the deletion of a directory that holds a .git is one");
	} else {
		printf("ok %d # SKIP a whiteout needs mknod (root)\n", ++tap_n);
	}
	const struct ws_change *c = find(&ch, ".envrc");
	like(c ? c->runs : NULL, "direnv", ".envrc: flagged, direnv named");
	c = find(&ch, ".vscode/tasks.json");
	like(c ? c->runs : NULL, "VS Code", ".vscode/tasks.json: flagged");
	c = find(&ch, ".husky/pre-commit");
	ok(c && c->runs, ".husky/pre-commit: flagged");
	ok(!find(&ch, "plain.txt")->runs && !find(&ch, "docs/.gitignore")->runs && !find(&ch, ".env.example")->runs &&
	   !find(&ch, "a.txt")->runs, "twin: plain.txt, docs/.gitignore, .env.example and a.txt are not flagged");
	ok(ws_changes_left_out(&ch) >= ARRAY_SIZE(git), "they are left out by default (%zu)", ws_changes_left_out(&ch));

	int dr;
	_cleanup_free_ char *d = diff_text(lo, up, &ch, "git-diff", &dr);
	is_int(dr, 0, "git: the diff is written");
	like(d, "changes under .git, not applied", "the diff lists the changes under .git apart");
	like(d, "  added    .git/hooks/pre-commit\n", "naming each");
	unlike(d, "ward-hook-ran", "but does not show the hook's content as a change to apply");
	like(d, "+p\n", "twin: the plain file's hunk is there");
	like(d, "flagged: files your tools run", "the flagged files come after");
	like(d, ".envrc: direnv runs it", "with why");

	/* Apply: the rest goes in; nothing under a git directory does. */
	ok(ws_apply(lo, up, &ch, &e) == 0, "git: the changes apply (%s)", e.msg);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/.git/hooks/pre-commit", lo);
	ok(access(p, F_OK) < 0, "the hook is not in the tree");
	snprintf(p, sizeof(p), "%s/newbare", lo);
	ok(access(p, F_OK) < 0, "nor the box's bare repository");
	snprintf(p, sizeof(p), "%s/fixture/hooks/post-checkout", lo);
	ok(access(p, F_OK) < 0, "nor a hook in the tree's bare repository");
	snprintf(p, sizeof(p), "%s/Sub2", lo);
	ok(access(p, F_OK) < 0 || sh("test -z \"$(find '%s' -type f)\"", p) == 0, "nor a .Git's config");
	if (whiteout) {
		_cleanup_free_ char *sf = get(lo, "sub/.git/config");
		is_str(sf, "s\n", "the directory holding a .git is not deleted");
	}
	_cleanup_free_ char *pl = get(lo, "plain.txt"), *er = get(lo, ".envrc");
	is_str(pl, "p\n", "twin: the plain file is applied");
	ok(er != NULL, "and the flagged .envrc is applied");

	/* Allowed: the same changes, all of them. */
	ch.apply_git = true;
	is_int(ws_changes_left_out(&ch), 0, "allowed: none is left out");
	_cleanup_free_ char *d2 = diff_text(lo, up, &ch, "git-diff2", &dr);
	like(d2, "ward-hook-ran", "allowed: the diff shows the hook");
	ok(ws_apply(lo, up, &ch, &e) == 0, "allowed: the changes apply (%s)", e.msg);
	snprintf(p, sizeof(p), "%s/.git/hooks/pre-commit", lo);
	ok(access(p, F_OK) == 0, "allowed: the hook is in the tree");
	if (whiteout) {
		snprintf(p, sizeof(p), "%s/sub", lo);
		ok(access(p, F_OK) < 0, "allowed: the directory is deleted");
	}
	ws_changes_free(&ch);
}

int main(void)
{
	if (!mkdtemp(root)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 77;
	}
	snprintf(lower, sizeof(lower), "%s/lower", root);
	snprintf(upper, sizeof(upper), "%s/upper", root);
	snprintf(victim, sizeof(victim), "%s/victim", root);
	mkdir(lower, 0755);
	mkdir(upper, 0755);
	mkdir(victim, 0755);
	char p[PATH_MAX + 16];

	/* The tree: a file, an unchanged file, a file to delete, and a symlink
	 * to a directory outside it. */
	put(lower, "calc.py", "return a - b\n");
	put(lower, "same.txt", "same\n");
	put(lower, "gone.txt", "bye\n");
	snprintf(p, sizeof(p), "%s/out", lower);
	symlink(victim, p);
	/* What the box left in the upper layer: the edit, a copied-up but
	 * unchanged file, a new file in a new directory, a whiteout, and a
	 * directory where the tree has the symlink (the box deleted the link
	 * and made a directory of that name). */
	put(upper, "calc.py", "return a + b\n");
	put(upper, "same.txt", "same\n");
	snprintf(p, sizeof(p), "%s/new", upper);
	mkdir(p, 0755);
	put(upper, "new/file.txt", "new\n");
	snprintf(p, sizeof(p), "%s/gone.txt", upper);
	bool whiteout = mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0;
	snprintf(p, sizeof(p), "%s/out", upper);
	mkdir(p, 0755);
	put(upper, "out/f", "inside\n");

	struct ws_changes ch;
	struct err e = { 0 };
	ok(ws_changes_read(lower, upper, &ch, &e) == 0, "the changes are read");
	const struct ws_change *c = find(&ch, "calc.py");
	ok(c && c->kind == WS_MODIFIED, "an edited file is modified");
	ok(!find(&ch, "same.txt"), "a copied-up file with the same content is no change");
	c = find(&ch, "new/file.txt");
	ok(c && c->kind == WS_ADDED, "a new file in a new directory is added");
	if (whiteout) {
		c = find(&ch, "gone.txt");
		ok(c && c->kind == WS_DELETED, "a whiteout is a deletion");
	} else {
		printf("ok %d # SKIP a whiteout needs mknod (root)\n", ++tap_n);
	}

	/* The diff. */
	int dr;
	_cleanup_free_ char *d = diff_text(lower, upper, &ch, "diff", &dr);
	is_int(dr, 0, "the diff is written");
	like(d, "--- a/calc.py\n+++ b/calc.py", "the diff names the file");
	like(d, "-return a - b\n+return a + b", "and shows the change");
	like(d, "+++ b/new/file.txt", "and the new file");

	/* Apply: the symlink in the tree is replaced by the box's directory;
	 * nothing lands in the directory it pointed to. */
	ok(ws_apply(lower, upper, &ch, &e) == 0, "the changes apply (%s)", e.msg);
	_cleanup_free_ char *c1 = get(lower, "calc.py");
	is_str(c1, "return a + b\n", "the edit is in the tree");
	_cleanup_free_ char *c2 = get(lower, "new/file.txt");
	is_str(c2, "new\n", "the new file is in the tree");
	_cleanup_free_ char *c3 = get(lower, "out/f");
	is_str(c3, "inside\n", "the box's directory replaced the symlink");
	_cleanup_free_ char *v = get(victim, "f");
	ok(!v, "nothing was written where the symlink pointed");
	if (whiteout) {
		snprintf(p, sizeof(p), "%s/gone.txt", lower);
		ok(access(p, F_OK) < 0, "the deleted file is gone");
	}
	ws_changes_free(&ch);

	/* A change list that would write through a symlink (as a tree changed
	 * between the read and the apply could ask): refused, not followed. */
	snprintf(p, sizeof(p), "%s/out2", lower);
	symlink(victim, p);
	snprintf(p, sizeof(p), "%s/out2", upper);
	mkdir(p, 0755);
	put(upper, "out2/g", "escape\n");
	struct ws_change one = { .path = "out2/g", .kind = WS_ADDED };
	struct ws_changes forged = { .v = &one, .n = 1 };
	ok(ws_apply(lower, upper, &forged, &e) < 0, "a write through a symlink in the tree is refused");
	like(e.msg, "out2/g", "and the error names the path");
	_cleanup_free_ char *v2 = get(victim, "g");
	ok(!v2, "nothing reached the symlink's target");
	/* Positive twin: the same list without the symlink in the way. */
	snprintf(p, sizeof(p), "%s/out2", lower);
	unlink(p);
	ok(ws_apply(lower, upper, &forged, &e) == 0, "the same change applies once the path is a plain directory");
	_cleanup_free_ char *g = get(lower, "out2/g");
	is_str(g, "escape\n", "and lands in the tree");

	test_no_follow();
	test_setid();
	test_special_sparse_links();
	test_git();

	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
