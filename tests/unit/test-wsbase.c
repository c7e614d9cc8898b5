/* The base of the workspace changes: an edit of the tree made after the
 * box took its copy is found before applying would overwrite it; what
 * nobody edited is not. */
#include <errno.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "base/timeutil.h"
#include "workspace/wsbase.h"
#include "workspace/wsdiff.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-wsbase-XXXXXX";
static char lo[PATH_MAX], up[PATH_MAX], base[PATH_MAX];

static const char *conflict(const struct ws_changes *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return c->v[i].conflict ? c->v[i].conflict : "";
	return "(no change)";
}

/* Until the file system's clock is past path's ctime (a bound of 2 s):
 * a run that begins then finds path unchanged since, as a person's edit a
 * moment before a run is. 0, or -1 past the bound. */
static int clock_past(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -1;
	int64_t c = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec, until = now_ms() + 2000;
	while (now_file_ns() <= c)
		if (now_ms() > until)
			return -1;
	return 0;
}

/* The changes read again and checked: the number of conflicts. */
static int check(struct ws_changes *ch)
{
	struct err e = { 0 };
	ws_changes_free(ch);
	if (ws_changes_read(lo, up, ch, &e) < 0)
		return -1;
	return ws_base_check(base, lo, ch, &e);
}

int main(void)
{
	if (!mkdtemp(root)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 77;
	}
	snprintf(lo, sizeof(lo), "%s/lower", root);
	snprintf(up, sizeof(up), "%s/upper", root);
	snprintf(base, sizeof(base), "%s/layers.base", root);
	mkdir(lo, 0755);
	mkdir(up, 0755);
	char p[PATH_MAX + 16];

	/* The tree before the run. */
	put(lo, "edited-after.txt", "v1\n");
	put(lo, "untouched.txt", "v1\n");
	put(lo, "edited-during.txt", "v1\n");
	put(lo, "copied.txt", "same\n");
	put(lo, "deleted-after.txt", "v1\n");
	mk(lo, "dir");
	put(lo, "dir/x", "x\n");
	snprintf(p, sizeof(p), "%s/dir/x", lo);
	is_int(clock_past(p), 0, "the file system's clock is past the tree's last change");

	struct err e = { 0 };
	is_int(ws_base_begin(base, now_file_ns(), &e), 0, "the run begins (%s)", e.msg);
	/* The run: the box changes files, copies one up unchanged, makes a
	 * file and a directory, deletes a directory; the person edits one
	 * of the files the box changed while it runs. */
	put(up, "edited-after.txt", "box\n");
	put(up, "untouched.txt", "box\n");
	put(up, "edited-during.txt", "box\n");
	put(up, "copied.txt", "same\n");
	put(up, "deleted-after.txt", "box\n");
	put(up, "new.txt", "box\n");
	mk(up, "newdir");
	put(up, "newdir/k", "box\n");
	snprintf(p, sizeof(p), "%s/dir", up);
	bool wo = mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0;
	put(lo, "edited-during.txt", "person, during the run\n");

	struct ws_changes ch = { 0 };
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "the changes are read");
	is_int(ws_base_record(base, lo, &ch, false, &e), 0, "the run ends: the base is recorded (%s)", e.msg);
	is_int(check(&ch), 1, "right after the run, one file conflicts");
	like(conflict(&ch, "edited-during.txt"), "while the run had its own copy", "the one edited during the run");
	is_str(conflict(&ch, "untouched.txt"), "", "twin: a file only the box changed does not");

	/* After the run, the person edits the tree. */
	put(lo, "edited-after.txt", "person, after the run\n");
	put(lo, "new.txt", "person's own new.txt\n");
	put(lo, "copied.txt", "person, after the run\n");
	snprintf(p, sizeof(p), "%s/deleted-after.txt", lo);
	unlink(p);
	mk(lo, "newdir");
	put(lo, "newdir/mine", "person\n");
	if (wo)
		put(lo, "dir/y", "person's new file in a directory the box deleted\n");
	int n = check(&ch);
	like(conflict(&ch, "edited-after.txt"), "changed in the tree since the run", "an edit after the run conflicts");
	like(conflict(&ch, "new.txt"), "changed in the tree since the run", "so does a file made where the box made one");
	like(conflict(&ch, "deleted-after.txt"), "changed in the tree since the run", "and a file deleted after the run");
	like(conflict(&ch, "copied.txt"), "changed in the tree since the run",
	     "and an edit of a file the box had copied unchanged (its copy hides the edit)");
	is_str(conflict(&ch, "untouched.txt"), "", "twin: a file nobody edited since does not");
	is_str(conflict(&ch, "newdir"), "(no change)", "twin: nor a directory the person made too (they merge)");
	is_str(conflict(&ch, "newdir/k"), "", "nor the box's file in it");
	if (wo)
		like(conflict(&ch, "dir"), "changed in the tree since the run", "a directory the box deleted, added to since, conflicts");
	is_int(n, wo ? 6 : 5, "and nothing else");

	/* Applied (forced): the records are renewed, so a later change of the
	 * box's to the same file is not a conflict. */
	ok(ws_apply(lo, up, &ch, &e) == 0, "applied (%s)", e.msg);
	is_int(ws_base_record(base, lo, &ch, true, &e), 0, "the records are renewed");
	put(up, "edited-after.txt", "box, again\n");
	is_int(check(&ch), 0, "a later change by the same box conflicts with nothing");
	put(lo, "edited-after.txt", "person, again\n");
	is_int(check(&ch), 1, "twin: the person's next edit does");

	/* A change under .git, which an apply leaves out unless allowed: it
	 * is not checked (nothing of the tree's would be lost), so it cannot
	 * hold back the rest. */
	mk(lo, ".git");
	put(lo, ".git/config", "v1\n");
	mk(up, ".git");
	put(up, ".git/config", "box\n");
	check(&ch);
	is_str(conflict(&ch, ".git/config"), "", "a change under .git left out by the apply is not a conflict");
	ws_changes_free(&ch);
	ok(ws_changes_read(lo, up, &ch, &e) == 0, "read again");
	ch.apply_git = true;
	ws_base_check(base, lo, &ch, &e);
	like(conflict(&ch, ".git/config"), "no base was recorded", "twin: allowed, it is checked as any other");
	sh("rm -rf '%s/.git' '%s/.git'", lo, up);
	ws_changes_free(&ch);

	/* A run cut off before it recorded anything: "since" stays, and a file
	 * without a record conflicts only if it changed after it. */
	put(lo, "cut-old.txt", "v1\n");
	snprintf(p, sizeof(p), "%s/cut-old.txt", lo);
	is_int(clock_past(p), 0, "the file system's clock is past cut-old.txt's change");
	is_int(ws_base_begin(base, now_file_ns(), &e), 0, "a run begins");
	put(up, "cut-old.txt", "box\n");
	put(lo, "cut-new.txt", "v1, made during the cut run\n");
	put(up, "cut-new.txt", "box\n");
	is_int(ws_base_begin(base, now_file_ns() + 1000000000000LL, &e), 0, "the next run begins later");
	n = check(&ch);
	like(conflict(&ch, "cut-new.txt"), "the run was cut off", "no record, changed after the earliest begin: conflict");
	is_str(conflict(&ch, "cut-old.txt"), "", "twin: no record, not changed since: no conflict");

	/* A malformed record file is an error, not an empty record. */
	put(root, "layers.base", "not ward's");
	ok(ws_base_check(base, lo, &ch, &e) < 0, "a record file that is not ward's is an error");
	like(e.msg, "is not a record of ward's", "that says so");
	ws_changes_free(&ch);

	if (sh("rm -rf '%s'", root) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
