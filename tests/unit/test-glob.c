/* The glob dialect (tools/glob.h), .gitignore rules (tools/ignore.h) and
 * the tree walk's cancel (tools/walk.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "tools/glob.h"
#include "tools/ignore.h"
#include "tools/walk.h"
#include "tap.h"

/* n copies of c, then tail. */
static char *repeat(char *out, const char *c, int n, const char *tail)
{
	size_t l = strlen(c), k = 0;
	for (int i = 0; i < n; i++, k += l)
		memcpy(out + k, c, l);
	strcpy(out + k, tail);
	return out;
}

static void write_file(int dfd, const char *name, const char *s)
{
	int f = openat(dfd, name, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	ok(f >= 0 && write(f, s, strlen(s)) == (ssize_t)strlen(s), "write %s", name);
	close(f);
}

static void test_dialect(void)
{
	ok(glob_match("*.c", "main.c"), "*.c matches main.c");
	ok(!glob_match("*.c", "dir/main.c"), "* does not cross /");
	ok(glob_match("**/*.c", "main.c"), "**/ matches zero segments");
	ok(glob_match("**/*.c", "a/b/main.c"), "**/ matches several");
	ok(glob_match("src/**", "src/a/b"), "trailing ** matches everything below");
	ok(!glob_match("src/**", "src"), "trailing ** does not match the directory itself");
	ok(glob_match("a/**/b", "a/b") && glob_match("a/**/b", "a/x/y/b") && !glob_match("a/**/b", "a/x/c"),
	   "** in the middle: zero or more segments, and only those");
	ok(glob_match("a?c", "abc") && !glob_match("a?c", "a/c"), "? is one non-slash character");
	ok(glob_match("[a-c]x", "bx") && !glob_match("[!a-c]x", "bx"), "classes and negated classes");
	ok(glob_match("[^a-c]x", "dx") && !glob_match("[^a-c]x", "ax"), "^ negates a class too");
	ok(!glob_match("*.c", "main.h"), "no match is no match");
	ok(glob_match("\\*.c", "*.c") && !glob_match("\\*.c", "a.c"), "a backslash escapes");
	/* No FNM_PERIOD, as before and as git matches .gitignore. */
	ok(glob_match("*", ".env") && glob_match("*.c", ".x.c") && glob_match("?env", ".env"),
	   "* and ? match a leading dot");
	ok(glob_match("a**b", "axxb") && !glob_match("a**b", "a/x/b"), "** inside a segment is *");
	ok(glob_match_text("git status*", "git status src/x") && glob_match_text("*.c", "a/b.c"),
	   "text: * runs over /");
	ok(!glob_match_text("git status*", "git push"), "text: and matches only what it says");

	char pat[GLOB_PATTERN_MAX + 2];
	ok(glob_match(repeat(pat, "*", GLOB_PATTERN_MAX, ""), "x"), "a pattern of GLOB_PATTERN_MAX bytes matches");
	ok(!glob_match(repeat(pat, "*", GLOB_PATTERN_MAX + 1, ""), "x"), "a longer one never does");
	ok(!glob_match_text(pat, "x"), "nor as text");

	char esc[64];
	ok(glob_escape("l*[x]?\\", 7, esc, sizeof(esc)) == 0 && glob_match_text(esc, "l*[x]?\\") &&
	   !glob_match_text(esc, "ls[x]a\\"), "an escaped string matches only itself");
	ok(glob_escape("abc", 3, esc, 3) == -ENAMETOOLONG, "and does not overflow its buffer");
}

/* The pattern made the old recursive matcher try every way of
 * placing ten stars: 51 s for 50 characters, hours for 200. */
static void test_worst_cases(void)
{
	static char name[8192], pat[8192];
	int64_t t0 = now_us();
	bool m = glob_match("*a*a*a*a*a*a*a*a*a*ab", repeat(name, "a", 4000, ""));
	int64_t us = now_us() - t0;
	ok(!m, "*a*a*a*a*a*a*a*a*a*ab does not match 4,000 a's");
	ok(us < 100000, "and says so in under 100 ms (%lld us)", (long long)us);
	t0 = now_us();
	m = glob_match("*a*a*a*a*a*a*a*a*a*ab", repeat(name, "a", 200, "b"));
	us = now_us() - t0;
	ok(m && us < 100000, "twin: it matches 200 a's and a b, in under 100 ms (%lld us)", (long long)us);
	t0 = now_us();
	m = glob_match_text("*a*a*a*a*a*a*a*a*a*ab", repeat(name, "a", 4000, ""));
	us = now_us() - t0;
	ok(!m && us < 100000, "as text too, in under 100 ms (%lld us)", (long long)us);

	/* Nine `**` over 2,000 segments: backtracking over every placement
	 * would be 2000^9 tries. */
	const char *many = "**/a/**/a/**/a/**/a/**/a/**/a/**/a/**/a/**/b";
	repeat(name, "a/", 2000, "a");
	t0 = now_us();
	m = glob_match(many, name);
	us = now_us() - t0;
	ok(!m && us < 100000, "nine ** over 2,000 segments: no match, in under 100 ms (%lld us)", (long long)us);
	repeat(name, "a/", 2000, "b");
	t0 = now_us();
	m = glob_match(many, name);
	us = now_us() - t0;
	ok(m && us < 100000, "twin: a match, in under 100 ms (%lld us)", (long long)us);

	/* The documented worst case: a 4 KiB pattern whose segments after a
	 * `**` nearly match a 4 KiB path at every offset. */
	repeat(pat + 3, "?/", 1000, "b");
	memcpy(pat, "**/", 3);
	repeat(name, "a/", 2047, "a");
	t0 = now_us();
	m = glob_match(pat, name);
	us = now_us() - t0;
	ok(!m && us < 1000000, "the worst case, 4 KiB over 4 KiB, stays polynomial (%lld us)", (long long)us);
}

static void test_ignore(int dfd)
{
	char name[512];
	write_file(dfd, ".gitignore",
		   "# comment\n*.o\nbuild/\n/top.txt\n!keep.o\ndocs/*.tmp\n**/gen/*.c\nlogs/**\n"
		   "*a*a*a*a*a*a*a*a*a*a\n*a*a*a*a*a*a*a*a*a*ab\n");
	struct ignore *ig = ignore_load(dfd, "", NULL);
	ok(ig != NULL, ".gitignore loads");
	ok(ignore_match(ig, "x.o", false, NULL), "*.o ignored");
	ok(ignore_match(ig, "sub/x.o", false, NULL), "*.o ignored at any depth");
	ok(!ignore_match(ig, "keep.o", false, NULL), "!keep.o re-includes");
	ok(ignore_match(ig, "build", true, NULL), "build/ ignores the directory");
	ok(!ignore_match(ig, "build", false, NULL), "build/ does not ignore a file named build");
	ok(ignore_match(ig, "top.txt", false, NULL), "/top.txt anchored at the root");
	ok(!ignore_match(ig, "sub/top.txt", false, NULL), "/top.txt not below the root");
	ok(ignore_match(ig, "docs/a.tmp", false, NULL), "docs/*.tmp anchored");
	ok(!ignore_match(ig, "docs/x/a.tmp", false, NULL), "docs/*.tmp: * stays in its segment");
	ok(ignore_match(ig, "gen/x.c", false, NULL) && ignore_match(ig, "a/b/gen/x.c", false, NULL),
	   "**/gen/*.c at any depth");
	ok(ignore_match(ig, "logs/a/b.txt", false, NULL) && !ignore_match(ig, "logs", true, NULL),
	   "logs/** is what is below logs");
	ok(!ignore_match(ig, "main.c", false, NULL), "other files not ignored");
	int64_t t0 = now_us();
	bool m = ignore_match(ig, repeat(name, "a", 200, ""), false, NULL);
	int64_t us = now_us() - t0;
	ok(m && us < 100000, "200 a's: the last rule fails fast, the one before ignores it (%lld us)", (long long)us);
	t0 = now_us();
	m = ignore_match(ig, repeat(name, "a", 200, "c"), false, NULL);
	us = now_us() - t0;
	ok(!m && us < 100000, "twin: 200 a's and a c is kept, as fast (%lld us)", (long long)us);
	ignore_free(ig);

	/* The rule ceiling, pinned: the lines past it are dropped. */
	is_int(IGNORE_RULES_MAX, 10000, "at most 10,000 .gitignore rules on a path");
	static char many[(IGNORE_RULES_MAX + 2) * 8];
	size_t k = 0;
	for (int i = 0; i < IGNORE_RULES_MAX; i++)
		k += (size_t)snprintf(many + k, sizeof(many) - k, "r%d\n", i);
	snprintf(many + k, sizeof(many) - k, "past.txt\n");
	write_file(dfd, ".gitignore", many);
	ig = ignore_load(dfd, "", NULL);
	ok(ignore_match(ig, "r9999", false, NULL), "the 10,000th rule is kept");
	ok(!ignore_match(ig, "past.txt", false, NULL), "the one after it is dropped");
	/* The first rule is tried last (the last match wins). */
	ok(ignore_match(ig, "r0", false, NULL), "the first rule is kept");
	struct cancel c;
	ok(cancel_init(&c) == 0, "cancel token");
	cancel_fire(&c);
	ok(!ignore_match(ig, "r0", false, &c), "a set cancel stops the match before it gets there");
	cancel_free(&c);
	ignore_free(ig);
	unlinkat(dfd, ".gitignore", 0);
}

struct seen {
	struct cancel *cancel;
	int n;
	char first[64];
};

static int count_cb(const char *rel, int dirfd, const char *name, const struct stat *st, void *ud)
{
	struct seen *s = ud;
	if (!s->n++)
		snprintf(s->first, sizeof(s->first), "%s", rel);
	if (s->cancel)
		cancel_fire(s->cancel);
	return 0;
}

static void test_walk_cancel(int dfd)
{
	struct cancel c;
	ok(cancel_init(&c) == 0, "cancel token");
	struct tool_ctx ctx = { .cancel = &c, .root_fd = -1, .cwd = "/" };
	mkdirat(dfd, "d", 0755);
	write_file(dfd, "d/b", "");
	write_file(dfd, "d/c", "");
	write_file(dfd, "a", "");
	struct seen s = { 0 };
	is_int(walk_tree(&ctx, dfd, count_cb, &s), 0, "a walk");
	is_int(s.n, 3, "visits every file");
	is_str(s.first, "a", "in name order");
	s = (struct seen){ .cancel = &c };
	is_int(walk_tree(&ctx, dfd, count_cb, &s), -ECANCELED, "a cancel during the walk stops it");
	is_int(s.n, 1, "at the next entry");
	is_int(walk_tree(&ctx, dfd, count_cb, &s), -ECANCELED, "a walk cancelled before it starts");
	is_int(s.n, 1, "visits nothing");
	unlinkat(dfd, "d/b", 0);
	unlinkat(dfd, "d/c", 0);
	unlinkat(dfd, "d", AT_REMOVEDIR);
	unlinkat(dfd, "a", 0);
	cancel_free(&c);
}

int main(void)
{
	test_dialect();
	test_worst_cases();
	char dir[] = "/tmp/ward-glob-XXXXXX";
	ok(mkdtemp(dir) != NULL, "tmpdir");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	test_ignore(dfd);
	test_walk_cancel(dfd);
	close(dfd);
	rmdir(dir);
	return tap_done();
}
