/* What an entry of a box's upper layer is (workspace/wslayer.h), by the
 * layer's writer: overlayfs's whiteouts (character devices 0/0) and
 * opaque xattrs, fuse-overlayfs's .wh.NAME files, .wh..wh..opq markers and
 * user.fuseoverlayfs.opaque; and that the readers (the changes, apply,
 * the patch, the merge's manifest) read each form only in a layer of the
 * writer that makes it: in overlayfs's, a file the box named .wh.foo is
 * that file, never a deletion of foo. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "workspace/checkpoint.h"
#include "workspace/wsdiff.h"
#include "workspace/wslayer.h"
#include "workspace/wsmerge.h"
#include "workspace/wspatch.h"
#include "tap.h"
#include "wstest.h"

static char root[] = "/tmp/ward-test-wslayer-XXXXXX";

/* root/NAME: lower/ (the tree) and layers/upper, layers/work. */
struct fx {
	char lower[PATH_MAX], dir[PATH_MAX], upper[PATH_MAX];
};

static void fx_make(struct fx *f, const char *name)
{
	snprintf(f->lower, sizeof(f->lower), "%s/%s-lower", root, name);
	snprintf(f->dir, sizeof(f->dir), "%s/%s-layers", root, name);
	snprintf(f->upper, sizeof(f->upper), "%s/upper", f->dir);
	mkdir(f->lower, 0755);
	mkdir(f->dir, 0700);
	mkdir(f->upper, 0755);
	char w[PATH_MAX + 8];
	snprintf(w, sizeof(w), "%s/work", f->dir);
	mkdir(w, 0700);
}

static const struct ws_change *find(const struct ws_changes *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	return NULL;
}

static bool any_wh(const struct ws_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (strstr(c->v[i].path, ".wh."))
			return true;
	return false;
}

static bool whiteout_dev(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0;
}

static void xattr_y(const char *dir, const char *rel, const char *name)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	setxattr(p, name, "y", 1, 0);
}

