/* An image's tree as erofs (image/erofs.c): made beside the tree, with its
 * files, links and modes as they are; made once (a second ask finds it;
 * two callers at once get one file); a tree that is not there, or not a
 * directory, is refused with one line. fsck.erofs checks and extracts
 * what was made; dump.erofs says which inodes are one (a hard link). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/erofs.h"
#include "tap.h"

static char dir[] = "/tmp/ward-test-erofs-XXXXXX";

static int sh(const char *fmt, const char *a, const char *b)
{
	char cmd[4 * 4096];
	snprintf(cmd, sizeof(cmd), fmt, a, b);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
}

/* The text of a command's first line of output. */
static void out1(const char *cmd, char *out, size_t n)
{
	out[0] = 0;
	FILE *p = popen(cmd, "r");
	if (p && fgets(out, (int)n, p))
		out[strcspn(out, "\n")] = 0;
	if (p)
		pclose(p);
}

int main(void)
{
	if (access("/usr/bin/mkfs.erofs", X_OK) < 0 && access("/usr/sbin/mkfs.erofs", X_OK) < 0) {
		printf("1..0 # SKIP mkfs.erofs is not installed (apt-get install erofs-utils)\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	char tree[4096], p[4096], p2[4096], out[4096], got[4096];
	snprintf(tree, sizeof(tree), "%s/rootfs", dir);
	snprintf(p, sizeof(p), "%s/etc", tree);
	mkdir(tree, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/etc/os-release", tree);
	put(p, "ID=erofs-test\n", 0644);
	snprintf(p, sizeof(p), "%s/etc/secret", tree);
	put(p, "mode kept\n", 0640);
	snprintf(p2, sizeof(p2), "%s/etc/again", tree);
	ok(link(p, p2) == 0, "the tree has a hard link");
	snprintf(p, sizeof(p), "%s/etc/passwd-link", tree);
	ok(symlink("/etc/passwd", p) == 0, "and an absolute symlink (stored as it is: the guest resolves it)");

	struct err e = { 0 };
	int r = image_erofs_tree(tree, out, sizeof(out), &e);
	is_int(r, 0, "image_erofs_tree makes the erofs of a tree (%s)", e.msg);
	snprintf(p, sizeof(p), "%s/rootfs.erofs", dir);
	is_str(out, p, "beside the tree: ROOT.erofs");
	unsigned char magic[4] = { 0 };
	int fd = open(out, O_RDONLY);
	ok(fd >= 0 && pread(fd, magic, 4, 1024) == 4 && !memcmp(magic, "\xe2\xe1\xf5\xe0", 4),
	   "it is an erofs image (its magic at 1024)");
	if (fd >= 0)
		close(fd);
	struct stat ms;
	ok(stat(out, &ms) == 0 && (ms.st_mode & 0777) == 0600, "the user's alone (0600)");
	snprintf(p2, sizeof(p2), "%s/x", dir);
	is_int(sh("fsck.erofs --extract=%s %s >/dev/null 2>&1", p2, out), 0, "fsck.erofs finds it whole and extracts it");
	snprintf(p, sizeof(p), "cat %s/x/etc/os-release", dir);
	out1(p, got, sizeof(got));
	is_str(got, "ID=erofs-test", "a file's content is the tree's");
	snprintf(p, sizeof(p), "stat -c %%a %s/x/etc/secret", dir);
	out1(p, got, sizeof(got));
	is_str(got, "640", "and its mode");
	snprintf(p, sizeof(p), "readlink %s/x/etc/passwd-link", dir);
	out1(p, got, sizeof(got));
	is_str(got, "/etc/passwd", "a link's target is as it was");
	snprintf(p, sizeof(p), "dump.erofs --path=/etc/secret %s | grep -o 'NID: [0-9]*'", out);
	out1(p, got, sizeof(got));
	snprintf(p, sizeof(p), "dump.erofs --path=/etc/again %s | grep -o 'NID: [0-9]*'", out);
	char got2[4096];
	out1(p, got2, sizeof(got2));
	ok(got[0] && !strcmp(got, got2), "a hard link is one inode in the image (%s, %s)", got, got2);

	/* Made once: a second ask finds the same file. */
	struct stat a, b;
	stat(out, &a);
	char out2[4096];
	r = image_erofs_tree(tree, out2, sizeof(out2), &e);
	stat(out2, &b);
	ok(r == 0 && a.st_ino == b.st_ino && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec,
	   "a second ask finds the image made before (the same file)");
	snprintf(p, sizeof(p), "%s/", tree);
	r = image_erofs_tree(p, out2, sizeof(out2), &e);
	ok(r == 0 && !strcmp(out, out2), "the tree named with a trailing slash is the same image");

	/* Two callers at once on a tree that takes a while: one file, which
	 * both get; nothing half-made left. */
	char big[4096];
	snprintf(big, sizeof(big), "%s/big", dir);
	mkdir(big, 0755);
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "%s/f%d", big, i);
		put(p, "some bytes of a file\n", 0644);
	}
	int pipes[2][2];
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		if (pipe(pipes[k]) < 0)
			return 1;
		kids[k] = fork();
		if (kids[k] == 0) {
			struct err ke = { 0 };
			char o[4096];
			struct stat st = { 0 };
			if (image_erofs_tree(big, o, sizeof(o), &ke) == 0)
				stat(o, &st);
			if (write(pipes[k][1], &st.st_ino, sizeof(st.st_ino)) < 0)
				_exit(1);
			_exit(0);
		}
		close(pipes[k][1]);
	}
	ino_t inos[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		if (read(pipes[k][0], &inos[k], sizeof(inos[k])) < 0)
			inos[k] = 0;
		waitpid(kids[k], NULL, 0);
	}
	ok(inos[0] && inos[0] == inos[1], "two callers at once get one image (the same inode)");
	snprintf(p, sizeof(p), "%s/big.erofs.tmp", dir);
	ok(access(p, F_OK) < 0, "and no temporary file is left");

	/* Refused, each with its line. */
	snprintf(p, sizeof(p), "%s/nothing", dir);
	e = (struct err){ 0 };
	r = image_erofs_tree(p, out2, sizeof(out2), &e);
	is_int(r, -ENOENT, "a tree that is not there is refused");
	like(e.msg, "the image's tree", "saying which tree");
	snprintf(p, sizeof(p), "%s/etc/os-release", tree);
	e = (struct err){ 0 };
	r = image_erofs_tree(p, out2, sizeof(out2), &e);
	is_int(r, -ENOTDIR, "a file that is not a directory is refused");
	like(e.msg, "is not a directory", "saying so");
	snprintf(p, sizeof(p), "%s/etc/os-release.erofs", tree);
	ok(access(p, F_OK) < 0, "and nothing is made for it");

	sh("rm -rf %s%s", dir, "");
	return tap_done();
}
