/* image/tar.c, image/stream.c and image/unpack.c: the tar formats layers come
 * in (ustar, pax, GNU long names, base-256 numbers), gzip and zstd streams
 * and their digests, and layers applied to a tree: whiteouts, opaque
 * directories, hard links to a lower layer, links out of the tree written
 * through (and landing inside it), and every refusal naming the layer and
 * the entry, beside its legitimate twin. Archives are written here, block
 * by block. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "base/cleanup.h"
#include "base/hash.h"
#include "image/stream.h"
#include "image/tar.h"
#include "image/unpack.h"
#include "tap.h"

/* A tar archive being written into memory. */
struct tw {
	char *b;
	size_t n, cap;
};

static void tw_put(struct tw *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2 + 4096;
		w->b = realloc(w->b, w->cap);
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void tw_pad(struct tw *w)
{
	static const char zero[512];
	if (w->n % 512)
		tw_put(w, zero, 512 - w->n % 512);
}

/* One header: name in ustar's name field (prefix: its prefix field). */
static void tw_hdr(struct tw *w, const char *name, const char *prefix, char type, unsigned mode, uint64_t size,
		   const char *link, bool base256)
{
	unsigned char h[512] = { 0 };
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", mode);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	if (base256) {
		h[124] = 0x80;
		for (int i = 0; i < 8; i++)
			h[135 - i] = (unsigned char)(size >> (8 * i));
	} else {
		snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	}
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = (unsigned char)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	if (prefix)
		snprintf((char *)h + 345, 155, "%s", prefix);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	tw_put(w, h, 512);
}

static void tw_file(struct tw *w, const char *name, unsigned mode, const char *data)
{
	tw_hdr(w, name, NULL, '0', mode, strlen(data), NULL, false);
	tw_put(w, data, strlen(data));
	tw_pad(w);
}

static void tw_entry(struct tw *w, const char *name, char type, unsigned mode, const char *link)
{
	tw_hdr(w, name, NULL, type, mode, 0, link, false);
}

static void tw_pax(struct tw *w, const char *key, const char *val)
{
	char rec[8192];
	size_t l = strlen(key) + strlen(val) + 3, n = l;
	for (;;) {
		int k = snprintf(rec, sizeof(rec), "%zu %s=%s\n", n, key, val);
		if ((size_t)k == n)
			break;
		n = (size_t)k;
	}
	tw_hdr(w, "PaxHeaders/x", NULL, 'x', 0644, n, NULL, false);
	tw_put(w, rec, n);
	tw_pad(w);
}

static void tw_end(struct tw *w)
{
	static const char zero[1024];
	tw_put(w, zero, 1024);
}

/* Reading from memory. */
struct mem {
	const char *p;
	size_t n, off;
};

static ssize_t mem_read(void *ud, void *buf, size_t n, struct err *e)
{
	struct mem *m = ud;
	if (n > m->n - m->off)
		n = m->n - m->off;
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (ssize_t)n;
}

static char tmpl[] = "/tmp/ward-imagetar-XXXXXX";
static int case_n;

