#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/fsutil.h"
#include "tap.h"

int main(void)
{
	ok(glob_match("*.c", "main.c"), "*.c matches main.c");
	ok(!glob_match("*.c", "dir/main.c"), "* does not cross /");
	ok(glob_match("**/*.c", "main.c"), "**/ matches zero segments");
	ok(glob_match("**/*.c", "a/b/main.c"), "**/ matches several");
	ok(glob_match("src/**", "src/a/b"), "trailing ** matches everything below");
	ok(glob_match("a?c", "abc") && !glob_match("a?c", "a/c"), "? is one non-slash character");
	ok(glob_match("[a-c]x", "bx") && !glob_match("[!a-c]x", "bx"), "classes and negated classes");
	ok(!glob_match("*.c", "main.h"), "no match is no match");

	char dir[] = "/tmp/ward-glob-XXXXXX";
	ok(mkdtemp(dir) != NULL, "tmpdir");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	int f = openat(dfd, ".gitignore", O_CREAT | O_WRONLY, 0644);
	const char gi[] = "# comment\n*.o\nbuild/\n/top.txt\n!keep.o\ndocs/*.tmp\n";
	ok(write(f, gi, sizeof(gi) - 1) == sizeof(gi) - 1, "write .gitignore");
	close(f);
	struct ignore *ig = ignore_load(dfd, "", NULL);
	ok(ig != NULL, ".gitignore loads");
	ok(ignore_match(ig, "x.o", false), "*.o ignored");
	ok(ignore_match(ig, "sub/x.o", false), "*.o ignored at any depth");
	ok(!ignore_match(ig, "keep.o", false), "!keep.o re-includes");
	ok(ignore_match(ig, "build", true), "build/ ignores the directory");
	ok(!ignore_match(ig, "build", false), "build/ does not ignore a file named build");
	ok(ignore_match(ig, "top.txt", false), "/top.txt anchored at the root");
	ok(!ignore_match(ig, "sub/top.txt", false), "/top.txt not below the root");
	ok(ignore_match(ig, "docs/a.tmp", false), "docs/*.tmp anchored");
	ok(!ignore_match(ig, "main.c", false), "other files not ignored");
	ignore_free(ig);
	unlinkat(dfd, ".gitignore", 0);
	close(dfd);
	rmdir(dir);
	return tap_done();
}