static bool exists(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* The tree every layer below is over: a file to change, a file to delete
 * in a directory, a file deleted by a 0/0 whiteout, and two directories
 * the box replaced by new ones (opaque, each writer's way). */
static void tree(const char *lo)
{
	put(lo, "a.txt", "old\n");
	mk(lo, "d");
	put(lo, "d/b.txt", "bee\n");
	put(lo, "d/stay.txt", "stay\n");
	put(lo, "gone.txt", "gone\n");
	mk(lo, "keep");
	put(lo, "keep/k1", "1\n");
	put(lo, "keep/k2", "2\n");
	mk(lo, "xo");
	put(lo, "xo/x1", "x\n");
}

/* What fuse-overlayfs leaves in its upper for: a.txt changed, new.txt
 * made, d/b.txt deleted (.wh.b.txt), gone.txt deleted (0/0, where mknod
 * works), keep/ replaced by a directory holding y (.wh..wh..opq), xo/
 * replaced by an empty one (user.fuseoverlayfs.opaque). */
static bool fuse_upper(const char *up)
{
	put(up, "a.txt", "new\n");
	put(up, "new.txt", "fresh\n");
	mk(up, "d");
	put(up, "d/.wh.b.txt", "");
	bool dev = whiteout_dev(up, "gone.txt");
	mk(up, "keep");
	put(up, "keep/" WSLAYER_WH_OPAQUE, "");
	put(up, "keep/y", "why\n");
	mk(up, "xo");
	xattr_y(up, "xo", WSLAYER_FUSE_OPAQUE_XATTR);
	return dev;
}

static void test_record(void)
{
	struct fx f;
	fx_make(&f, "record");
	struct err e = { 0 };
	_cleanup_close_ int u = open(f.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	is_int(wslayer_writer_of(u), WSLAYER_OVERLAYFS, "no record: the layer is overlayfs's");
	is_int(wslayer_writer_claim(f.dir, WSLAYER_FUSE_OVERLAYFS, &e), 0, "an empty layer is claimed by fuse-overlayfs");
	is_int(wslayer_writer_of(u), WSLAYER_FUSE_OVERLAYFS, "and reads back as fuse-overlayfs's");
	put(f.upper, "made", "x\n");
	is_int(wslayer_writer_claim(f.dir, WSLAYER_FUSE_OVERLAYFS, &e), 0, "twin: its own writer claims it again, written");
	e = (struct err){ 0 };
	is_int(wslayer_writer_claim(f.dir, WSLAYER_OVERLAYFS, &e), -EXDEV,
	       "a layer fuse-overlayfs wrote is refused to overlayfs");
	like(e.msg, "written by fuse-overlayfs", "saying who wrote it (%s)", e.msg);
	is_int(wslayer_writer_of(u), WSLAYER_FUSE_OVERLAYFS, "and the record stands");
	struct fx g;
	fx_make(&g, "record2");
	put(g.upper, "made", "x\n");
	e = (struct err){ 0 };
	is_int(wslayer_writer_claim(g.dir, WSLAYER_FUSE_OVERLAYFS, &e), -EXDEV,
	       "a written layer with no record (overlayfs's) is refused to fuse-overlayfs");
	put(g.dir, WSLAYER_RECORD, "something else\n");
	_cleanup_close_ int gu = open(g.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	is_int(wslayer_writer_of(gu), WSLAYER_OVERLAYFS, "a record naming no writer reads as overlayfs");
}

static void test_entry(void)
{
	struct stat reg = { .st_mode = S_IFREG | 0644 }, dev = { .st_mode = S_IFCHR | 0600, .st_rdev = makedev(0, 0) };
	struct stat other = { .st_mode = S_IFCHR | 0600, .st_rdev = makedev(1, 3) };
	static const struct {
		enum wslayer_writer w;
		const char *name;
		int st;		/* 0 a file, 1 a 0/0 device, 2 another device */
		enum wslayer_kind kind;
		const char *target;
		const char *what;
	} cases[] = {
		{ WSLAYER_FUSE_OVERLAYFS, ".wh.foo", 0, WSLAYER_WHITEOUT, "foo", "fuse-overlayfs: .wh.foo is a whiteout of foo" },
		{ WSLAYER_FUSE_OVERLAYFS, WSLAYER_WH_OPAQUE, 0, WSLAYER_MARK, NULL,
		  "fuse-overlayfs: .wh..wh..opq is its marker, no name of the view" },
		{ WSLAYER_FUSE_OVERLAYFS, ".wh.", 0, WSLAYER_MARK, NULL, "fuse-overlayfs: .wh. alone names nothing" },
		{ WSLAYER_FUSE_OVERLAYFS, ".wh..", 0, WSLAYER_MARK, NULL, "fuse-overlayfs: nor .wh.." },
		{ WSLAYER_FUSE_OVERLAYFS, "foo", 1, WSLAYER_WHITEOUT, "foo", "fuse-overlayfs: a 0/0 device is a whiteout too" },
		{ WSLAYER_OVERLAYFS, "foo", 1, WSLAYER_WHITEOUT, "foo", "overlayfs: a 0/0 device is a whiteout of its name" },
		{ WSLAYER_OVERLAYFS, ".wh.foo", 0, WSLAYER_ENTRY, ".wh.foo", "overlayfs: a file named .wh.foo is that file" },
		{ WSLAYER_OVERLAYFS, WSLAYER_WH_OPAQUE, 0, WSLAYER_ENTRY, WSLAYER_WH_OPAQUE,
		  "overlayfs: .wh..wh..opq is a file" },
		{ WSLAYER_OVERLAYFS, "null", 2, WSLAYER_ENTRY, "null", "a device that is not 0/0 is no whiteout" },
	};
	const struct stat *sts[] = { &reg, &dev, &other };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = NULL;
		enum wslayer_kind k = wslayer_entry(cases[i].w, cases[i].name, sts[cases[i].st], &t);
		ok(k == cases[i].kind && (!cases[i].target || !strcmp(t, cases[i].target)), "%s (kind %d, %s)",
		   cases[i].what, (int)k, t);
	}
	is_str(wslayer_writer_name(WSLAYER_FUSE_OVERLAYFS), "fuse-overlayfs", "the writer's name");
}

/* fuse-overlayfs's layer: read as what the box saw. */
static void test_fuse(void)
{
	struct fx f;
	fx_make(&f, "fuse");
	tree(f.lower);
	struct err e = { 0 };
	is_int(wslayer_writer_claim(f.dir, WSLAYER_FUSE_OVERLAYFS, &e), 0, "the layer is fuse-overlayfs's");
	bool dev = fuse_upper(f.upper);
	_cleanup_close_ int u = open(f.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	is_int(wslayer_lookup(WSLAYER_FUSE_OVERLAYFS, u, "d/b.txt", &st), WSLAYER_WHITEOUT, "lookup: d/b.txt is deleted");
	is_int(wslayer_lookup(WSLAYER_FUSE_OVERLAYFS, u, "d/.wh.b.txt", &st), -ENOENT, "lookup: its marker names nothing");
	is_int(wslayer_lookup(WSLAYER_FUSE_OVERLAYFS, u, "a.txt", &st), WSLAYER_ENTRY, "lookup: a.txt is the box's");
	is_int(wslayer_lookup(WSLAYER_FUSE_OVERLAYFS, u, "d/stay.txt", &st), -ENOENT, "lookup: d/stay.txt is not in the layer");
	ok(wslayer_opaque(WSLAYER_FUSE_OVERLAYFS, u, "keep"), "keep/ (.wh..wh..opq) is opaque");
	ok(wslayer_opaque(WSLAYER_FUSE_OVERLAYFS, u, "xo"), "xo/ (user.fuseoverlayfs.opaque) is opaque");
	ok(!wslayer_opaque(WSLAYER_FUSE_OVERLAYFS, u, "d"), "twin: d/ is not");

	struct ws_changes ch;
	is_int(ws_changes_read(f.lower, f.upper, &ch, &e), 0, "the changes are read");
	const struct ws_change *c;
	ok((c = find(&ch, "a.txt")) && c->kind == WS_MODIFIED, "a.txt: modified");
	ok((c = find(&ch, "new.txt")) && c->kind == WS_ADDED, "new.txt: added");
	ok((c = find(&ch, "d/b.txt")) && c->kind == WS_DELETED, "d/b.txt: deleted (.wh.b.txt)");
	ok(!find(&ch, "d/stay.txt"), "d/stay.txt: no change");
	if (dev)
		ok((c = find(&ch, "gone.txt")) && c->kind == WS_DELETED, "gone.txt: deleted (0/0)");
	else
		printf("ok %d # SKIP mknod 0/0 refused here\n", ++tap_n);
	ok((c = find(&ch, "keep/k1")) && c->kind == WS_DELETED, "keep/k1: deleted (the directory is opaque)");
	ok((c = find(&ch, "keep/k2")) && c->kind == WS_DELETED, "keep/k2: deleted");
	ok((c = find(&ch, "keep/y")) && c->kind == WS_ADDED, "keep/y: added");
	ok((c = find(&ch, "xo/x1")) && c->kind == WS_DELETED, "xo/x1: deleted (opaque by xattr)");
	ok(!any_wh(&ch), "no change names a .wh. entry");

	FILE *pf = tmpfile();
	is_int(pf ? ws_patch(f.lower, f.upper, &ch, pf, &e) : -1, 0, "the patch is made");
	char pb[16384] = "";
	if (pf) {
		rewind(pf);
		pb[fread(pb, 1, sizeof(pb) - 1, pf)] = 0;
		fclose(pf);
	}
	like(pb, "deleted file mode", "the patch deletes files");
	like(pb, "a/d/b.txt", "d/b.txt among them");
	ok(!strstr(pb, ".wh."), "and names no .wh. entry");

	struct wsmerge_manifest *m = NULL;
	is_int(wsmerge_manifest(f.upper, true, &m, &e), 0, "the merge's manifest is read");
	is_int(wsmerge_manifest_kind(m, "d/b.txt"), 'w', "d/b.txt is a whiteout in it");
	is_int(wsmerge_manifest_kind(m, "a.txt"), 'f', "a.txt is a file in it");
	ok(!wsmerge_manifest_kind(m, "d/.wh.b.txt") && !wsmerge_manifest_kind(m, "keep/" WSLAYER_WH_OPAQUE),
	   "and its markers are no entries");
	wsmerge_manifest_free(m);

	is_int(ws_apply(f.lower, f.upper, &ch, &e), 0, "applied to the tree (%s)", e.msg);
	char *a = get(f.lower, "a.txt");
	is_str(a, "new\n", "a.txt has the box's content");
	free(a);
	ok(exists(f.lower, "new.txt"), "new.txt is made");
	ok(!exists(f.lower, "d/b.txt"), "d/b.txt is gone");
	ok(exists(f.lower, "d/stay.txt"), "d/stay.txt stays");
	ok(!exists(f.lower, "d/.wh.b.txt") && !exists(f.lower, "keep/" WSLAYER_WH_OPAQUE), "no marker reaches the tree");
	ok(!exists(f.lower, "keep/k1") && exists(f.lower, "keep/y"), "keep/ is the box's");
	ok(exists(f.lower, "xo") && !exists(f.lower, "xo/x1"), "xo/ is empty, as the box left it");
	ws_changes_free(&ch);
}

/* The same entries in overlayfs's layer (no record): the box made them as
 * files and an xattr of its own; nothing of the tree is deleted. */
static void test_overlayfs_attack(void)
{
	struct fx f;
	fx_make(&f, "attack");
	tree(f.lower);
	fuse_upper(f.upper);
	struct err e = { 0 };
	_cleanup_close_ int u = open(f.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	is_int(wslayer_writer_of(u), WSLAYER_OVERLAYFS, "no record: overlayfs's");
	ok(!wslayer_opaque(WSLAYER_OVERLAYFS, u, "keep"), "keep/ holding .wh..wh..opq is not opaque");
	ok(!wslayer_opaque(WSLAYER_OVERLAYFS, u, "xo"), "xo/ with user.fuseoverlayfs.opaque is not opaque");
	xattr_y(f.upper, "d", "user.overlay.opaque");
	ok(wslayer_opaque(WSLAYER_OVERLAYFS, u, "d"), "twin: overlayfs's own xattr makes d/ opaque");
	char p[PATH_MAX + 8];
	snprintf(p, sizeof(p), "%s/d", f.upper);
	removexattr(p, "user.overlay.opaque");

	struct ws_changes ch;
	is_int(ws_changes_read(f.lower, f.upper, &ch, &e), 0, "the changes are read");
	const struct ws_change *c;
	ok((c = find(&ch, "d/.wh.b.txt")) && c->kind == WS_ADDED, "d/.wh.b.txt: a file the box added");
	ok(!find(&ch, "d/b.txt"), "d/b.txt: not deleted");
	ok((c = find(&ch, "keep/" WSLAYER_WH_OPAQUE)) && c->kind == WS_ADDED, "keep/.wh..wh..opq: a file added");
	ok(!find(&ch, "keep/k1") && !find(&ch, "xo/x1"), "nothing below keep/ or xo/ is deleted");
	is_int(ws_apply(f.lower, f.upper, &ch, &e), 0, "applied to the tree (%s)", e.msg);
	ok(exists(f.lower, "d/b.txt") && exists(f.lower, "d/.wh.b.txt"), "d/b.txt is still there, beside the box's .wh.b.txt");
	ok(exists(f.lower, "keep/k1") && exists(f.lower, "keep/k2") && exists(f.lower, "xo/x1"),
	   "and every file of keep/ and xo/");
	ws_changes_free(&ch);
}

/* A checkpoint of fuse-overlayfs's layer, and a rewind to it, give back
 * its whiteouts and opaque directories in its own forms. */
static void test_checkpoint(void)
{
	struct fx f;
	fx_make(&f, "ckpt");
	tree(f.lower);
	struct err e = { 0 };
	wslayer_writer_claim(f.dir, WSLAYER_FUSE_OVERLAYFS, &e);
	fuse_upper(f.upper);
	char ck[PATH_MAX + 8];
	snprintf(ck, sizeof(ck), "%s/ckpt.ckpt", root);
	is_int(checkpoint_take(ck, f.upper, 1, NULL, &e), 0, "a checkpoint of the layer is taken (%s)", e.msg);
	sh("rm -rf '%s'/* && touch '%s/later'", f.upper, f.upper);
	is_int(checkpoint_restore(ck, 1, f.upper, NULL, &e), 0, "and restored (%s)", e.msg);
	_cleanup_close_ int u = open(f.upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	is_int(wslayer_lookup(WSLAYER_FUSE_OVERLAYFS, u, "d/b.txt", &st), WSLAYER_WHITEOUT, "d/b.txt is deleted again");
	ok(wslayer_opaque(WSLAYER_FUSE_OVERLAYFS, u, "keep"), "keep/ is opaque again (its marker)");
	ok(wslayer_opaque(WSLAYER_FUSE_OVERLAYFS, u, "xo"), "xo/ is opaque again (user.fuseoverlayfs.opaque kept)");
	ok(!exists(f.upper, "later"), "what came after is gone");
	checkpoint_drop_after(ck, 0);
}

int main(void)
{
	if (!mkdtemp(root)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 77;
	}
	test_record();
	test_entry();
	test_fuse();
	test_overlayfs_attack();
	test_checkpoint();
	sh("rm -rf '%s'", root);
	return tap_done();
}