/* A fresh empty tree: its fd, its path in path. */
static int tree(char *path, size_t n)
{
	snprintf(path, n, "%s/t%d", tmpl, ++case_n);
	mkdir(path, 0755);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Apply layers (tw each) to a fresh tree: 0 or the error, e's message. */
static int apply(char *path, size_t pn, struct tw *layers, size_t nl, const struct image_limits *lim, struct err *e,
		 struct image_unpack_stats *st)
{
	int fd = tree(path, pn);
	struct image_unpack *u = NULL;
	int r = image_unpack_new(fd, lim, geteuid() == 0, NULL, &u, e);
	for (size_t i = 0; r >= 0 && i < nl; i++) {
		char what[32];
		snprintf(what, sizeof(what), "layer %zu", i + 1);
		struct mem m = { layers[i].b, layers[i].n, 0 };
		r = image_unpack_layer(u, what, mem_read, &m, e);
	}
	if (r >= 0)
		r = image_unpack_finish(u, e);
	if (st && u)
		image_unpack_stats(u, st);
	image_unpack_free(u);
	close(fd);
	return r;
}

static bool exists(const char *dir, const char *rel)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

static char *slurp(const char *dir, const char *rel)
{
	static char buf[256];
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static void test_reader(void)
{
	struct tw w = { 0 };
	tw_hdr(&w, "name", "a/long/prefix", '0', 0644, 0, NULL, false);
	tw_pax(&w, "path", "pax/path/that/is/long");
	tw_pax(&w, "linkpath", "pax/target");
	tw_entry(&w, "short", '2', 0777, "short-target");
	const char gnu[] = "gnu/long/name/of/the/entry";
	tw_hdr(&w, "././@LongLink", NULL, 'L', 0644, sizeof(gnu), NULL, false);
	tw_put(&w, gnu, sizeof(gnu));
	tw_pad(&w);
	tw_hdr(&w, "trunc", NULL, '0', 0600, 3, NULL, true);
	tw_put(&w, "abc", 3);
	tw_pad(&w);
	tw_end(&w);
	struct mem m = { w.b, w.n, 0 };
	struct image_tar t;
	image_tar_init(&t, mem_read, &m);
	const struct image_tar_entry *en;
	struct err e = { 0 };
	is_int(image_tar_next(&t, &en, &e), 1, "ustar: an entry");
	is_str(en->path, "a/long/prefix/name", "ustar: its prefix and name joined");
	is_int(image_tar_next(&t, &en, &e), 1, "pax: an entry");
	is_str(en->path, "pax/path/that/is/long", "pax: path replaces the header's name");
	is_str(en->link, "pax/target", "pax: linkpath replaces the header's link");
	ok(en->type == IMAGE_TAR_SYMLINK, "pax: the header's type");
	is_int(image_tar_next(&t, &en, &e), 1, "GNU long name: an entry");
	is_str(en->path, gnu, "GNU long name ('L'): the name");
	is_int(en->size, 3, "base-256 size (GNU)");
	char buf[8];
	is_int(image_tar_data(&t, buf, sizeof(buf), &e), 3, "its content");
	is_int(image_tar_next(&t, &en, &e), 0, "the end: zero blocks");
	image_tar_free(&t);

	/* A damaged header, a sparse file, a cut archive: refused. */
	struct tw b = { 0 };
	tw_file(&b, "f", 0644, "x");
	b.b[148] ^= 1;
	m = (struct mem){ b.b, b.n, 0 };
	image_tar_init(&t, mem_read, &m);
	ok(image_tar_next(&t, &en, &e) < 0 && strstr(e.msg, "not a tar archive") && strstr(e.msg, "checksum"),
	   "a wrong checksum in the first header: not a tar archive (%s)", e.msg);
	image_tar_free(&t);
	struct tw s = { 0 };
	tw_entry(&s, "sparse", 'S', 0644, NULL);
	m = (struct mem){ s.b, s.n, 0 };
	image_tar_init(&t, mem_read, &m);
	ok(image_tar_next(&t, &en, &e) == -EOPNOTSUPP && strstr(e.msg, "GNU sparse"), "a GNU sparse file is refused (%s)",
	   e.msg);
	image_tar_free(&t);
	struct tw c = { 0 };
	tw_hdr(&c, "cut", NULL, '0', 0644, 5000, NULL, false);
	tw_put(&c, "abc", 3);
	m = (struct mem){ c.b, c.n, 0 };
	image_tar_init(&t, mem_read, &m);
	ok(image_tar_next(&t, &en, &e) == 1 && image_tar_next(&t, &en, &e) == -EPIPE, "an archive cut inside an entry: -EPIPE");
	image_tar_free(&t);
	struct tw nz = { 0 };
	tw_file(&nz, "no-end", 0644, "y");
	m = (struct mem){ nz.b, nz.n, 0 };
	image_tar_init(&t, mem_read, &m);
	ok(image_tar_next(&t, &en, &e) == 1 && image_tar_next(&t, &en, &e) == 0,
	   "an archive that ends after an entry without zero blocks: its end (the digest checks the rest)");
	image_tar_free(&t);
	free(w.b);
	free(b.b);
	free(s.b);
	free(c.b);
	free(nz.b);
}

static void test_layers(void)
{
	char p[4096];
	struct err e = { 0 };
	struct image_unpack_stats st;
	/* Three layers: whiteout, opaque directory (its own layer's entries
	 * stay, whatever their order), hard link to a lower file. */
	struct tw l[3] = { 0 };
	tw_entry(&l[0], "./usr/", '5', 0755, NULL);
	tw_file(&l[0], "./usr/gone", 0644, "gone\n");
	tw_file(&l[0], "./usr/old/a", 0644, "a\n");
	tw_file(&l[0], "etc/os-release", 0644, "ID=old\n");
	tw_file(&l[0], "bin/suid", 04755, "#!/bin/sh\n");
	tw_file(&l[0], "dir-to-file/x", 0644, "x");
	tw_file(&l[1], "usr/old/new-before", 0644, "b\n");
	tw_file(&l[1], "usr/old/.wh..wh..opq", 0644, "");
	tw_file(&l[1], "usr/old/new-after", 0644, "c\n");
	tw_file(&l[1], "usr/.wh.gone", 0644, "");
	tw_file(&l[1], "etc/os-release", 0644, "ID=new\n");
	tw_file(&l[1], "dir-to-file", 0600, "now a file");
	tw_entry(&l[2], "etc/hard", '1', 0644, "etc/os-release");
	tw_entry(&l[2], "ro", '5', 0555, NULL);
	tw_file(&l[2], "ro/inside", 0444, "in a 0555 directory");
	for (int i = 0; i < 3; i++)
		tw_end(&l[i]);
	is_int(apply(p, sizeof(p), l, 3, NULL, &e, &st), 0, "three layers applied (%s)", e.msg);
	ok(!exists(p, "usr/gone"), "a whiteout removes what a lower layer made");
	ok(!exists(p, "usr/old/a") && exists(p, "usr/old/new-before") && exists(p, "usr/old/new-after"),
	   "an opaque directory: the lower layer's entries go, its own layer's stay (before and after the marker)");
	is_str(slurp(p, "etc/os-release"), "ID=new\n", "a later layer's file replaces a lower one's");
	struct stat a, b;
	char pa[4200], pb[4200];
	snprintf(pa, sizeof(pa), "%s/etc/hard", p);
	snprintf(pb, sizeof(pb), "%s/etc/os-release", p);
	ok(stat(pa, &a) == 0 && stat(pb, &b) == 0 && a.st_ino == b.st_ino, "a hard link to a lower layer's file is that file");
	snprintf(pa, sizeof(pa), "%s/bin/suid", p);
	ok(stat(pa, &a) == 0 && (a.st_mode & 07777) == 0755, "setuid cleared: 04755 became 0755");
	is_int(st.setid, 1, "and counted");
	is_str(slurp(p, "dir-to-file"), "now a file", "a file replaces a directory a lower layer made");
	snprintf(pa, sizeof(pa), "%s/ro", p);
	ok(stat(pa, &a) == 0 && (a.st_mode & 07777) == 0555 && exists(p, "ro/inside"),
	   "a 0555 directory gets its mode at the end, its file made inside it");
	for (int i = 0; i < 3; i++)
		free(l[i].b);

	/* Links out of the tree, then entries through them. */
	struct tw k[2] = { 0 };
	tw_entry(&k[0], "etc", '5', 0755, NULL);
	tw_entry(&k[0], "abs", '2', 0777, "/etc");
	tw_entry(&k[0], "dots", '2', 0777, "../../../../../../../etc");
	tw_file(&k[1], "abs/ward-unit-abs", 0644, "in\n");
	tw_file(&k[1], "dots/ward-unit-dots", 0644, "in\n");
	tw_end(&k[0]);
	tw_end(&k[1]);
	is_int(apply(p, sizeof(p), k, 2, NULL, &e, &st), 0, "links to /etc, then files through them: applied (%s)", e.msg);
	ok(exists(p, "etc/ward-unit-abs") && exists(p, "etc/ward-unit-dots"), "the files land in the tree's /etc");
	ok(access("/etc/ward-unit-abs", F_OK) < 0 && access("/etc/ward-unit-dots", F_OK) < 0, "and never in the host's");
	free(k[0].b);
	free(k[1].b);

	/* Refusals, each naming the layer and the entry; and their twins. */
	static const struct {
		const char *name;
		char type;
		const char *link, *want;
	} bad[] = {
		{ "../../etc/x", '0', NULL, "layer 1: entry \"../../etc/x\": a \"..\" component" },
		{ "a/../../x", '0', NULL, "entry \"a/../../x\": a \"..\" component" },
		{ "hl", '1', "../../etc/passwd", "entry \"hl\": a hard link to \"../../etc/passwd\", which is outside the tree" },
		{ "hl2", '1', "missing", "entry \"hl2\": a hard link to \"missing\", which no layer made" },
		{ "hl3", '1', "etc", "entry \"hl3\": a hard link to a directory" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tw t = { 0 };
		tw_entry(&t, "etc", '5', 0755, NULL);
		if (bad[i].type == '0')
			tw_file(&t, bad[i].name, 0644, "x");
		else
			tw_entry(&t, bad[i].name, bad[i].type, 0644, bad[i].link);
		tw_end(&t);
		e = (struct err){ 0 };
		ok(apply(p, sizeof(p), &t, 1, NULL, &e, NULL) < 0 && strstr(e.msg, bad[i].want), "refused: %s", e.msg);
		free(t.b);
	}
	struct tw twin = { 0 };
	tw_file(&twin, "/etc/abs", 0644, "x");
	tw_file(&twin, "./etc/./dot", 0644, "x");
	tw_entry(&twin, "etc/hl", '1', 0644, "/etc/abs");
	tw_end(&twin);
	is_int(apply(p, sizeof(p), &twin, 1, NULL, &e, NULL), 0, "the twins: an absolute name, ./ components, a hard link by an absolute name (%s)", e.msg);
	ok(exists(p, "etc/abs") && exists(p, "etc/dot") && exists(p, "etc/hl"), "are the tree's own paths");
	free(twin.b);

	/* Device nodes and FIFOs are not made. */
	struct tw d = { 0 };
	tw_entry(&d, "dev/null", '3', 0666, NULL);
	tw_entry(&d, "dev/sda", '4', 0660, NULL);
	tw_entry(&d, "fifo", '6', 0644, NULL);
	tw_file(&d, "beside", 0644, "x");
	tw_end(&d);
	is_int(apply(p, sizeof(p), &d, 1, NULL, &e, &st), 0, "device nodes and a FIFO: the layer is applied");
	ok(!exists(p, "dev/null") && !exists(p, "dev/sda") && !exists(p, "fifo") && exists(p, "beside"),
	   "none of them is made; the file beside them is");
	ok(st.devices == 2 && st.fifos == 1, "and they are counted");
	free(d.b);

	/* The limits: entries and bytes. */
	struct tw many = { 0 };
	for (int i = 0; i < 20; i++) {
		char n[16];
		snprintf(n, sizeof(n), "f%02d", i);
		tw_file(&many, n, 0644, "");
	}
	tw_end(&many);
	struct image_limits lim = { .max_files = 19, .max_bytes = 1 << 20 };
	ok(apply(p, sizeof(p), &many, 1, &lim, &e, NULL) == -EFBIG && strstr(e.msg, "entry \"f19\": more than 19 entries"),
	   "the 20th entry over a limit of 19 is refused (%s)", e.msg);
	lim.max_files = 20;
	is_int(apply(p, sizeof(p), &many, 1, &lim, &e, NULL), 0, "the twin: 20 entries within 20");
	free(many.b);
	struct tw big = { 0 };
	tw_hdr(&big, "huge", NULL, '0', 0644, 1ULL << 40, NULL, true);
	tw_end(&big);
	ok(apply(p, sizeof(p), &big, 1, NULL, &e, NULL) == -EFBIG && strstr(e.msg, "entry \"huge\": 1099511627776 bytes"),
	   "a TiB entry is refused at its header, before a byte is written (%s)", e.msg);
	free(big.b);
}

/* A stream of bytes compressed, its digests. */
static void test_stream(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/stream", tmpl);
	struct err e = { 0 };
	/* Two gzip members, one after the other (pigz, cat a.gz b.gz). */
	const char *parts[] = { "hello ", "world" };
	FILE *f = fopen(path, "w");
	for (int i = 0; i < 2; i++) {
		unsigned char out[256];
		z_stream z = { 0 };
		deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
		z.next_in = (unsigned char *)parts[i];
		z.avail_in = (uInt)strlen(parts[i]);
		z.next_out = out;
		z.avail_out = sizeof(out);
		deflate(&z, Z_FINISH);
		fwrite(out, 1, sizeof(out) - z.avail_out, f);
		deflateEnd(&z);
	}
	fclose(f);
	int fd = open(path, O_RDONLY);
	struct image_stream *s = NULL;
	char buf[64] = { 0 }, dg[IMAGE_DIGEST_MAX], diff[IMAGE_DIGEST_MAX];
	is_int(image_stream_open(fd, IMAGE_MAX_RATIO, &s, &e), 0, "a gzip stream opens");
	is_str(image_stream_kind(s), "gzip", "known by its first bytes");
	size_t got = 0;
	ssize_t k;
	while ((k = image_stream_read(s, buf + got, sizeof(buf) - 1 - got, &e)) > 0)
		got += (size_t)k;
	is_str(buf, "hello world", "two members read as one stream");
	is_int(image_stream_end(s, dg, diff, &e), 0, "its end");
	char hex[HASH_SHA256_HEX];
	hash_sha256_hex("hello world", 11, hex);
	ok(!strcmp(diff + 7, hex), "the diff_id is the SHA-256 of what it decompressed to");
	image_stream_free(s);
	close(fd);

	/* A zstd bomb: 200 MiB of zeros in a few KiB. */
	size_t n = 200u << 20;
	char *zeros = calloc(1, n);
	size_t cap = ZSTD_compressBound(n);
	char *z = malloc(cap);
	size_t zn = ZSTD_compress(z, cap, zeros, n, 3);
	f = fopen(path, "w");
	fwrite(z, 1, zn, f);
	fclose(f);
	fd = open(path, O_RDONLY);
	is_int(image_stream_open(fd, IMAGE_MAX_RATIO, &s, &e), 0, "a zstd stream opens");
	is_str(image_stream_kind(s), "zstd", "known by its magic");
	while ((k = image_stream_read(s, zeros, 1 << 20, &e)) > 0)
		;
	ok(k == -EFBIG && strstr(e.msg, "expands more than 1000 times its compressed size"), "a zstd bomb is refused: %s",
	   e.msg);
	ok(image_stream_out(s) < (100u << 20), "early: before 100 MiB came out (%llu)", (unsigned long long)image_stream_out(s));
	image_stream_free(s);
	close(fd);
	/* The twin: the same stream with no ratio watched reads whole. */
	fd = open(path, O_RDONLY);
	image_stream_open(fd, 0, &s, &e);
	uint64_t total = 0;
	while ((k = image_stream_read(s, zeros, 1 << 20, &e)) > 0)
		total += (uint64_t)k;
	ok(k == 0 && total == n, "unwatched, the same stream reads its 200 MiB");
	image_stream_free(s);
	close(fd);
	/* A gzip stream cut short. */
	f = fopen(path, "w");
	unsigned char out[64];
	z_stream zz = { 0 };
	deflateInit2(&zz, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY);
	zz.next_in = (unsigned char *)zeros;
	zz.avail_in = 100000;
	zz.next_out = out;
	zz.avail_out = sizeof(out);
	deflate(&zz, Z_NO_FLUSH);
	deflate(&zz, Z_FULL_FLUSH);
	fwrite(out, 1, sizeof(out) - zz.avail_out, f);
	deflateEnd(&zz);
	fclose(f);
	fd = open(path, O_RDONLY);
	image_stream_open(fd, IMAGE_MAX_RATIO, &s, &e);
	while ((k = image_stream_read(s, zeros, 1 << 20, &e)) > 0)
		;
	ok(k == -EPIPE && strstr(e.msg, "cut short"), "a gzip stream cut short: -EPIPE (%s)", e.msg);
	image_stream_free(s);
	close(fd);
	free(zeros);
	free(z);
}

int main(void)
{
	if (!mkdtemp(tmpl))
		return 99;
	test_reader();
	test_layers();
	test_stream();
	image_unpack_rm(AT_FDCWD, tmpl);
	return tap_done();
}
