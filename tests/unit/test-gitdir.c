/* What ward takes for a git directory (base/gitdir.h): the names git
 * would take for .git on some file system, and the walk that finds them
 * (and bare repositories) in a tree, bounded, never through a symlink. */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/gitdir.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-gitdir-XXXXXX";

static bool name_is(const char *s)
{
	return gitdir_name(s, strlen(s));
}

static void test_names(void)
{
	ok(name_is(".git"), ".git is one");
	ok(name_is(".GIT") && name_is(".Git"), "in any case (a case-folding file system)");
	ok(name_is(".git.") && name_is(".git ") && name_is(".git. . "), "with trailing dots and spaces (NTFS)");
	ok(name_is("git~1") && name_is("GIT~1"), "git~1 (NTFS's short name)");
	ok(name_is(".g\xe2\x80\x8cit") && name_is("\xef\xbb\xbf.git") && name_is(".gi\xe2\x81\xaft"),
	   "with a code point HFS+ ignores inside it (U+200C, U+FEFF, U+206F)");
	ok(!name_is(".gitignore") && !name_is(".github") && !name_is("git") && !name_is(".git-x") && !name_is("a.git") &&
	   !name_is(".gi") && !name_is("git~2") && !name_is(""),
	   "twin: .gitignore, .github, git, .git-x, a.git, git~2 are not");
	ok(!name_is(".g\xe2\x80\x8bit"), "twin: U+200B is not a code point HFS+ ignores");
	ok(gitdir_in_path(".git/hooks/pre-commit") && gitdir_in_path("a/b/.git") && gitdir_in_path("a/.GIT/config") &&
	   gitdir_in_path("x/git~1/HEAD"),
	   "a path through one, at any depth");
	ok(!gitdir_in_path("a/.gitignore") && !gitdir_in_path(".github/workflows/ci.yml") &&
	   !gitdir_in_path("src/git/x.c") && !gitdir_in_path("a.git/b"),
	   "twin: paths through look-alikes are not");
}

static int collect(int dfd, const char *name, const char *path, void *ud)
{
	char *out = ud;
	strcat(out, path);
	strcat(out, ";");
	return 0;
}

static void test_walk(void)
{
	char t[PATH_MAX];
	snprintf(t, sizeof(t), "%s/tree", root);
	sh("mkdir -p '%s' && cd '%s' && mkdir -p .git/hooks sub/.git sub/deep/x bare/objects bare/refs wt "
	   "fixture/.git/modules/m/.git link-target/.git d && echo ref > bare/HEAD && echo 'gitdir: /x' > wt/.git && "
	   "ln -s link-target lnk && ln -s ../link-target/.git d/.git && touch a.txt",
	   t, t);
	_cleanup_close_ int fd = open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char found[4096] = "";
	struct gitdir_walk w = { 0 };
	ok(gitdir_walk(fd, "", collect, found, &w) == 0, "the walk ends");
	like(found, ".git;", "the tree's .git");
	like(found, "sub/.git;", "a nested repository's .git");
	like(found, "wt/.git;", "a .git file (a worktree's or a submodule's)");
	like(found, "bare;", "a bare repository (HEAD, objects/, refs/)");
	like(found, "fixture/.git;", "a .git holding more .git");
	unlike(found, "modules", "and not walked into");
	like(found, "link-target/.git;", "a directory's .git, reached by its own name");
	unlike(found, "lnk", "never through a symlink");
	unlike(found, "d/.git", "and a symlink named .git is not one");
	ok(!w.cut, "a small tree is walked whole");
	is_int(w.found, 6, "six in all");

	/* A .git past the depth bound is not looked at, and the walk says so. */
	char deep[PATH_MAX];
	snprintf(deep, sizeof(deep), "%s/deep", root);
	mkdir(deep, 0755);
	size_t l = strlen(deep);
	for (int i = 0; i < GITDIR_WALK_DEPTH + 1; i++)
		l += (size_t)snprintf(deep + l, sizeof(deep) - l, "/d");
	sh("mkdir -p '%s/.git'", deep);
	found[0] = 0;
	w = (struct gitdir_walk){ 0 };
	snprintf(deep, sizeof(deep), "%s/deep", root);
	_cleanup_close_ int dd = open(deep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok(gitdir_walk(dd, "deep", collect, found, &w) == 0 && w.cut, "a walk past %d levels is cut, and says so",
	   GITDIR_WALK_DEPTH);
	ok(!found[0], "what lies past it is not found");
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	test_names();
	test_walk();
	sh("rm -rf '%s'", root);
	return tap_done();
}
